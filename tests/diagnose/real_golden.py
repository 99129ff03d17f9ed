#!/usr/bin/env python3
"""End-to-end checks of `teller diagnose --json` on real third-party traces, with the
expected values read from the traces themselves by this script (not from Teller):

- the 8-rank DLRM job (param_dlrm_8rank): one engine step, numbered as its ProfilerStep#N,
  on the 8 ranks with the rank and pid each file records; nothing abnormal;
- the same job with one kernel instance on rank 3 lengthened into the idle time after it
  on its stream, and one of the same kernel on rank 1 by a third as much (nothing else
  moves): that kernel is the first top operator, on ranks 3 and 1 in that order;
- resnet50 (kineto): the steps are the trace's ProfilerStep numbers; nothing abnormal;
- PARAM's AlexNet benchmark (hta), without step markers: its two passes are the steps.

usage: real_golden.py TELLER REAL_DATA_DIR WORKDIR   (exit 77 when the data is absent)"""
import glob, gzip, json, os, re, shutil, subprocess, sys

teller, real, work = sys.argv[1:4]
dlrm = os.path.join(real, "param_dlrm_8rank")
resnet = os.path.join(real, "kineto", "resnet50_nw0_worker0.1623143089861.pt.trace.json.gz")
if not os.path.isdir(dlrm) or not os.path.isfile(resnet):
    print("real data not found under %s: skipped" % real)
    sys.exit(77)
failures = []


def load(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        return json.load(f)


def diagnose(trace, name):
    out = os.path.join(work, name + ".json")
    p = subprocess.run([teller, "diagnose", trace, "--json", out], capture_output=True, text=True)
    if p.returncode != 0:
        failures.append("%s: teller diagnose exited %d: %s" % (name, p.returncode, p.stderr[-300:]))
        return None
    return json.load(open(out))


def step_numbers(doc):
    return sorted({int(m.group(1)) for e in doc["traceEvents"]
                   for m in [re.fullmatch(r"ProfilerStep#(\d+)", e.get("name", ""))] if m})


def expect(name, what, got, want):
    if got != want:
        failures.append("%s: %s is %r, the trace says %r" % (name, what, got, want))


os.makedirs(work, exist_ok=True)
files = sorted(glob.glob(os.path.join(dlrm, "*.json*")))
docs = [load(f) for f in files]
ranks = sorted((d["distributedInfo"]["rank"],
                next(e["pid"] for e in d["traceEvents"] if e.get("cat") == "cpu_op")) for d in docs)
numbers = sorted({n for d in docs for n in step_numbers(d)})

# The healthy job.
rep = diagnose(dlrm, "dlrm")
if rep:
    expect("dlrm", "steps_total", rep["steps_total"], 1)
    expect("dlrm", "abnormal_steps", rep["abnormal_steps"], 0)
    expect("dlrm", "step number", [s["step"] for s in rep["steps"]], numbers)
    expect("dlrm", "ranks and pids",
           sorted((r["rank"], r["pid"]) for r in rep["steps"][0]["ranks"]), ranks)

# One kernel instance on rank 3 made longer, into the idle time after it on its stream.
target_doc = next(d for d in docs if d["distributedInfo"]["rank"] == 3)
by_stream = {}
for e in target_doc["traceEvents"]:
    if e.get("ph") == "X" and e.get("cat") == "kernel":
        by_stream.setdefault(e["args"].get("stream"), []).append(e)
best = None
for stream, ks in by_stream.items():
    ks.sort(key=lambda e: e["ts"])
    for a, b in zip(ks, ks[1:]):
        if "nccl" in a["name"].lower() or a["dur"] <= 0:
            continue
        idle = b["ts"] - (a["ts"] + a["dur"])
        extra = min(0.9 * idle, 1000.0)
        if best is None or extra / a["dur"] > best[0]:
            best = (extra / a["dur"], a, extra)
ratio, kernel, extra = best
if ratio < 20:
    failures.append("dlrm-planted: no kernel on rank 3 with idle time after it (best %.1fx)" % ratio)
kernel["dur"] = kernel["dur"] + round(extra, 3)
# The same kernel lengthened on rank 1 too, by less: the operator's ranks list the rank with
# the most excess first, whatever the rank numbers.
second = None
other_doc = next(d for d in docs if d["distributedInfo"]["rank"] == 1)
other = {}
for e in other_doc["traceEvents"]:
    if e.get("ph") == "X" and e.get("cat") == "kernel":
        other.setdefault(e["args"].get("stream"), []).append(e)
for stream, ks in other.items():
    ks.sort(key=lambda e: e["ts"])
    for a, b in zip(ks, ks[1:]):
        if a["name"] != kernel["name"] or a["dur"] <= 0:
            continue
        add = min(0.9 * (b["ts"] - (a["ts"] + a["dur"])), extra / 3)
        if second is None or add > second[1]:
            second = (a, add)
if second is None or second[1] < 20 * second[0]["dur"]:
    failures.append("dlrm-planted: no instance of %s on rank 1 with idle time after it" % kernel["name"])
else:
    second[0]["dur"] = second[0]["dur"] + round(second[1], 3)
planted = os.path.join(work, "dlrm-planted")
shutil.rmtree(planted, ignore_errors=True)
os.makedirs(planted)
for f, d in zip(files, docs):
    with open(os.path.join(planted, os.path.basename(f).replace(".gz", "")), "w") as out:
        json.dump(d, out)
rep = diagnose(planted, "dlrm-planted")
if rep:
    top = rep["top_operators"][0] if rep["top_operators"] else {}
    expect("dlrm-planted", "first top operator", (top.get("name"), top.get("ranks")),
           (kernel["name"], [3, 1]))

# resnet50: its ProfilerStep numbers, nothing abnormal.
rep = diagnose(resnet, "resnet50")
if rep:
    expect("resnet50", "step numbers", sorted(s["step"] for s in rep["steps"]),
           step_numbers(load(resnet)))
    expect("resnet50", "abnormal_steps", rep["abnormal_steps"], 0)

# PARAM's AlexNet benchmark, profiled without step markers: a warm-up pass and a measured
# pass, each inside its own "[param|...|warmup|forward]" / "...|measure|forward]" range
# (written twice, nested): two iterations, the second beginning where the outer measured
# range does; nothing abnormal.
alexnet = os.path.join(real, "hta", "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz")
if os.path.isfile(alexnet):
    passes = {}
    for e in load(alexnet)["traceEvents"]:
        name = e.get("name", "")
        if e.get("cat") == "user_annotation" and name.endswith("|forward]"):
            passes[name] = min(passes.get(name, e["ts"]), e["ts"])
    measured = round(1000 * next(t for n, t in passes.items() if "|measure|" in n))
    rep = diagnose(alexnet, "alexnet")
    if rep:
        expect("alexnet", "scope", rep["scope"], "iterations")
        expect("alexnet", "steps", [(s["step"], s["kind"]) for s in rep["steps"]],
               [(k, "iteration") for k in range(len(passes))])
        expect("alexnet", "second iteration's start",
               rep["steps"][1]["start_ns"] if len(rep["steps"]) > 1 else None, measured)
        expect("alexnet", "abnormal_steps", rep["abnormal_steps"], 0)

for f in failures:
    print("FAIL " + f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
