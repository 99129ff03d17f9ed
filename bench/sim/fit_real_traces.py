#!/usr/bin/env python3
"""Statistics of the real traces that the simulator's host and noise models are fitted to.

Usage: bench/sim/fit_real_traces.py [REAL_DIR]   (default ../shared/data/real/tracelens)

Per trace (Chrome/Kineto JSON, gzipped):
  - inter-kernel gaps on each GPU stream (start of a kernel minus the end of the previous
    one, gaps above 1 ms left out as idle between steps): p10/p50/p90/p99 in us, and the
    lognormal that matches the p50 and p90 (median, sigma) with its predicted p99;
  - CV of kernel durations by operator class: per kernel name with at least 8 instances
    (the repeated decoder layers of one step), std/mean, then the median over the names
    of a class (classes by the patterns of docs/realism.md, in order).
The constants in src/sim (executor.cc, noise.cc) name the trace and statistic they come
from; rerun this script to check them.
"""
import gzip, json, math, os, re, statistics, sys

CLASSES = [
    ("allreduce", r"all_?reduce|reduce_?scatter|cross_device_reduce|one_shot|two_shot|custom_ar"),
    ("allgather", r"all_?gather"),
    ("attention_reduce", r"(attention|attn|fmha|flash).*(reduce|combine|merge)|merge_?states|reduce_segments"),
    ("attention", r"attention|attn|fmha|flash_fwd|flash_attn|batch_?decode_?with_?paged|batch_?prefill|paged_?kv|mha_|mla_|sdpa|xformers|decode_?attention"),
    ("kv_write", r"reshape_and_cache|store_?kv_?cache|append_?paged_?kv|concat_and_cache|set_kv_buffer|store_cache|kv_?cache_?(write|store|update)"),
    ("rotary", r"rotary|(^|[^a-z])rope([^a-z]|$)|_rope|rope_|pos_encoding"),
    ("norm", r"rms_?norm|layer_?norm|group_?norm|_norm_kernel|norm_fwd|triton_[a-z0-9_]*rsqrt"),
    ("moe_routing", r"moe::dev|moe_align|moe_sum|routing|topk_?gating|topk_?softmax|_topk_forward|bitmatrix|finalize|gating"),
    ("gemm", r"gemm|gemv|cijk_|nvjet|matmul|bmm_|cublas|cutlass|s16816|s1688|xmma|fused_moe|splitk|mm_kernel|wgrad|dgrad"),
    ("activation", r"act_and_mul|silu|gelu|swiglu|swish|relu|activation"),
    ("sampling", r"argmax|topk|top_k|top_p|topp|sampl|softmax|multinomial|radix_?sort|sort_|cub::|logit"),
    ("copy", r"copy|memcpy|gather|scatter|index_?select|catarray|cat_|transpose|embedding|embed"),
    ("elementwise", r"elementwise|vectorized|unrolled|triton_|fill|quant|neg|clamp|cast|convert|resolve_future|multi_tensor_apply|reduce_kernel|fused|add|mul"),
]
COMPILED = [(n, re.compile(p, re.I)) for n, p in CLASSES]


def classify(name):
    for n, p in COMPILED:
        if p.search(name):
            return n
    return "other"


def quantile(v, q):
    v = sorted(v)
    if not v:
        return float("nan")
    x = q * (len(v) - 1)
    lo = int(math.floor(x))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (x - lo)


def analyse(path):
    d = json.load(gzip.open(path))
    events = d["traceEvents"] if isinstance(d, dict) else d
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
               and e.get("ph") == "X"]
    streams = {}
    for e in kernels:
        streams.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    gaps = []
    for lst in streams.values():
        lst.sort(key=lambda e: float(e["ts"]))
        for a, b in zip(lst, lst[1:]):
            g = float(b["ts"]) - (float(a["ts"]) + float(a.get("dur", 0)))
            if g < 1000.0:
                gaps.append(max(g, 0.0))
    by_name = {}
    for e in kernels:
        if e.get("cat") == "kernel":
            by_name.setdefault(e["name"], []).append(float(e.get("dur", 0)))
    cv = {}
    for name, durs in by_name.items():
        if len(durs) < 8 or statistics.mean(durs) <= 0:
            continue
        cv.setdefault(classify(name), []).append(statistics.pstdev(durs) / statistics.mean(durs))
    return gaps, {c: statistics.median(v) for c, v in cv.items()}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/real/tracelens"
    if not os.path.isdir(root):
        print("no real traces in", root)
        return 77
    for f in sorted(os.listdir(root)):
        if not f.endswith(".json.gz"):
            continue
        gaps, cv = analyse(os.path.join(root, f))
        print("==", f)
        if gaps:
            p10, p50, p90, p99 = (quantile(gaps, q) for q in (0.1, 0.5, 0.9, 0.99))
            zero = sum(1 for g in gaps if g <= 0.0) / len(gaps)
            print(f"  gaps n={len(gaps)} zero={zero:.2f} p10={p10:.2f} p50={p50:.2f} "
                  f"p90={p90:.2f} p99={p99:.2f} us")
            if p50 > 0 and p90 > p50:
                sigma = math.log(p90 / p50) / 1.2816
                print(f"  lognormal fit (p50, p90): median={p50:.2f} us sigma={sigma:.3f} "
                      f"-> p99={p50 * math.exp(2.3263 * sigma):.2f} us")
        print("  cv by class: " + ", ".join(f"{c} {v:.3f}" for c, v in sorted(cv.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
