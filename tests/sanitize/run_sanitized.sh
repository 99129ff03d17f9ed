#!/usr/bin/env bash
# Runs a command with the sanitizers' reports written to files, and fails when any
# sanitized process wrote one.
#   run_sanitized.sh REPORT_DIR COMMAND [ARGS...]
# Many tests start teller or a traced program as a child and keep only part of its
# stderr; a report in a child would then be lost, or only show as an unexplained exit
# status. With log_path every sanitized process, however deep, writes REPORT_DIR/report.PID,
# which this script prints after the command. The caller's *SAN_OPTIONS are kept;
# log_path is added last so that it wins.
set -uo pipefail
if (($# < 2)); then
  echo "usage: run_sanitized.sh REPORT_DIR COMMAND [ARGS...]" >&2
  exit 2
fi
report_dir=$1
shift
rm -rf "$report_dir"
mkdir -p "$report_dir"
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS; do
  export "$v=${!v:+${!v}:}log_path=$report_dir/report"
done

"$@"
rc=$?

# Every finding of ASan, LSan, UBSan and TSan ends with a SUMMARY line. A file without
# one holds only notes (LSan's "Running thread ... was not suspended" when a thread exits
# during the leak check): printed, but not a failure.
shopt -s nullglob
findings=0
for r in "$report_dir"/report.*; do
  echo "==== sanitizer output $r"
  cat "$r"
  if grep -q '^SUMMARY: ' "$r"; then findings=$((findings + 1)); fi
done
if ((findings)); then
  echo "run_sanitized.sh: $findings process(es) with sanitizer findings (command exit status $rc)" >&2
  exit 1
fi
exit "$rc"
