#!/usr/bin/env python3
"""Real CPU contention under `teller run`: a real PyTorch program (contention/generate.py,
a small transformer's generate loop on the CPU, one model call per step) is recorded with
`teller run --python-hooks torch`; while it runs steps FROM..TO-1, this script keeps
HOGS processes of its own busy on the machine's cores, each busy-looping BUSY ms then
sleeping IDLE ms (outside the traced program, as a neighbour job would be). Nothing is planted in the trace: the contention is
real, and so is everything else the machine does meanwhile. Each trial also records a
control run without hogs.

Scores, per run, from `teller diagnose DIR --json`: the steps said to be slower (an
abnormal step, or a slow_host finding naming the step), inside the contended window
(the hook numbers the k-th model call seq=k+1: steps FROM+1..TO) and outside it (one step
either side of the window counts as inside: the hogs start and stop while a step runs).
Found: at least one contended step said slower on the host (slow_host, or an abnormal
step of category scheduling_software).

usage: bench/diagnosis/host_contention.py [--teller build/bin/teller] [--trials 3]
          [--steps 90] [--from 30] [--to 50] [--hogs N (default: the cores)]
          [--busy-ms 2] [--idle-ms 2]
          [--dim 128] [--layers 6] [--python /usr/bin/python3] [--out F.json] [--keep DIR]
A benchmark, not a test: exits 0; 2 when teller or the program cannot run."""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "contention", "generate.py")


def record(a, out, hogs):
    """Runs the program under teller run; hogs busy loops during steps a.start..a.stop-1.
    Returns the seconds each step took as the program printed them."""
    cmd = [a.teller, "run", "--python-hooks", "torch", "--out", out, "--",
           a.python, PROGRAM, "--steps", str(a.steps), "--dim", str(a.dim), "--layers", str(a.layers)]
    # The hogs are started before the program and stopped at once (SIGSTOP), so that they
    # compete from the very step they are let go (SIGCONT), not after an interpreter's
    # start-up.
    hog = ("import time\nwhile True:\n    t = time.perf_counter()\n"
           "    while time.perf_counter() - t < %g: pass\n    time.sleep(%g)\n" % (
               a.busy_ms / 1000, a.idle_ms / 1000))
    running = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(hogs)]
    for h in running:
        os.kill(h.pid, signal.SIGSTOP)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marks = []
    try:
        for line in p.stdout:
            m = re.match(r"step (\d+) (\S+)$", line.strip())
            if not m:
                continue
            k = int(m.group(1))
            marks.append(float(m.group(2)))  # the program's own clock, not this script's
            if k in (a.start, a.stop):
                for h in running:
                    os.kill(h.pid, signal.SIGCONT if k == a.start else signal.SIGSTOP)
    finally:
        for h in running:
            h.kill()
        for h in running:
            h.wait()
    err = p.stderr.read()
    if p.wait() != 0:
        sys.exit("teller run failed (%d): %s" % (p.returncode, err[-500:]))
    return [b - x for x, b in zip(marks, marks[1:])]


def slower_steps(report):
    """{step number: kinds} of the steps the report says were slower."""
    out = {}
    for s in report.get("steps", []):
        if s.get("abnormal"):
            out.setdefault(s.get("step"), set()).add("abnormal:" + str(s.get("fault_type")))
    for f in report.get("findings", []):
        m = re.search(r" in step (\S+) \(", f.get("title", ""))
        if f.get("kind") in ("slow_host", "slow_gpu", "persistent_slowdown") and m:
            out.setdefault(int(m.group(1)) if m.group(1).isdigit() else m.group(1),
                           set()).add(f["kind"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--teller", default="build/bin/teller")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--steps", type=int, default=90)
    ap.add_argument("--from", dest="start", type=int, default=30)
    ap.add_argument("--to", dest="stop", type=int, default=50)
    ap.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--busy-ms", type=float, default=2.0, help="each hog busy-loops this long...")
    ap.add_argument("--idle-ms", type=float, default=2.0, help="...then sleeps this long")
    ap.add_argument("--dim", type=int, default=128, help="the model's width")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the interpreter that has torch (Debian's python3-torch)")
    ap.add_argument("--out")
    ap.add_argument("--keep", help="keep the recorded runs and reports in this folder")
    a = ap.parse_args()
    if not (0 < a.start < a.stop < a.steps):
        sys.exit("need 0 < --from < --to < --steps")
    inside = set(range(a.start, a.stop + 2))  # seq numbers FROM+1..TO, one either side
    work = a.keep or tempfile.mkdtemp(prefix="teller-contention-")
    os.makedirs(work, exist_ok=True)
    rows = []
    try:
        for trial in range(a.trials):
            for hogs in (0, a.hogs):
                d = os.path.join(work, "t%d_h%d" % (trial, hogs))
                secs = record(a, d, hogs)
                js = d + ".json"
                p = subprocess.run([a.teller, "diagnose", d, "--json", js], capture_output=True, text=True)
                if p.returncode != 0:
                    sys.exit("teller diagnose failed (%d): %s" % (p.returncode, p.stderr[-500:]))
                said = slower_steps(json.load(open(js)))
                window = secs[a.start:a.stop]
                rest = secs[:a.start - 1] + secs[a.stop + 1:]
                slowdown = (sorted(window)[len(window) // 2] / sorted(rest)[len(rest) // 2]) if window and rest else 0
                hit = any(("slow_host" in k or "abnormal:scheduling_software" in k)
                          for s, k in said.items() if s in inside)
                row = {"trial": trial, "hogs": hogs, "slowdown": round(slowdown, 2),
                       "inside": sorted(s for s in said if s in inside),
                       "outside": sorted(str(s) for s in said if s not in inside),
                       "kinds": {str(s): sorted(k) for s, k in said.items()},
                       "found": hit if hogs else None}
                rows.append(row)
                print("trial %d %-9s window steps %.2fx the others  said slower: %d inside, %d outside %s%s" % (
                    trial, "hogs %d" % hogs if hogs else "control", slowdown, len(row["inside"]),
                    len(row["outside"]), row["outside"][:6], "  found" if hogs and hit else ""), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    contended = [r for r in rows if r["hogs"]]
    control = [r for r in rows if not r["hogs"]]
    print("contended runs found: %d of %d; steps said slower outside the window: %d in contended runs, "
          "%d in control runs (%d steps each)" % (
              sum(r["found"] for r in contended), len(contended),
              sum(len(r["outside"]) for r in contended), sum(len(r["outside"]) + len(r["inside"]) for r in control),
              a.steps))
    if a.out:
        json.dump({"teller": a.teller, "args": vars(a), "runs": rows}, open(a.out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
