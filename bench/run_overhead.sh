#!/usr/bin/env bash
# Wall-time overhead of `teller run` on an NVTX-heavy program, in paired runs: the
# program alone (A) and under `teller run` (B) alternate, so drift in machine speed hits
# both; the figure to quote is the median of the per-pair ratios B/A.
# Usage: bench/run_overhead.sh [BUILD_DIR] [PAIRS] [STEPS] [OP_US]
set -euo pipefail
build=${1:-build}
pairs=${2:-11}
steps=${3:-150}
op_us=${4:-5}
heavy="$build/bin/nvtx_heavy"
teller="$build/bin/teller"
[ -x "$heavy" ] && [ -x "$teller" ] || { echo "build first: $heavy, $teller" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s%N; }
"$heavy" "$steps" "$op_us" >"$tmp/load.txt"  # warm-up, and the load it generates
for i in $(seq "$pairs"); do
  t0=$(now); "$heavy" "$steps" "$op_us" >/dev/null; t1=$(now)
  "$teller" run --out "$tmp/t$i" -- "$heavy" "$steps" "$op_us" >/dev/null 2>&1; t2=$(now)
  echo "$((t1 - t0)) $((t2 - t1))" >>"$tmp/pairs.txt"
  rm -rf "$tmp/t$i"
done
python3 - "$tmp/pairs.txt" "$tmp/load.txt" <<'PY'
import statistics, sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
a = [r[0] / 1e9 for r in rows]
b = [r[1] / 1e9 for r in rows]
ratios = [y / x for x, y in rows]
print(open(sys.argv[2]).read().strip())
print(f"pairs: {len(rows)}")
print(f"plain        wall s: min {min(a):.3f}  median {statistics.median(a):.3f}  max {max(a):.3f}")
print(f"teller run   wall s: min {min(b):.3f}  median {statistics.median(b):.3f}  max {max(b):.3f}")
print(f"ratio B/A per pair : min {min(ratios):.4f}  median {statistics.median(ratios):.4f}  max {max(ratios):.4f}")
print(f"overhead (median of ratios): {100 * (statistics.median(ratios) - 1):+.2f}%")
PY
