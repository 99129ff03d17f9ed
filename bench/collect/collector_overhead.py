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
                                100,000 and 1,000,000 ranges/s; each op's arithmetic
                                continues from the previous op's result (mode chain)
  rate-100k-indep, rate-1m-indep
                                the same work with every op starting afresh (mode
                                independent): untraced, the processor overlaps consecutive
                                ops, which any clock read between them prevents; the worst
                                case for a tracer (bench/nvtx_heavy.cc)
  torch-model                   bench/collect/torch_nvtx_model: a small libtorch transformer
                                generating tokens on the CPU with a range per module call
                                (4,500 steps, about 90,000 ranges/s); built when libtorch is
  storm-5us, storm-20us          a SIGALRM every 10 us whose handler records two ranges,
                                beside a main loop of three nested ranges around 5 or 20 us
                                of work, for 1 s (recorder_workload sigalrm 10 1000 WORK):
                                the program's speed (its loops) traced over plain
  threads-1000                  1,000 threads alive at once, 10 ranges each
                                (tests/collect/recorder_workload threads 1000 10)
  startup                       one range, injection loaded straight into the program
                                (no launcher): the fixed cost of starting to record
  launch                        /bin/true under `teller run` against /bin/true alone: the
                                launcher's own fixed cost (trace directory, manifest,
                                output capture, its own exec and loading)

The nvtx_heavy and torch-model loads also run under bench/nvtx_clock_floor.cc ("floor": an NVTX tool that
only reads the TSC at each push and pop, as the recorder does), and report, besides wall
time, the recording thread's processor time over plain per range (medians of per-run
differences, from the program's own figures, so the launcher is not in them): floor is
what any tracer that timestamps every event pays, traced minus floor is the recorder's
own share.

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

# nvtx_heavy STEPS OP_US: ranges/s is about 1.13e6 / OP_US in mode chain (each op range
# holds OP_US of work; layers and steps add 1/8 + 1/256 more ranges).
LOADS = {
    "rate-10k": ("heavy", ["60", "100"], "chain"),
    "rate-100k": ("heavy", ["600", "10"], "chain"),
    "rate-1m": ("heavy", ["3000", "1"], "chain"),
    "rate-100k-indep": ("heavy", ["600", "10"], "independent"),
    "rate-1m-indep": ("heavy", ["3000", "1"], "independent"),
    "torch-model": ("model", ["4500"], None),
    "storm-5us": ("storm", ["sigalrm", "10", "1000", "5"], None),
    "storm-20us": ("storm", ["sigalrm", "10", "1000", "20"], None),
    "threads-1000": ("threads", ["threads", "1000", "10"], None),
    "startup": ("startup", ["deep", "1"], None),
    "launch": ("launch", ["/bin/true"], None),
}


def run(cmd, env, out_path=None):
    """Runs cmd; returns (wall seconds, peak RSS KiB of the largest process); its stdout
    goes to out_path when given."""
    start = time.monotonic()
    with open(out_path or os.devnull, "w") as out:
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    if status != 0:
        sys.exit(f"{cmd[0]} failed with status {status}")
    return wall, usage.ru_maxrss


def ThreadCpu(path):
    """The recording thread's CPU seconds that nvtx_heavy or torch_nvtx_model printed."""
    words = open(path).read().split()
    return float(words[words.index("thread") + 1])


