#!/bin/sh
# Compares what two teller binaries print for every Kineto trace of the real-trace set:
# `inspect`, `inspect --json` and `inspect --tree`, and the exit status of each, file by
# file (a change to the importer must not change any of them, errors included). Also a
# file given through a pipe (/dev/stdin) and, when present, the 8-rank folder as one trace.
#
#   bench/ingest/compare_inspect.sh NEW_BIN REF_BIN [REAL_DATA_DIR]
#
# REAL_DATA_DIR defaults to ../shared/data/real beside the checkout. Prints one line per
# file and view, "same" or "DIFFERENT" (with the first lines of the diff), then a total;
# exits 1 when anything differs.
set -u
new=$1
ref=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
data=${3:-$here/../shared/data/real}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
same=0
different=0

run_views() {  # label, then the trace arguments
  label=$1
  shift
  for view in plain json tree; do
    case $view in
      plain) flags= ;;
      json) flags=--json ;;
      tree) flags=--tree ;;
    esac
    # shellcheck disable=SC2086  # flags is one word or none
    "$new" inspect "$@" $flags >"$tmp/new" 2>&1
    echo "exit $?" >>"$tmp/new"
    # shellcheck disable=SC2086
    "$ref" inspect "$@" $flags >"$tmp/ref" 2>&1
    echo "exit $?" >>"$tmp/ref"
    # Timings are the only figures allowed to differ.
    for f in new ref; do
      sed -E 's/"(parse|import|reconstruct|total)_seconds": ?[0-9.e+-]+/"\1_seconds":T/g;
              s/[0-9]+\.[0-9]+ ?s\b/T s/g' "$tmp/$f" >"$tmp/$f.cmp"
    done
    if cmp -s "$tmp/new.cmp" "$tmp/ref.cmp"; then
      same=$((same + 1))
      echo "same       $view $label"
    else
      different=$((different + 1))
      echo "DIFFERENT  $view $label"
      diff "$tmp/ref.cmp" "$tmp/new.cmp" | head -5
    fi
  done
}

for f in $(find "$data/hta" "$data/kineto" "$data/tracelens" "$data/param_dlrm_8rank" \
             -name '*.json' -o -name '*.json.gz' | sort); do
  run_views "${f#"$data"/}" "$f"
done
if [ -d "$data/param_dlrm_8rank" ]; then
  run_views "param_dlrm_8rank (folder)" "$data/param_dlrm_8rank"
fi
# Through a pipe (the whole input held, then streamed out of memory): a gzip and a plain
# trace.
for f in $(find "$data/hta" -name '*.json.gz' | sort | head -1) \
         $(find "$data/hta" "$data/kineto" -name '*.json' | sort | head -1); do
  for bin in new ref; do
    eval b=\$$bin
    cat "$f" | "$b" inspect /dev/stdin --json >"$tmp/$bin" 2>&1
    echo "exit $?" >>"$tmp/$bin"
    sed -E 's/"(parse|import|reconstruct|total)_seconds": ?[0-9.e+-]+/"\1_seconds":T/g' \
      "$tmp/$bin" >"$tmp/$bin.cmp"
  done
  if cmp -s "$tmp/new.cmp" "$tmp/ref.cmp"; then
    same=$((same + 1))
    echo "same       json (pipe) ${f#"$data"/}"
  else
    different=$((different + 1))
    echo "DIFFERENT  json (pipe) ${f#"$data"/}"
    diff "$tmp/ref.cmp" "$tmp/new.cmp" | head -5
  fi
done
echo "$same same, $different different"
[ "$different" -eq 0 ]
