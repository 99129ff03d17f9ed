# The program's own sitecustomize, later on PYTHONPATH than Teller's: it must still run.
import os
import sys

os.environ["TELLER_TEST_CHAINED_SITE"] = "ran"
sys.stdout.write("chained sitecustomize ran\n")
