#!/usr/bin/env bash
# Makes a seed corpus for the raw reader fuzzer from a real trace: runs the NVTX workload
# under `teller run` and keeps its (small) raw files. Usage: seed_corpus.sh TELLER WORKLOAD OUT
set -euo pipefail
teller=$1 workload=$2 out=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
"$teller" run --python-hooks none --out "$tmp/t" -- "$workload" killed >/dev/null 2>&1 || true
for f in "$tmp"/t/*.tlr; do cp "$f" "$out/$(basename "$f")"; done
