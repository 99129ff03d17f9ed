#!/usr/bin/env python3
"""Healthy real traces: `teller diagnose` on every third-party trace in ../shared/data/real,
self-fit and against itself as baseline. None of these traces has a fault, so every
abnormal step and every slowdown finding (a persistent slowdown, a slow GPU or host,
operators the baseline never ran) is a false alarm, and every evidence entry at or below
1.0x its peers is wrong.

usage: bench/diagnosis/healthy_real.py [--teller build/bin/teller] [--data ../shared/data/real]
                                       [--modes self,baseline] [--scale F] [--jitter S]
                                       [--seed N] [--model DIR] [--verbose]
Prints one line per (trace, mode) and the totals; exits 0 (a benchmark, not a test).

--model DIR: diagnose with a learned model of `teller train` too (it names fault types and
must flag nothing more).
--scale F: the same traces on a machine F times slower (F > 1) or faster: every Kineto
event's time from the trace's start and its duration multiplied by F (the Nsight exports
are left out). Still healthy: nothing in a trace stands out more or less than before, so
a flag that appears only at some F comes from an absolute threshold, not from the peers.
--jitter S: the same traces with more natural noise: every GPU operation's duration (Kineto
categories kernel, gpu_memcpy, gpu_memset) multiplied by its own exp(N(0, S)) (seeded by
--seed, default 1), never past the start of the next operation on its stream (the Nsight
exports are left out). Real kernels vary by a few percent between repeats; at S = 0.1
every operation of the trace varies like the noisiest ones, and nothing is a fault: a
flag that appears only with jitter comes from noise the peers did not measure. Mode `original` (with --scale or --jitter): the changed trace against
the unchanged one as baseline, a healthy run against a healthy run of its own.
"""
import argparse, gzip, json, math, os, random, shutil, subprocess, sys, tempfile, time

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def scaled(paths, factor, tmp, jitter=0.0, seed=1):
    """Copies of the Kineto files `paths` (or a folder's files) with every event's start,
    from the first start of all of them (one origin, so that ranks stay aligned), and
    duration multiplied by `factor`; with `jitter`, each GPU operation's duration also by
    exp(N(0, jitter)), at most up to the next operation's start on its stream."""
    rng = random.Random(seed)
    files = []
    for p in paths:
        files += [os.path.join(p, f) for f in sorted(os.listdir(p))] if os.path.isdir(p) else [p]
    docs = []
    for f in files:
        with (gzip.open(f, "rt") if f.endswith(".gz") else open(f)) as fh:
            docs.append(json.load(fh))
    events = [d["traceEvents"] if isinstance(d, dict) else d for d in docs]
    starts = [e["ts"] for ev in events for e in ev if isinstance(e.get("ts"), (int, float))]
    t0 = min(starts) if starts else 0
    out_dir = tempfile.mkdtemp(dir=tmp)
    for f, doc, ev in zip(files, docs, events):
        for e in ev:
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] = t0 + (e["ts"] - t0) * factor
            if isinstance(e.get("dur"), (int, float)):
                e["dur"] = e["dur"] * factor
        if jitter > 0:
            streams = {}
            for e in ev:
                if (e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES and
                        isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))):
                    streams.setdefault((e.get("pid"), e.get("tid")), []).append(e)
            for ops in streams.values():
                ops.sort(key=lambda e: e["ts"])
                for k, e in enumerate(ops):
                    longest = ops[k + 1]["ts"] - e["ts"] if k + 1 < len(ops) else float("inf")
                    e["dur"] = min(e["dur"] * math.exp(rng.gauss(0.0, jitter)), max(e["dur"], longest))
        name = os.path.basename(f)
        name = name[:-3] if name.endswith(".gz") else name
        with open(os.path.join(out_dir, name), "w") as w:
            json.dump(doc, w)
    return [out_dir] if os.path.isdir(paths[0]) else [os.path.join(out_dir, os.listdir(out_dir)[0])]


