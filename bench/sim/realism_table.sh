#!/bin/sh
# The realism table: each simulator profile against its nearest real trace of the
# optional real-trace set (docs/realism.md). Usage: bench/sim/realism_table.sh [TELLER] [REAL_DIR]
# Prints one report per pair; exits 77 when the real traces are absent.
T=${1:-build/bin/teller}
R=${2:-../shared/data/real/tracelens}
# The device of each real trace (--gpu) and --realistic; BEFORE=1 leaves them out (for a simulator that
# has no --gpu); NOSTACK=1 runs --realistic without the host stack (--shape-kernels
# --realistic-timing); ONLY=label-substring runs one pair.
if [ -z "$BEFORE" ]; then MI300="--gpu mi300"; B200="--gpu b200"; REALISTIC=--realistic; fi
if [ -n "$NOSTACK" ]; then REALISTIC="--shape-kernels --realistic-timing"; fi
[ -d "$R" ] || { echo "no real traces in $R"; exit 77; }
one() {  # label profile topology... -- trace
  label=$1; shift; trace=$1; shift
  case "$label" in *"$ONLY"*) ;; *) return 0 ;; esac
  echo "=== $label vs $(basename "$trace")"
  "$T" simulate --seed 1 $REALISTIC "$@" --compare "$R/$trace" || echo "(failed)"
}
one "sglang TP1" inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz \
  --profile sglang --nodes 1 --gpus-per-node 1 --tp 1 --pp 1 $MI300
one "sglang TP1 prefill+decode" inference__sglang_prefilldecode__sglang_Qwen3-8B_prefilldecode.json.gz \
  --profile sglang --nodes 1 --gpus-per-node 1 --tp 1 --pp 1 $MI300
one "vllm-v1-online TP1" inference__vllm_decode_full__graph_execution.json.gz \
  --profile vllm-v1-online --nodes 1 --gpus-per-node 1 --tp 1 --pp 1 $MI300
one "vllm-v1-online TP1 piecewise" inference__vllm_prefilldecode_piecewise__graph_execution.json.gz \
  --profile vllm-v1-online --nodes 1 --gpus-per-node 1 --tp 1 --pp 1 $MI300
one "vllm-v1-online TP8" b200__eager_trace.json.gz \
  --profile vllm-v1-online --nodes 1 --gpus-per-node 8 --tp 8 --pp 1 $B200
one "vllm-moe TP8" b200__eager_trace.json.gz \
  --profile vllm-moe --nodes 1 --gpus-per-node 8 --tp 8 --pp 1 $B200
one "vllm-v0 TP1" h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz \
  --profile vllm-v0 --nodes 1 --gpus-per-node 1 --tp 1 --pp 1
# The HF traces are one forward over a prompt (ProfilerStep#6, no step kind, so nothing is
# filtered): their pairs again with prefill-only requests (one output token).
one "vllm-v0 TP1 prefill" h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz \
  --profile vllm-v0 --nodes 1 --gpus-per-node 1 --tp 1 --pp 1 --output-median 1
one "torch-fsdp 1 GPU" mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz \
  --profile torch-fsdp --nodes 1 --gpus-per-node 1 --tp 1 --pp 1 $MI300
one "torch-fsdp 1 GPU prefill" mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz \
  --profile torch-fsdp --nodes 1 --gpus-per-node 1 --tp 1 --pp 1 $MI300 --output-median 1
