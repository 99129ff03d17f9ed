"""A program that fails the way a distributed PyTorch job does, for the end-to-end test of
the failure findings (diagnose_failures_e2e_test.cc): it logs a CUDA out-of-memory error,
then the NCCL watchdog's timeout of a collective (c10d's format), then exits with status 1.
No GPU and no torch are needed: only the lines matter."""
import sys
import time


def log(line):
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


print("worker 0: loading model", flush=True)
log("ERROR 05-23 09:31:47 [worker.py:88] torch.OutOfMemoryError: CUDA out of memory. "
    "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which "
    "1.02 GiB is free.")
# Capture times order the lines: keep the second one clearly later.
time.sleep(0.05)
log("[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, "
    "Timeout(ms)=600000) ran for 600013 milliseconds before timing out.")
sys.exit(1)
