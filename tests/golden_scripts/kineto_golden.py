#!/usr/bin/env python3
"""Expected values of the Kineto importer's golden tests (tests/ingest/kineto_importer_test.cc)
and of a few other tests on the same traces (named in their sections), derived from the
real traces with Python's json and gzip only, independently of the importer.

Usage: python3 tests/golden_scripts/kineto_golden.py [REAL_DATA_DIR]
REAL_DATA_DIR defaults to ../shared/data/real beside the repository (the default of the
CMake variable TELLER_REAL_DATA_DIR). Each section prints what one test asserts.

Category counts ("the helper" in the test's comments): events with ph 'X' are counted by
the row type their category maps to (K below; categories outside K are counted apart as
unknown), ph 'i'/'I' as marks and ph 's'/'f'/'t' as flow events; rows are every counted
event except flows and unknown categories.
"""
import collections
import decimal
import glob
import gzip
import json
import os
import sys

K = {
    "cpu_op": "range", "user_annotation": "range", "python_function": "range", "Operator": "range",
    "cuda_runtime": "runtime", "Runtime": "runtime",
    "cuda_driver": "driver",
    "kernel": "kernel", "Kernel": "kernel",
    "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
    "gpu_memset": "memset", "Memset": "memset",
    "cuda_sync": "sync",
    "gpu_user_annotation": "gpu_annotation",
}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        # Decimal keeps the microsecond timestamps exact (ns arithmetic below).
        return json.loads(f.read(), parse_float=decimal.Decimal, object_pairs_hook=collections.OrderedDict)


def counts(doc):
    c, unknown = collections.Counter(), collections.Counter()
    for e in doc["traceEvents"]:
        ph = e.get("ph")
        if ph == "X":
            cat = e.get("cat")
            if cat in K:
                c[K[cat]] += 1
            else:
                unknown[cat] += 1
        elif ph in ("i", "I"):
            c["mark"] += 1
        elif ph in ("s", "f", "t"):
            c["flow"] += 1
    rows = sum(v for k, v in c.items() if k != "flow")
    return dict(sorted(c.items())), dict(sorted(unknown.items())), rows


def graph_launch(doc):
    """Correlation id of the first graph launch and the kernels that share it."""
    ev = doc["traceEvents"]
    g = [e for e in ev if e.get("cat") == "cuda_runtime" and "GraphLaunch" in e["name"]][0]
    c = g["args"]["correlation"]
    return c, sum(e.get("cat") == "kernel" and e.get("args", {}).get("correlation") == c for e in ev)


def first(doc, cat, name=None):
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == cat and (name is None or e["name"] == name):
            return e
    return None


def dist(doc):
    info = doc["distributedInfo"]
    return {k: info[k] for k in ("backend", "rank", "world_size") if k in info}


