#!/usr/bin/env bash
# Recall of the request-scoped scheduling faults, starvation and misroute, with and without
# the logs: every profile is simulated with one of each planted (small deployments, a few
# seeds), the runs become one dataset, and teller-numeric is scored on all of its units
# (the run split holds each setting out once) twice: as `teller diagnose` runs, and with
# `--without-logs`. Prints both recall-per-mechanism tables.
# Usage: bench/logs/request_faults.sh [BUILD_DIR] [SEEDS] [REQUESTS]
#   e.g. bench/logs/request_faults.sh build "1 2 3" 48
set -euo pipefail
build=${1:-build}
seeds=${2:-1 2 3}
requests=${3:-48}
teller="$build/bin/teller"
work=$(mktemp -d /tmp/teller-request-faults.XXXXXX)
trap 'rm -rf "$work"' EXIT
for profile in vllm-v1-online vllm-v1-offline vllm-v0 sglang torch-fsdp; do
  for seed in $seeds; do
    # Misroute acts on requests admitted while it lasts, starvation on those arriving
    # while it lasts (docs/simulator.md); the two windows do not overlap.
    "$teller" simulate --profile "$profile" --requests "$requests" --seed "$seed" \
      --nodes 1 --gpus-per-node 2 --tp 2 --pp 1 --layers 4 \
      --fault misroute:onset=1s,duration=2s \
      --fault starvation:onset=4s,duration=2s,magnitude=2 \
      --out "$work/raw/$profile-s$seed" >/dev/null 2>&1
  done
done
"$teller" dataset build "$work/raw" --out "$work/ds" -q --jobs 2
for mode in with without; do
  flag=""
  [ "$mode" = without ] && flag="--without-logs"
  echo "== teller-numeric, $mode logs =="
  "$teller" eval --data "$work/ds" --method teller-numeric --split run $flag -q \
    | sed -n '/Recall per fault mechanism/,/^$/p'
done
