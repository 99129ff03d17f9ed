#!/usr/bin/python3
"""multiprocessing children under `teller run`: every range each child recorded must be
in the trace, whatever its start method and however it ends.

usage: multiprocessing_test.py --teller PATH --case normal|exit
  normal  spawn children that return normally (interpreter shutdown, atexit)
  exit    children that end in os._exit: fork and forkserver (multiprocessing itself
          ends those children with os._exit) and spawn children calling os._exit

The parent and each child call the hooked mp_work.work(tag, i) for i = 0..K-1
(mp_program.py), so the trace must hold, per tag, exactly K closed mp.work ranges with
i = 0..K-1, all in one process, a different one per child.
"""
import argparse
import collections
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import python_hooks_test as h  # noqa: E402  (run_traced, dump, build_ranges, check)

CHILDREN = 2
RANGES = 20
PLANS = {
    "normal": ["spawn:normal"],
    "exit": ["fork:normal", "forkserver:normal", "spawn:_exit"],
}
check = h.check


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--teller", required=True)
    ap.add_argument("--case", required=True, choices=sorted(PLANS))
    args = ap.parse_args()
    plan = PLANS[args.case]
    tmp = tempfile.mkdtemp(prefix="teller-mp-")
    try:
        out = os.path.join(tmp, "trace")
        hooks = os.path.join(HERE, "mp_hooks")
        p = h.run_traced(args, "auto", {"TELLER_HOOK_SPECS": os.path.join(hooks, "mp_specs.json"),
                                        "_extra_pp": [hooks]},
                         out, program="mp_program.py", fake=None,
                         prog_args=["--plan", ",".join(plan), "--children", str(CHILDREN),
                                    "--ranges", str(RANGES)])
        check(p.returncode == 0, "the program and every child exit 0 (got %d)" % p.returncode)
        for item in plan:
            check("%s children done" % item in p.stdout, "%s children ran" % item)
        err = [l for l in p.stderr.splitlines() if l.startswith("teller:")]
        check(not err, "no teller lines, not even from multiprocessing's servers (got %r)" % err)

        ranges, _, unmatched, open_left = h.build_ranges(h.dump(args, out))
        check(unmatched == 0 and open_left == 0,
              "every push has its pop (unmatched %d, open %d)" % (unmatched, open_left))
        by_tag = collections.defaultdict(list)
        for r in ranges:
            name, fields = h.parse(r.name)
            if name == "mp.work":
                by_tag[fields.get("tag")].append((r.pid, int(fields.get("i", "-1"))))
        tags = ["parent"] + ["%s-%s-%d" % (tuple(item.split(":")) + (c,))
                             for item in plan for c in range(CHILDREN)]
        check(sorted(by_tag) == sorted(tags), "ranges from exactly the parent and each child "
              "(got %r)" % sorted(by_tag))
        pids = {}
        for tag in tags:
            got = by_tag.get(tag, [])
            check(sorted(i for _, i in got) == list(range(RANGES)),
                  "%s: all %d ranges, i = 0..%d (got %d)" % (tag, RANGES, RANGES - 1, len(got)))
            procs = set(pid for pid, _ in got)
            check(len(procs) == 1, "%s: recorded by one process (got %d)" % (tag, len(procs)))
            if len(procs) == 1:
                pids[tag] = procs.pop()
        check(len(set(pids.values())) == len(pids), "a process of its own for each child")
    finally:
        h.keep_or_remove(tmp)
    return h.verdict()


if __name__ == "__main__":
    sys.exit(main())
