#!/usr/bin/env python3
"""tools/check_includes.py on small trees: a clean one passes, each kind of violation is
reported with its file and line."""
import os
import subprocess
import sys
import tempfile

CHECKER = sys.argv[1]


def run(files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
        return p.returncode, p.stdout.splitlines()


def expect(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


clean = {
    "src/core/a.cc": '#include "teller/core/a.h"\n',
    "src/reconstruct/r.cc": '#include "teller/ingest/ingest.h"\n#include "src/reconstruct/x.h"\n',
    "src/cli/main.cc": '#include "teller/eval/evaluate.h"\n#include "src/cli/commands.h"\n',
    "include/teller/diagnose/d.h": '#include "teller/localize/localize.h"\n',
}
rc, out = run(clean)
expect(rc == 0 and out == [], f"clean tree: rc {rc}, {out}")

bad = dict(clean)
bad["src/core/b.cc"] = '// a comment\n#include "teller/diagnose/diagnose.h"\n'
bad["src/ingest/i.cc"] = '#include "src/reconstruct/x.h"\n'
bad["include/teller/slice/s.h"] = '#include "src/slice/internal.h"\n'
bad["src/dataset/d.cc"] = '#include "teller/sim/sim.h"\n'
rc, out = run(bad)
expect(rc == 1, f"violations: rc {rc}")
expect(len(out) == 4, f"four violations, got {out}")
joined = "\n".join(out)
for needle in ("src/core/b.cc:2: stage 'core' may not include 'diagnose'",
               "src/ingest/i.cc:1: includes src/reconstruct/x.h, private to stage 'reconstruct'",
               "include/teller/slice/s.h:1: public header includes private src/slice/internal.h",
               "src/dataset/d.cc:1: stage 'dataset' may not include 'sim'"):
    expect(needle in joined, f"missing '{needle}' in {out}")

rc, out = run({"src/newstage/n.cc": "int x;\n"})
expect(rc == 1 and "no entry" in out[0], f"unknown stage: {out}")
print("ok")
