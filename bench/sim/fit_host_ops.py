#!/usr/bin/env python3
"""Host-side (framework) statistics of the real Kineto traces that the simulator's op stack
(src/sim/host_stack.cc, `--host-stack`) is fitted to.

Usage: bench/sim/fit_host_ops.py [REAL_DIR]   (default ../shared/data/real/tracelens)

Per trace, on the thread with the most cpu_op events:
  - self CPU time per event name (its duration minus that of its children that the
    simulator also emits: cpu ops, runtime/driver calls, nn.Module and Python-frame events;
    built-in calls and __getattr__ frames are folded into their parent), for cpu ops,
    launch calls and the nn.Module / _call_impl / other Python-frame groups: count, p50 and
    p90 in us and the lognormal through both (sigma = ln(p90/p50) / 1.2816);
  - distinct event names by category (modules, Python frames, built-ins, cpu ops, runtime,
    kernels), the numbers `teller simulate --compare` sums into "event symbols".
The constants in src/sim/host_stack.cc name the trace and statistic they come from.
"""
import gzip, json, math, os, sys

TRACES = [
    "b200__eager_trace.json.gz",
    "h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "inference__sglang_prefilldecode__sglang_Qwen3-8B_prefilldecode.json.gz",
]
HOST = ("cpu_op", "python_function", "cuda_runtime", "cuda_driver")


def quantile(v, q):
    v = sorted(v)
    if not v:
        return float("nan")
    x = q * (len(v) - 1)
    lo = int(math.floor(x))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (x - lo)


def folded(e):
    n = e["name"]
    return e["cat"] == "python_function" and (n.startswith("<built-in") or "__getattr__" in n)


def group(e):
    n = e["name"]
    if e["cat"] != "python_function":
        return n
    if n.startswith("nn.Module:"):
        return "[nn.Module]"
    if "_call_impl" in n:
        return "[_call_impl]"
    if "torch/_ops.py" in n:
        return "[torch/_ops.py __call__]"
    return "[python frame]"


def analyse(path):
    d = json.load(gzip.open(path))
    events = d["traceEvents"] if isinstance(d, dict) else d
    host = [e for e in events if e.get("ph") == "X" and e.get("cat") in HOST]
    threads = {}
    for e in host:
        if e["cat"] == "cpu_op":
            key = (e.get("pid"), e.get("tid"))
            threads[key] = threads.get(key, 0) + 1
    main = max(threads, key=threads.get)
    host = [e for e in host if (e.get("pid"), e.get("tid")) == main]
    host.sort(key=lambda e: (float(e["ts"]), -float(e.get("dur", 0))))
    selfs = {}
    stack = []  # [event, end, children time]
    def close(item):
        e, _, child = item
        if not folded(e):
            selfs.setdefault(group(e), []).append(max(0.0, float(e.get("dur", 0)) - child))
    for e in host:
        ts, dur = float(e["ts"]), float(e.get("dur", 0))
        while stack and ts >= stack[-1][1]:
            close(stack.pop())
        if stack and not folded(e):
            stack[-1][2] += dur
        stack.append([e, ts + dur, 0.0])
    while stack:
        close(stack.pop())
    cats = {"modules": set(), "frames": set(), "builtins": set(), "cpu ops": set(),
            "runtime": set(), "kernels": set()}
    for e in events:
        if e.get("ph") != "X":
            continue
        c, n = e.get("cat"), e.get("name", "")
        if c == "python_function":
            key = "modules" if n.startswith("nn.Module:") else (
                "builtins" if n.startswith("<built-in") else "frames")
        elif c in ("cpu_op",):
            key = "cpu ops"
        elif c in ("cuda_runtime", "cuda_driver"):
            key = "runtime"
        elif c == "kernel":
            key = "kernels"
        else:
            continue
        cats[key].add(n)
    return selfs, {k: len(v) for k, v in cats.items()}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/real/tracelens"
    if not os.path.isdir(root):
        print("no real traces in", root)
        return 77
    for f in TRACES:
        p = os.path.join(root, f)
        if not os.path.exists(p):
            continue
        selfs, cats = analyse(p)
        print("==", f)
        print("  distinct names: " + ", ".join(f"{k} {v}" for k, v in cats.items()))
        for name, v in sorted(selfs.items(), key=lambda kv: -len(kv[1])):
            if len(v) < 20:
                continue
            p50, p90 = quantile(v, 0.5), quantile(v, 0.9)
            sigma = math.log(p90 / p50) / 1.2816 if p50 > 0 and p90 > p50 else 0.0
            print(f"  {name[:60]:60s} n={len(v):5d} self p50={p50:7.2f} p90={p90:7.2f} us "
                  f"sigma={sigma:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
