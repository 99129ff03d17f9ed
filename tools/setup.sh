#!/usr/bin/env bash
# Installs the Debian packages Teller builds and tests with (Debian 12). Idempotent.
# The CUDA toolkit (NVTX headers, CUPTI) is optional and not a Debian package here: it is
# used from /usr/local/cuda when present.
set -euo pipefail
packages=(
  build-essential cmake pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-jsonschema   # the diagnosis report test validates against docs/diagnosis.schema.json
  python3-torch      # CPU PyTorch: the Python hooks' real-framework test (tests/collect/python)
  zlib1g-dev libdeflate-dev libsimdjson-dev libsqlite3-dev sqlite3
  clang libclang-rt-14-dev   # fuzz targets (libFuzzer) and the sanitizer sub-builds
  clang-format               # the format test (tools/format.sh --check)
  libarmadillo-dev   # kmeans and Gaussian-mixture baselines of teller eval
  sentencepiece      # spm_train: the reference in bench/tpe_benchmark
  libxgboost-dev xgboost  # the XGBoost baseline of teller eval (the CLI package makes find_package(xgboost) work)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
