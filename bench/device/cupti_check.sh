#!/usr/bin/env bash
# Device check of the CUPTI collector (libteller_cupti.so). Not run by tests or CI:
# it needs a machine with an NVIDIA GPU, its driver, CUDA 13 and PyTorch with CUDA.
#
#   bench/device/cupti_check.sh [BUILD_DIR]     (default: build)
#
# Builds Teller (unless BUILD_DIR already holds bin/teller and lib/libteller_cupti.so),
# runs a small torch program under `teller run` (a few matmuls, host<->device copies, a
# memset, a CUDA graph captured once and replayed, synchronizations), dumps the trace
# and checks that kernels, memcpys, runtime launches and graph launches arrive, that
# the kernels of one graph replay share the replay's correlation id, and that GPU and
# API timestamps are on the same clock; then runs a program that SIGKILLs itself after
# its kernels and checks that they are in its trace (docs/cupti.md, "Activity buffers").
# Prints a summary; exits non-zero on a failed check. Runs in well under 3 minutes (the
# build dominates).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
OUT="$(mktemp -d /tmp/teller_cupti_check.XXXXXX)"
START=$(date +%s)

echo "== environment"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not available"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())'

if [[ -x "$BUILD/bin/teller" && -f "$BUILD/lib/libteller_cupti.so" ]]; then
  echo "== using prebuilt $BUILD"
else
  echo "== building into $BUILD"
  CUDA_ARGS=()
  [[ -d /usr/local/cuda ]] && CUDA_ARGS+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTELLER_WITH_CUDA=ON \
    -DTELLER_BUILD_TESTS=OFF -DTELLER_BUILD_BENCH=OFF "${CUDA_ARGS[@]}" >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target teller teller_inject teller_cupti >/dev/null
fi
test -f "$BUILD/lib/libteller_cupti.so" || { echo "FAIL: libteller_cupti.so not built"; exit 1; }

cat >"$OUT/workload.py" <<'PY'
import torch
assert torch.cuda.is_available(), "no CUDA device"
dev = torch.device("cuda")
a = torch.randn(1024, 1024, device=dev)
for _ in range(4):                       # plain launches
    a = torch.tanh(a @ a)
host = torch.randn(4 << 20).pin_memory()
d = host.to(dev, non_blocking=True)      # HtoD memcpy
back = d.cpu()                           # DtoH memcpy (synchronous)
z = torch.empty(1 << 20, dtype=torch.uint8, device=dev)
z.zero_()                                # memset or fill kernel, depending on torch

# CUDA graph: capture once, replay three times; each replay is one cudaGraphLaunch
# whose kernels all carry that launch's correlation id.
static_in = torch.randn(256, 256, device=dev)
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(2):                   # warm-up outside the capture (cuBLAS handles)
        out = torch.relu(static_in @ static_in).sin() + 1
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    out = torch.relu(static_in @ static_in).sin() + 1
for _ in range(3):
    graph.replay()
ev = torch.cuda.Event()
ev.record()
ev.synchronize()                         # event synchronize
torch.cuda.synchronize()                 # device/context synchronize
print("workload done", float(out.sum()))
PY

echo "== teller run"
TELLER_VERBOSE=1 timeout 120 "$BUILD/bin/teller" run --out "$OUT/trace" --python-hooks none -- \
  python3 "$OUT/workload.py"
echo "== teller dump"
timeout 60 "$BUILD/bin/teller" dump --meta "$OUT/trace" >"$OUT/dump.jsonl"
timeout 60 "$BUILD/bin/teller" dump --stats "$OUT/trace" || true

# The same guarantee as NVTX events: a program killed without exiting keeps what was
# converted before. With a 200 ms flush period, the kernels it ran and synchronized
# before sleeping for 2.5 periods must be in the trace, which must read without damage.
echo "== killed run (SIGKILL 2.5 flush periods after its kernels)"
cat >"$OUT/killed.py" <<'PY'
import os, signal, time
import torch
dev = torch.device("cuda")
a = torch.randn(512, 512, device=dev)
for _ in range(20):
    a = torch.tanh(a @ a)
torch.cuda.synchronize()
print("kernels done", flush=True)
time.sleep(2.5 * int(os.environ["TELLER_CUPTI_FLUSH_MS"]) / 1000)
os.kill(os.getpid(), signal.SIGKILL)
PY
TELLER_CUPTI_FLUSH_MS=200 timeout 120 "$BUILD/bin/teller" run --out "$OUT/killed" \
  --python-hooks none -- python3 "$OUT/killed.py" || true
