"""Traced program for the multiprocessing tests: the parent and each child record a
known number of mp.work ranges (mp_hooks/mp_work.py), children started with each
start method of a plan and ending normally or with os._exit.

usage: mp_program.py --plan METHOD:END[,METHOD:END...] --children N --ranges K
  METHOD: fork, spawn or forkserver; END: normal or _exit. Child tags: METHOD-END-C.
"""
import argparse
import multiprocessing
import sys

import mp_work


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", required=True)
    ap.add_argument("--children", type=int, required=True)
    ap.add_argument("--ranges", type=int, required=True)
    args = ap.parse_args()
    for i in range(args.ranges):
        mp_work.work("parent", i)
    bad = 0
    for item in args.plan.split(","):
        method, end = item.split(":")
        ctx = multiprocessing.get_context(method)
        procs = [ctx.Process(target=mp_work.child, args=("%s-%s-%d" % (method, end, c),
                                                          args.ranges, end))
                 for c in range(args.children)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
            bad += p.exitcode != 0
        print("%s children done" % item)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
