#!/usr/bin/env bash
# Recall of the request-scoped scheduling faults, starvation and misroute, with and without
# the logs. Per seed, every profile is simulated with one of each planted (small
# deployments), the runs become one dataset (a dataset holds one setting per profile), and
# teller-numeric is scored on all of its units (the run split holds each setting out once)
# twice: as `teller diagnose` runs, and with `--without-logs`. Prints the recall per
# mechanism and view summed over the seeds, both ways, and the false alarms on healthy units.
# Usage: bench/logs/request_faults.sh [BUILD_DIR] [SEEDS] [REQUESTS]
#   e.g. bench/logs/request_faults.sh build "1 2 3" 40
set -euo pipefail
build=${1:-build}
seeds=${2:-1 2 3}
requests=${3:-40}
teller="$build/bin/teller"
work=$(mktemp -d /tmp/teller-request-faults.XXXXXX)
trap 'rm -rf "$work"' EXIT
for seed in $seeds; do
  for profile in vllm-v1-online vllm-v1-offline vllm-v0 sglang torch-fsdp; do
    # Misroute acts on requests admitted while it lasts, starvation on those arriving
    # while it lasts (docs/simulator.md); the two windows do not overlap.
    "$teller" simulate --profile "$profile" --requests "$requests" --seed "$seed" \
      --nodes 1 --gpus-per-node 2 --tp 2 --pp 1 --layers 4 \
      --fault misroute:onset=1s,duration=2s \
      --fault starvation:onset=4s,duration=2s,magnitude=2 \
      --out "$work/raw-$seed/$profile" >/dev/null 2>&1
  done
  "$teller" dataset build "$work/raw-$seed" --out "$work/ds-$seed" -q --jobs 2 >/dev/null
  "$teller" eval --data "$work/ds-$seed" --method teller-numeric --split run -q \
    --report "$work/with-$seed" >/dev/null
  "$teller" eval --data "$work/ds-$seed" --method teller-numeric --split run -q \
    --without-logs --report "$work/without-$seed" >/dev/null
done
python3 - "$work" $seeds <<'PY'
import csv, sys, collections
work, seeds = sys.argv[1], sys.argv[2:]
sums = {m: collections.Counter() for m in ("with", "without")}
positives = collections.Counter()
for mode in sums:
    for seed in seeds:
        with open(f"{work}/{mode}-{seed}/mechanism_recall.csv") as f:
            for row in csv.DictReader(f):
                key = (row["mechanism"], row["view"])
                sums[mode][key] += int(row["detected"])
                if mode == "with":
                    positives[key] += int(row["positives"])
print(f"teller-numeric, seeds {' '.join(seeds)}: test units flagged / labelled abnormal")
print(f"{'mechanism':<22} {'view':<11} {'with logs':>12} {'without logs':>14}")
for key in sorted(positives, key=lambda k: (k[0] == "healthy", k)):
    n = positives[key]
    if n == 0:
        continue
    cells = [f"{sums[m][key]}/{n} ({100 * sums[m][key] / n:.0f}%)" for m in ("with", "without")]
    name = key[0] if key[0] != "healthy" else "healthy (false alarms)"
    print(f"{name:<22} {key[1]:<11} {cells[0]:>12} {cells[1]:>14}")
PY