def ns(us):
    """Microseconds (exact decimal) to integer nanoseconds, rounded half away from zero."""
    return int((decimal.Decimal(us) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_UP))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    real = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "..", "shared", "data", "real")
    p = lambda rel: os.path.join(real, rel)

    def section(title):
        print("\n== " + title)

    section("B200EagerCategoryCounts: tracelens/b200__eager_trace.json.gz")
    d = load(p("tracelens/b200__eager_trace.json.gz"))
    print("counts %s unknown %s rows %d" % counts(d))
    print("distributedInfo", dist(d))
    e = first(d, "user_annotation", "execute_context_1(888_788544)_generation_0(0)")
    base = int(d["baseTimeNanoseconds"])
    print("pid", e["pid"], "start_ns", base + ns(e["ts"]), "dur_ns", ns(e["dur"]))
    m = first(d, "gpu_memcpy")
    print("first gpu_memcpy", m["name"], "bytes", m["args"]["bytes"], "device", m["args"]["device"],
          "stream", m["args"]["stream"], "correlation", m["args"]["correlation"])

    section("VllmGraphLaunchSharesOneCorrelation: tracelens/inference__vllm_decode_full__graph_execution.json.gz")
    d = load(p("tracelens/inference__vllm_decode_full__graph_execution.json.gz"))
    print("graph launch correlation %s kernels %d" % graph_launch(d))
    print("counts %s unknown %s rows %d" % counts(d))

    section("SglangDecodeGraphLaunch: tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz")
    d = load(p("tracelens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz"))
    print("graph launch correlation %s kernels %d" % graph_launch(d))
    print("counts %s unknown %s rows %d" % counts(d))

    section("tests/diagnose/diagnose_test.cc RealKinetoTraceGetsAReport: the step annotations of that file")
    base = int(d["baseTimeNanoseconds"])
    for e in d["traceEvents"]:
        if e.get("cat") == "user_annotation":
            print(e["name"], "start_ns", base + ns(e["ts"]), "dur_ns", ns(e["dur"]))
    section("tests/sim/inject_test.cc KernelThrottleOnSglangDecode: kernels named Cijk_* in that file")
    print(sum(e.get("cat") == "kernel" and e["name"].startswith("Cijk_") for e in d["traceEvents"]))

    section("Resnet50Legacy2021Categories: kineto/resnet50_nw0_worker0.1623143089861.pt.trace.json.gz")
    d = load(p("kineto/resnet50_nw0_worker0.1623143089861.pt.trace.json.gz"))
    print("counts %s unknown %s rows %d" % counts(d))
    m = first(d, "Memcpy")
    print("first Memcpy", m["name"], "tid", m["tid"], "stream", m["args"]["stream"], "correlation",
          m["args"]["correlation"], "external id", m["args"]["external id"], "bytes", m["args"]["bytes"],
          "start_ns", ns(m["ts"]), "dur_ns", ns(m["dur"]))
    o = first(d, "Operator", "aten::empty")
    print("first aten::empty tid", o["tid"])

    section("DfIndexResolverRank1Of2: hta/df_index_resolver__df_index_resolver.json.gz")
    d = load(p("hta/df_index_resolver__df_index_resolver.json.gz"))
    print("counts %s unknown %s rows %d" % counts(d))
    print("distributedInfo", dist(d))
    o = first(d, "cpu_op")
    print("first cpu_op", o["name"], "pid", o["pid"], "tid", o["tid"], "start_ns", ns(o["ts"]), "dur_ns", ns(o["dur"]))

    section("ParamDlrmEightRanksIntoOneTrace: param_dlrm_8rank/* (rank, kernels, world_size)")
    for f in sorted(glob.glob(p("param_dlrm_8rank/*"))):
        d = load(f)
        c, _, _ = counts(d)
        print(os.path.basename(f), d["distributedInfo"]["rank"], c["kernel"], d["distributedInfo"]["world_size"])

    section("BeforeFixOutOfOrderKeptAsIs: kineto/before_fix_trace.json")
    d = load(p("kineto/before_fix_trace.json"))
    print("counts %s unknown %s rows %d" % counts(d))
    xs = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    print("out-of-order X pairs", sum(b["ts"] < a["ts"] for a, b in zip(xs, xs[1:])))
    k = first(d, "kernel")
    print("kernel start_ns", int(d["baseTimeNanoseconds"]) + ns(k["ts"]), "dur_ns", ns(k["dur"]),
          "correlation", k["args"]["correlation"])

    section("BaseTimeAfterTraceEvents: hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    d = load(p("hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
    print("top-level keys", list(d.keys()))
    k = first(d, "kernel")
    print("first kernel start_ns", int(d["baseTimeNanoseconds"]) + ns(k["ts"]), "dur_ns", ns(k["dur"]),
          "device", k["args"]["device"], "stream", k["args"]["stream"], "correlation", k["args"]["correlation"],
          "external id", k["args"]["External id"])

    section("TraceFilterNoFlows: hta/trace_filter__sampled_rank-0.json.gz")
    d = load(p("hta/trace_filter__sampled_rank-0.json.gz"))
    print("counts %s unknown %s rows %d" % counts(d))
    ev = d["traceEvents"]
    host = {e["args"]["correlation"] for e in ev if e.get("cat") == "cuda_runtime"}
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    print("GPU events", len(gpu), "with a runtime partner", sum(e["args"].get("correlation") in host for e in gpu))
    print("distributedInfo", dist(d))

    section("MtiaUnknownCategoriesCounted: hta/mtia_inference_trace__mtia_inference_rank_0.json.gz")
    d = load(p("hta/mtia_inference_trace__mtia_inference_rank_0.json.gz"))
    c, unknown, rows = counts(d)
    print("counts %s unknown %s rows %d" % (c, unknown, rows))
    print("unknown total", sum(unknown.values()))


if __name__ == "__main__":
    main()
