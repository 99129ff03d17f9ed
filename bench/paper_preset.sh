#!/usr/bin/env bash
# Times `teller simulate --preset paper` and `teller dataset build` on it (target: both
# together under 3 minutes on the 2-core development machine, using both cores), then
# prints the dataset's Table 1. Usage: bench/paper_preset.sh [BUILD_DIR] [SEED]
set -euo pipefail
build=${1:-build}
seed=${2:-1}
work=$(mktemp -d /tmp/teller-paper-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
t0=$(date +%s.%N)
"$build/bin/teller" simulate --preset paper --seed "$seed" --out "$work/raw" 2>/dev/null
t1=$(date +%s.%N)
"$build/bin/teller" dataset build "$work/raw" --out "$work/ds" 2>/dev/null
t2=$(date +%s.%N)
"$build/bin/teller" dataset stats "$work/ds"
bytes() { find "$work/ds" -name "$1" -print0 | du -cb --files0-from=- | tail -1 | cut -f1; }
echo "dataset on disk: $(du -sh "$work/ds" | cut -f1) (trace.json.gz: $(bytes trace.json.gz) bytes," \
  "steps.jsonl: $(bytes steps.jsonl), annotation.json: $(bytes annotation.json)," \
  "log.txt: $(bytes log.txt) bytes; target: at most 400 MB)"
python3 - "$t0" "$t1" "$t2" <<'PY'
import sys
t0, t1, t2 = map(float, sys.argv[1:])
print(f"simulate {t1 - t0:.1f} s, dataset build {t2 - t1:.1f} s, total {t2 - t0:.1f} s (target < 180 s)")
PY