timeout 60 "$BUILD/bin/teller" dump --meta "$OUT/killed" >"$OUT/killed.jsonl" || true
timeout 60 "$BUILD/bin/teller" dump --stats "$OUT/killed" >"$OUT/killed_stats.txt" 2>&1 || true
cat "$OUT/killed_stats.txt"

STATUS=0
python3 - "$OUT/dump.jsonl" "$OUT/killed.jsonl" "$OUT/killed_stats.txt" <<'PY' || STATUS=$?
import collections, json, sys


def read_dump(path):
    """(events, counters, clean_end) of a `teller dump --meta` output."""
    events, counters, clean = [], {}, None
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        e = json.loads(line)
        if e.get("kind") == "process":
            counters.update(e.get("counters", {}))
            clean = e.get("clean_end")
        else:
            events.append(e)
    return events, counters, clean


events, counters, _ = read_dump(sys.argv[1])
killed, _, killed_clean = read_dump(sys.argv[2])
killed_kernels = sum(1 for e in killed if e["kind"] == "kernel")
killed_launches = sum(1 for e in killed if e["kind"] in ("cuda_runtime", "cuda_driver")
                      and "Launch" in e["name"])
killed_stats = open(sys.argv[3]).read()

by_kind = collections.Counter(e["kind"] for e in events)
api = [e for e in events if e["kind"] in ("cuda_runtime", "cuda_driver")]
kernels = [e for e in events if e["kind"] == "kernel"]
memcpys = [e for e in events if e["kind"] == "memcpy"]
launch_names = collections.Counter(e["name"] for e in api if "Launch" in e["name"])
graph_launch_corr = {e["correlation"] for e in api if "GraphLaunch" in e["name"]}
graph_kernels = collections.defaultdict(list)
for k in kernels:
    if k.get("graph_id"):
        graph_kernels[k["correlation"]].append(k)
multi = {c: ks for c, ks in graph_kernels.items() if len(ks) >= 2}
multi_matched = [c for c in multi if c in graph_launch_corr]

# Clock: a kernel starts after the API call that launched it, and not long after.
api_start = {}
for e in api:
    api_start.setdefault(e["correlation"], e["ts_ns"])
lags = [k["ts_ns"] - api_start[k["correlation"]] for k in kernels
        if k["correlation"] in api_start and k["ts_ns"]]
bad_lags = [l for l in lags if l < -1_000_000 or l > 60_000_000_000]
nested = sum(1 for e in api if e.get("nested"))

print("== summary")
print("events by kind:", dict(sorted(by_kind.items())))
print("launch APIs:", dict(launch_names.most_common(8)))
print("graph launches:", len(graph_launch_corr), "| graph kernels:",
      sum(len(v) for v in graph_kernels.values()),
      "| correlations with >=2 graph kernels:", len(multi),
      "| of which match a graph launch:", len(multi_matched))
print("nested driver calls:", nested)
if lags:
    lags.sort()
    print("kernel start - launch start (us): min %.1f median %.1f max %.1f" %
          (lags[0] / 1e3, lags[len(lags) // 2] / 1e3, lags[-1] / 1e3))
print("counters:", {k: v for k, v in counters.items() if k.startswith("cupti")})
print("killed run: kernels", killed_kernels, "| launch calls", killed_launches,
      "| clean end", killed_clean)

checks = [
    ("cupti active", counters.get("cupti_active", 0) >= 1),
    ("kernels recorded", len(kernels) > 0),
    ("memcpys recorded", len(memcpys) >= 2),
    ("runtime launch calls recorded",
     any(("cudaLaunchKernel" in n) for n in launch_names)),
    ("graph launch recorded", len(graph_launch_corr) >= 3),
    ("graph kernels share one correlation id with their graph launch", len(multi_matched) >= 1),
    ("kernel and API timestamps on one clock", bool(lags) and not bad_lags),
    ("no CUPTI records dropped", counters.get("cupti_records_dropped", 0) == 0),
    ("killed run: the process did not end cleanly", killed_clean is False),
    ("killed run: launch calls before the kill recorded (>= 40)", killed_launches >= 40),
    ("killed run: kernels flushed before the kill recorded (>= 40)", killed_kernels >= 40),
    ("killed run: the trace reads without damage", "damage:" not in killed_stats),
]
failed = 0
for name, ok in checks:
    print(("PASS " if ok else "FAIL ") + name)
    failed += not ok
sys.exit(1 if failed else 0)
PY
echo "== done in $(( $(date +%s) - START )) s; traces in $OUT/trace and $OUT/killed"
exit $STATUS