def Loops(path):
    """The main-loop count that the storm workload printed."""
    words = open(path).read().split()
    return int(words[words.index("loops") + 1])


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
            kind, load_args, mode = LOADS[load]
            if kind == "heavy":
                prog = [heavy] + load_args + ["0", mode]  # calibrates itself
            elif kind == "model":
                prog = [os.path.join(args.build, "bin", "torch_nvtx_model")] + load_args
                if not os.path.exists(prog[0]):
                    print(f"== {load}: skipped, {prog[0]} was not built (no libtorch)")
                    continue
            elif kind == "launch":
                prog = list(load_args)
            else:
                prog = [workload] + load_args
            base_env = dict(os.environ)
            for k in ("TELLER_TRACE_DIR", "NVTX_INJECTION64_PATH"):
                base_env.pop(k, None)
            # The load it generates, stated rather than assumed.
            rate_line = ""
            measured = kind in ("heavy", "model")  # prints its ranges and its CPU time
            if measured:
                run(prog, base_env, os.path.join(tmp, "load.txt"))
                rate_line = open(os.path.join(tmp, "load.txt")).read().strip()
            if kind == "heavy":
                # The calibration, fixed from here on.
                prog = [heavy] + load_args + [rate_line.split()[-1], mode]
            ranges = None
            if measured:
                ranges = int(rate_line.split()[1])
            elif kind == "threads":
                ranges = 1000 * 10
            elif kind == "startup":
                ranges = 1
            floor = [("floor", None)] if measured else []
            walls = {"plain": []}
            rss = {"plain": []}
            thread_cpu = {"plain": []}  # the recording thread's CPU seconds (nvtx_heavy)
            loops = {"plain": []}  # the storm's main-loop count (its speed)
            for name, _ in floor + builds:
                walls[name] = []
                rss[name] = []
                thread_cpu[name] = []
                loops[name] = []
            out_txt = os.path.join(tmp, "out.txt")
            for i in range(args.runs + 1):  # the first round is a warm-up
                w, m = run(prog, base_env, out_txt)
                if i:
                    walls["plain"].append(w)
                    rss["plain"].append(m)
                    if measured:
                        thread_cpu["plain"].append(ThreadCpu(out_txt))
                    if kind == "storm":
                        loops["plain"].append(Loops(out_txt))
                if floor:
                    env = dict(base_env, NVTX_INJECTION64_PATH=os.path.join(
                        args.build, "lib", "libnvtx_clock_floor.so"))
                    w, m = run(prog, env, out_txt)
                    if i:
                        walls["floor"].append(w)
                        rss["floor"].append(m)
                        thread_cpu["floor"].append(ThreadCpu(out_txt))
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
                    w, m = run(cmd, env, out_txt)
                    shutil.rmtree(out, ignore_errors=True)
                    if i:
                        walls[name].append(w)
                        rss[name].append(m)
                        if measured:
                            thread_cpu[name].append(ThreadCpu(out_txt))
                        if kind == "storm":
                            loops[name].append(Loops(out_txt))
            print(f"== {load}: {' '.join(os.path.basename(p) for p in prog[:1])} {' '.join(load_args)}")
            if rate_line:
                print(f"   {rate_line}")
            a = walls["plain"]
            print(f"   plain          wall s median {statistics.median(a):.4f} "
                  f"(min {min(a):.4f} max {max(a):.4f})  peak RSS median {statistics.median(rss['plain'])} KiB")
            for name, _ in floor + builds:
                b = walls[name]
                ratios = [y / x for x, y in zip(a, b)]
                diffs = [y - x for x, y in zip(a, b)]
                print(f"   {name:<6} traced  wall s median {statistics.median(b):.4f} "
                      f"(min {min(b):.4f} max {max(b):.4f})  peak RSS median {statistics.median(rss[name])} KiB")
                print(f"   {name:<6} ratio/plain median {statistics.median(ratios):.4f} "
                      f"({100 * (statistics.median(ratios) - 1):+.2f}%), added wall median "
                      f"{1000 * statistics.median(diffs):.2f} ms"
                      + (f", {1e9 * statistics.median(diffs) / ranges:.0f} ns per range"
                         if measured else ""))
                if kind == "storm":
                    speed = [y / x for x, y in zip(loops["plain"], loops[name])]
                    print(f"   {name:<6} speed (main loops) over plain, median "
                          f"{statistics.median(speed):.3f} (plain median "
                          f"{statistics.median(loops['plain'])} loops)")
                if measured:
                    cpu = [y - x for x, y in zip(thread_cpu["plain"], thread_cpu[name])]
                    print(f"   {name:<6} recording thread's CPU over plain, median "
                          f"{1e9 * statistics.median(cpu) / ranges:.0f} ns per range")
            sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
