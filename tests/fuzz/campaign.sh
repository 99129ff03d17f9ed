#!/usr/bin/env bash
# A fuzz campaign: every importer's libFuzzer target for a fixed number of executions over
# a corpus kept between runs, so that campaigns add up across sittings. The fuzzers are
# the ones the test suite builds (BUILD/fuzz); the seeds are the same small real inputs.
#
# Usage: tests/fuzz/campaign.sh BUILD REAL_DATA WORK RUNS [TARGET...]
#   BUILD      the CMake build folder (BUILD/fuzz/*_fuzzer, BUILD/bin/teller)
#   REAL_DATA  ../shared/data/real (seeds; missing seeds are skipped)
#   WORK       the campaign folder: WORK/<target>/corpus, crash artifacts and logs
#   RUNS       executions per target this time (libFuzzer -runs)
#   TARGET     any of kineto kineto_stream nsys log raw (default: all five)
# Prints one line per target: executions, seconds, executions per second, corpus size,
# and the crash artifact if the target stopped on one; WORK/campaign.tsv keeps every run.
set -uo pipefail
if [ $# -lt 4 ]; then
  sed -n '4,12p' "$0" >&2
  exit 2
fi
build=$1 real=$2 work=$3 runs=$4
shift 4
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(kineto kineto_stream nsys log raw)
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
status=0
for target in "${targets[@]}"; do
  case $target in
    kineto) exe=kineto_importer_fuzzer
            seeds=("$real/kineto/after_fix_trace.json" "$real/hta/call_stack__backward_thread.json") ;;
    kineto_stream) exe=kineto_stream_fuzzer
            seeds=("$real/kineto/after_fix_trace.json" "$real/hta/call_stack__backward_thread.json") ;;
    nsys) exe=nsys_importer_fuzzer; seeds=() ;;
    log) exe=log_importer_fuzzer
         seeds=("$real/vllm_logs/production-stack_router.log" "$real/vllm_logs/production-stack_vllm_server.log") ;;
    raw) exe=raw_reader_fuzzer; seeds=() ;;
    *) echo "campaign.sh: unknown target '$target' (kineto kineto_stream nsys log raw)" >&2; exit 2 ;;
  esac
  fuzzer=$build/fuzz/$exe
  if [ ! -x "$fuzzer" ]; then
    echo "campaign.sh: $fuzzer not built (clang++ and the NVTX headers are needed)" >&2
    exit 2
  fi
  dir=$work/$target
  mkdir -p "$dir/corpus" "$dir/artifacts"
  for s in "${seeds[@]}"; do [ -f "$s" ] && cp -f "$s" "$dir/corpus/"; done
  [ "$target" = nsys ] && python3 "$here/nsys_seeds.py" "$real/nsys_pipit" "$dir/corpus"
  if [ "$target" = raw ] && [ -x "$build/bin/nvtx_workload" ]; then
    "$here/seed_corpus.sh" "$build/bin/teller" "$build/bin/nvtx_workload" "$dir/corpus"
  fi
  log=$dir/$(date -u +%Y%m%dT%H%M%S).log
  start=$(date +%s.%N)
  # A temp folder of the fuzzer's own: the nsys target writes its input to a file there.
  TMPDIR=$dir "$fuzzer" -runs="$runs" -max_len=65536 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(python3 -c "print(round($end - $start))")
  rate=$(python3 -c "print(round(${execs:-0} / max($end - $start, 1e-9)))")
  corpus=$(find "$dir/corpus" -type f | wc -l)
  crash=""
  if grep -q "libFuzzer: run interrupted" "$log"; then
    crash="interrupted (signal), see $log"  # stopped from outside: not a finding
  elif [ $rc -ne 0 ]; then
    crash=$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | sed 's/Test unit written to //')
    [ -z "$crash" ] && crash="exit $rc, see $log"
    status=1
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "${execs:-0}" "$secs" \
    "$rate" "$corpus" "${crash:--}" | tee -a "$work/campaign.tsv"
done
exit $status