def traces(data, tmp):
    out = []
    for sub in ("hta", "kineto", "tracelens"):
        d = os.path.join(data, sub)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not (f.endswith(".json") or f.endswith(".json.gz")):
                continue
            if "execution_trace__benchmark_simple_add_et" in f:
                continue  # a Chakra execution trace, not a timeline
            out.append((sub + "/" + f, [os.path.join(d, f)]))
    d = os.path.join(data, "param_dlrm_8rank")
    if os.path.isdir(d):
        out.append(("param_dlrm_8rank/", [d]))
    d = os.path.join(data, "nsys_pipit")
    if os.path.isdir(d):
        for f in sorted(os.listdir(d)):
            if f.endswith(".sqlite.gz"):
                dst = os.path.join(tmp, f[:-3])
                with gzip.open(os.path.join(d, f)) as src, open(dst, "wb") as w:
                    shutil.copyfileobj(src, w)
                out.append(("nsys_pipit/" + f, [dst]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--teller", default="build/bin/teller")
    ap.add_argument("--data", default="../shared/data/real")
    ap.add_argument("--modes", default="self,baseline")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--jitter", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--model", default="")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="teller-healthy-")
    # files flagged, abnormal steps, steps, bad evidence, slowdown findings
    total = {m: [0, 0, 0, 0, 0] for m in a.modes.split(",")}
    seconds = {m: [] for m in total}
    for name, paths in traces(a.data, tmp):
        original = paths
        if a.scale != 1.0 or a.jitter > 0:
            if name.startswith("nsys_pipit/"):
                continue
            paths = scaled(paths, a.scale, tmp, a.jitter, a.seed)
        for mode in total:
            js = os.path.join(tmp, "d.json")
            cmd = [a.teller, "diagnose", *paths, "--json", js]
            if mode == "baseline":
                cmd += ["--baseline", *paths]
            elif mode == "original":
                cmd += ["--baseline", *original]
            if a.model:
                cmd += ["--model", a.model]
            t0 = time.monotonic()
            p = subprocess.run(cmd, capture_output=True, text=True)
            dt = time.monotonic() - t0
            if not os.path.exists(js):
                print(f"{name:80s} {mode:8s} no report (exit {p.returncode}): {p.stderr.strip()[:100]}")
                continue
            d = json.load(open(js))
            os.remove(js)
            seconds[mode].append(dt)
            steps = d.get("steps", [])
            nsteps = len({(s.get("step"), s.get("rank"), s.get("kind")) for s in steps})
            abnormal = d.get("abnormal_steps", 0)
            bad = 0
            for s in steps:
                for e in s.get("evidence", []):
                    t, x = e.get("time_ns", e.get("self_ns", 0)), e.get("expected_ns", 0)
                    if x > 0 and t <= x:
                        bad += 1
            persistent = sum(f.get("kind") in ("persistent_slowdown", "slow_gpu", "slow_host",
                                             "new_operators")
                             for f in d.get("findings", []))
            total[mode][0] += abnormal > 0 or persistent > 0
            total[mode][1] += abnormal
            total[mode][2] += nsteps
            total[mode][3] += bad
            total[mode][4] += persistent
            top = d.get("top_operators", [])
            top_s = f"  top {top[0].get('suspicion', 0):7.1f} {top[0].get('name', '')[:40]}" if top else ""
            if a.verbose or abnormal or persistent:
                print(f"{name:80s} {mode:8s} abnormal {abnormal:3d}  slowdowns {persistent}  "
                      f"evidence<=1.0x {bad:3d}  {dt:.2f}s{top_s if a.verbose else ''}")
    for mode, (files, ab, n, bad, persistent) in total.items():
        s = sorted(seconds[mode])
        med = s[len(s) // 2] if s else 0
        print(f"TOTAL {mode}{'' if a.scale == 1.0 else f' (times x{a.scale:g})'}{f' (GPU jitter {a.jitter:g})' if a.jitter else ''}: {files} traces flagged, {ab} abnormal steps, {persistent} slowdown "
              f"findings (persistent, slow GPU or host, new operators), {bad} evidence entries at or below 1.0x; median {med:.2f}s, "
              f"max {max(s or [0]):.2f}s")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
