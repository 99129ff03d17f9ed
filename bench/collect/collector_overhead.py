#!/usr/bin/env python3
"""Overhead of the collector, in paired whole-command runs.

For each load the program runs alone (A) and traced (B: this build's `teller run`; C, when
--before names another build: that build's), in turn A B C A B C ..., so that drift in
the machine's speed hits all of them; the figures to quote are the medians of the
per-run ratios B/A (C/A), and the median per-run differences divided by the ranges the
program recorded (ns per push+pop pair inside the real program). nvtx_heavy is
calibrated once per load (its first, untimed run) and every run then does that same work
(its iters_per_us argument), so a busy moment during one run's calibration cannot change
how much work that run does.

Loads:
  rate-10k, rate-100k, rate-1m  bench/nvtx_heavy with per-op work sized for about 10,000,
                                100,000 and 1,000,000 ranges/s
  threads-1000                  1,000 threads alive at once, 10 ranges each
                                (tests/collect/recorder_workload threads 1000 10)
  startup                       one range, injection loaded straight into the program
                                (no launcher): the fixed cost of starting to record
  launch                        /bin/true under `teller run` against /bin/true alone: the
                                launcher's own fixed cost (trace directory, manifest,
                                output capture, its own exec and loading)

Usage: bench/collect/collector_overhead.py [--build build] [--before OTHER_BUILD]
                                            [--runs 11] [--loads rate-10k,...]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# nvtx_heavy STEPS OP_US: ranges/s is about 1e6 / OP_US (each op range holds OP_US of
# work; layers and steps add 1/8 + 1/256 more ranges).
LOADS = {
    "rate-10k": ("heavy", ["60", "100"], 1.0),
    "rate-100k": ("heavy", ["600", "10"], 1.0),
    "rate-1m": ("heavy", ["3000", "0.6"], 1.0),
    "threads-1000": ("threads", ["threads", "1000", "10"], 1.0),
    "startup": ("startup", ["deep", "1"], 1.0),
    "launch": ("launch", ["/bin/true"], 1.0),
}


def run(cmd, env, out_path=None):
    """Runs cmd; returns (wall seconds, peak RSS KiB of the largest process, stdout)."""
    start = time.monotonic()
    with open(out_path or os.devnull, "w") as out:
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    if status != 0:
        sys.exit(f"{cmd[0]} failed with status {status}")
    return wall, usage.ru_maxrss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--before", default="")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--loads", default=",".join(LOADS))
    args = ap.parse_args()
    heavy = os.path.join(args.build, "bin", "nvtx_heavy")
    workload = os.path.join(args.build, "bin", "recorder_workload")
    tmp = tempfile.mkdtemp(prefix="teller-overhead-")
    builds = [("after", args.build)] + ([("before", args.before)] if args.before else [])
    try:
        for load in args.loads.split(","):
            kind, load_args, _ = LOADS[load]
            if kind == "heavy":
                prog = [heavy] + load_args
            elif kind == "launch":
                prog = list(load_args)
            else:
                prog = [workload] + load_args
            base_env = dict(os.environ)
            for k in ("TELLER_TRACE_DIR", "NVTX_INJECTION64_PATH"):
                base_env.pop(k, None)
            # The load it generates, stated rather than assumed.
            rate_line = ""
            if kind == "heavy":
                run(prog, base_env, os.path.join(tmp, "load.txt"))
                rate_line = open(os.path.join(tmp, "load.txt")).read().strip()
                prog = prog + [rate_line.split()[-1]]  # the calibration, fixed from here on
            ranges = None
            if kind == "heavy":
                ranges = int(rate_line.split()[1])
            elif kind == "threads":
                ranges = 1000 * 10
            elif kind == "startup":
                ranges = 1
            walls = {"plain": []}
            rss = {"plain": []}
            for name, _ in builds:
                walls[name] = []
                rss[name] = []
            for i in range(args.runs + 1):  # the first round is a warm-up
                w, m = run(prog, base_env)
                if i:
                    walls["plain"].append(w)
                    rss["plain"].append(m)
                for name, build in builds:
                    out = os.path.join(tmp, f"{name}{i}")
                    if kind == "startup":
                        env = dict(base_env, TELLER_TRACE_DIR=out,
                                   NVTX_INJECTION64_PATH=os.path.join(build, "lib",
                                                                      "libteller_inject.so"))
                        os.makedirs(out)
                        cmd = prog
                    else:
                        env = base_env
                        cmd = [os.path.join(build, "bin", "teller"), "run", "--out", out, "--"] + prog
                    w, m = run(cmd, env)
                    shutil.rmtree(out, ignore_errors=True)
                    if i:
                        walls[name].append(w)
                        rss[name].append(m)
            print(f"== {load}: {' '.join(os.path.basename(p) for p in prog[:1])} {' '.join(load_args)}")
            if rate_line:
                print(f"   {rate_line}")
            a = walls["plain"]
            print(f"   plain          wall s median {statistics.median(a):.4f} "
                  f"(min {min(a):.4f} max {max(a):.4f})  peak RSS median {statistics.median(rss['plain'])} KiB")
            for name, _ in builds:
                b = walls[name]
                ratios = [y / x for x, y in zip(a, b)]
                diffs = [y - x for x, y in zip(a, b)]
                print(f"   {name:<6} traced  wall s median {statistics.median(b):.4f} "
                      f"(min {min(b):.4f} max {max(b):.4f})  peak RSS median {statistics.median(rss[name])} KiB")
                print(f"   {name:<6} ratio/plain median {statistics.median(ratios):.4f} "
                      f"({100 * (statistics.median(ratios) - 1):+.2f}%), added wall median "
                      f"{1000 * statistics.median(diffs):.2f} ms"
                      + (f", {1e9 * statistics.median(diffs) / ranges:.0f} ns per range"
                         if kind == "heavy" else ""))
            sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
