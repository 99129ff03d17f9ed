#!/usr/bin/env bash
# teller-mpi against teller: `mpirun -np N teller-mpi diagnose ARGS` must print and write
# exactly what `teller diagnose ARGS` does, for N = 1, 2 and 4 (4 oversubscribed on a
# machine of fewer cores), on a simulated multi-node run with its logs and a baseline
# (two imports, .tlr files and logs), on the real 8-rank Kineto folder when present, and
# on a folder with a broken rank file (the same error and exit status, and no process
# left waiting).
# usage: mpi_diagnose_test.sh TELLER TELLER_MPI MPIRUN REAL_DATA_DIR WORK_DIR
set -u
teller=$1 teller_mpi=$2 mpirun=$3 real=$4 work=$5
rm -rf "$work" && mkdir -p "$work"
# Root in a container is the common case for CI; Open MPI refuses it unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failures=0

# compare NAME EXPECTED_STATUS ARGS...: single process against 1, 2 and 4 processes.
compare() {
  local name=$1 expected=$2
  shift 2
  local dir=$work/$name
  mkdir -p "$dir"
  (cd "$dir" && "$teller" diagnose "$@" --json report.json >single.out 2>single.err)
  local status=$?
  if [ "$status" != "$expected" ]; then
    echo "FAIL $name: teller diagnose exited $status, expected $expected"; cat "$dir/single.err"
    failures=$((failures + 1)); return
  fi
  for np in 1 2 4; do
    mkdir -p "$dir/np$np"
    (cd "$dir/np$np" && timeout 300 "$mpirun" --oversubscribe -np "$np" "$teller_mpi" diagnose "$@" \
      --json report.json >mpi.out 2>mpi.err)
    status=$?
    if [ "$status" != "$expected" ]; then
      echo "FAIL $name: mpirun -np $np teller-mpi exited $status, expected $expected"
      cat "$dir/np$np/mpi.err"; failures=$((failures + 1)); continue
    fi
    if ! cmp -s "$dir/single.out" "$dir/np$np/mpi.out"; then
      echo "FAIL $name: -np $np printed another report"; diff "$dir/single.out" "$dir/np$np/mpi.out" | head -20
      failures=$((failures + 1))
    fi
    if [ -f "$dir/report.json" ] && ! cmp -s "$dir/report.json" "$dir/np$np/report.json"; then
      echo "FAIL $name: -np $np wrote another JSON report"; failures=$((failures + 1))
    fi
    # An error is reported once, by process 0, as teller diagnose words it.
    if [ "$expected" != 0 ] && ! grep -qF "$(cat "$dir/single.err")" "$dir/np$np/mpi.err"; then
      echo "FAIL $name: -np $np reported another error:"; cat "$dir/np$np/mpi.err"
      failures=$((failures + 1))
    fi
    echo "ok $name -np $np"
  done
}

# Two nodes of three GPUs, one GPU's GEMMs slowed; the healthy run as baseline.
"$teller" simulate --profile vllm-v1-online --requests 12 --seed 7 --layers 4 --output-median 12 \
  --fault kernel_slow_one_gpu:target=gemm,magnitude=3,onset=0.2s,duration=0.3s,rank=1 \
  --out "$work/run" >/dev/null || { echo "FAIL: teller simulate"; exit 1; }
"$teller" simulate --profile vllm-v1-online --requests 12 --seed 8 --layers 4 --output-median 12 \
  --out "$work/healthy" >/dev/null || { echo "FAIL: teller simulate"; exit 1; }
ls "$work/run"/*.tlr >/dev/null || { echo "FAIL: no .tlr files"; exit 1; }
compare simulated 0 "$work/run" --baseline "$work/healthy"

if [ -d "$real/param_dlrm_8rank" ]; then
  compare dlrm_8rank 0 "$real/param_dlrm_8rank"
  # The third of eight rank files cut short: the import's error, whichever process read it.
  mkdir -p "$work/broken"
  i=0
  for f in "$real"/param_dlrm_8rank/*.json*; do
    if [ $i = 2 ]; then
      head -c 2000 "$f" >"$work/broken/$(basename "$f")"
    else
      cp "$f" "$work/broken/"
    fi
    i=$((i + 1))
  done
  compare broken 1 "$work/broken"
else
  echo "skipped the real 8-rank folder: $real/param_dlrm_8rank not found"
fi

[ $failures = 0 ] && echo "all reports identical" && exit 0
exit 1
