#!/usr/bin/env python3
"""Validates `teller diagnose --json` reports against docs/diagnosis.schema.json and checks
what the schema cannot say: every root evidence entry took longer than its peers
(ratio > 1, excess = time - expected > 0), consequences wait for someone, top operators
are ordered by suspicion, and an abnormal step has a category and an explanation.

usage: validate_reports.py TELLER SCHEMA WORKDIR [REAL_DATA_DIR]
Reports come from two small simulated runs with planted faults (always) and from real
traces (when REAL_DATA_DIR holds them; the others are skipped and named)."""
import json, os, subprocess, sys

import jsonschema

teller, schema_path, work = sys.argv[1:4]
real = sys.argv[4] if len(sys.argv) > 4 else ""
schema = json.load(open(schema_path))
jsonschema.Draft7Validator.check_schema(schema)
validator = jsonschema.Draft7Validator(schema)
os.makedirs(work, exist_ok=True)
failures = []


def check(name, report):
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.path))
    for e in errors[:5]:
        failures.append(f"{name}: schema: {'/'.join(map(str, e.path))}: {e.message[:200]}")
    for s in report["steps"]:
        if s["abnormal"]:
            if s["fault_type"] is None or not s["explanation"]:
                failures.append(f"{name}: abnormal step {s['ordinal']} lacks category/explanation")
        elif s["evidence"]:
            failures.append(f"{name}: normal step {s['ordinal']} lists evidence")
        for e in s["evidence"]:
            if e["role"] not in ("root", "minor") or e["excess_ns"] != e["time_ns"] - e["expected_ns"] or \
                    e["excess_ns"] <= 0 or e["ratio"] <= 1.0:
                failures.append(f"{name}: evidence not slower than its peers: {e}")
        for e in s["consequences"]:
            if e["role"] != "consequence" or e["excess_ns"] <= 0:
                failures.append(f"{name}: consequence without a wait: {e}")
    ops = report["top_operators"]
    order = [o["suspicion"] for o in ops]
    if order != sorted(order, reverse=True):
        failures.append(f"{name}: top_operators not ordered by suspicion")
    for o in ops:
        if o["straggling_ns"] > o["excess_ns"]:
            failures.append(f"{name}: straggling_ns beyond the excess: {o}")
    if ops and abs(sum(o["score"] for o in ops) - 1.0) > 1e-3 and len(ops) < 10:
        failures.append(f"{name}: top_operators scores of a complete list do not sum to 1")
    if report["abnormal_steps"] != sum(s["abnormal"] for s in report["steps"]):
        failures.append(f"{name}: abnormal_steps disagrees with the steps")


def diagnose(name, paths, extra=()):
    out = os.path.join(work, name.replace("/", "_") + ".json")
    p = subprocess.run([teller, "diagnose", *paths, "--json", out, *extra],
                       capture_output=True, text=True)
    if p.returncode not in (0, 3) or not os.path.exists(out):
        failures.append(f"{name}: exit {p.returncode}: {p.stderr[-300:]}")
        return None
    report = json.load(open(out))
    check(name, report)
    return report


sim = os.path.join(work, "sim")
subprocess.run(["rm", "-rf", sim], check=True)
subprocess.run([teller, "simulate", "--seed", "4", "--requests", "12", "--fault",
                "kernel_slow_one_gpu:target=gemm,magnitude=3,onset=0.5s,duration=0.5s,rank=1",
                "--out", sim], check=True, capture_output=True)
r = diagnose("simulated", [sim])
if r is not None and r["abnormal_steps"] == 0:
    failures.append("simulated: a 3x GEMM slowdown on rank 1 gave no abnormal step")
# Request evidence: a misroute and a starvation (request_route and request_latency entries,
# steps abnormal for some of their requests).
req = os.path.join(work, "requests")
subprocess.run(["rm", "-rf", req], check=True)
subprocess.run([teller, "simulate", "--profile", "vllm-v1-online", "--seed", "1", "--requests",
                "40", "--nodes", "1", "--gpus-per-node", "2", "--tp", "2", "--pp", "1",
                "--layers", "4", "--fault", "misroute:onset=1s,duration=2s", "--fault",
                "starvation:onset=4s,duration=2s,magnitude=2", "--out", req],
               check=True, capture_output=True)
r = diagnose("request faults", [req])
if r is not None:
    kinds = {e["kind"] for s in r["steps"] for e in s["log_evidence"]}
    if not {"request_route", "request_latency"} <= kinds:
        failures.append(f"request faults: log evidence kinds {sorted(kinds)}")
    for s in r["steps"]:
        if "abnormal_requests" in s and not set(s["abnormal_requests"]) <= set(s["requests"]):
            failures.append(f"request faults: step {s['step']} abnormal for requests it lacks")
checked = 2
for rel in ["tracelens/b200__eager_trace.json.gz",
            "tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
            "hta/nccl_parser_config__nccl_data.json.gz", "param_dlrm_8rank",
            "kineto/resnet50_nw0_worker0.1623143089861.pt.trace.json.gz"]:
    path = os.path.join(real, rel) if real else ""
    if not path or not os.path.exists(path):
        print(f"skipped (no real data): {rel}")
        continue
    diagnose(rel, [path])
    diagnose(rel + "+baseline", [path], ["--baseline", path])
    checked += 2
# Two runs of one program on different GPUs (HTA's trace_diff pair): the test ran kernels the
# control never did, listed as one new_operators finding.
test, control = (os.path.join(real, "hta", f"trace_diff__{n}__{n}.json.gz") for n in ("test", "control"))
if real and os.path.exists(test) and os.path.exists(control):
    r = diagnose("trace_diff test against control", [test], ["--baseline", control])
    if r is not None:
        new = [f for f in r["findings"] if f["kind"] == "new_operators"]
        if len(new) != 1 or new[0]["severity"] != "warning" or new[0]["category"] != "cuda_kernel":
            failures.append(f"trace_diff test against control: new_operators findings {new}")
    checked += 1
else:
    print("skipped (no real data): the trace_diff pair")
for f in failures:
    print("FAIL", f)
print(f"{checked} reports checked, {len(failures)} problems")
sys.exit(1 if failures else 0)
