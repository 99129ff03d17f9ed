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
  libtorch-dev libopenblas0-pthread  # the learned stage (src/rca); OpenBLAS: reference BLAS is 14x slower
  libxgboost-dev xgboost  # the XGBoost baseline of teller eval (the CLI package makes find_package(xgboost) work)
  libopenmpi-dev openmpi-bin  # teller-mpi: diagnose with its import shared over MPI
  chromium nodejs    # the browser tests of the reports (tests/report): headless Chromium driven by node
)
# npm fetches speedscope below; NodeSource's nodejs carries its own npm (and conflicts with
# Debian's), so Debian's is only added when there is none.
command -v npm >/dev/null 2>&1 || packages+=(npm)
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

# speedscope, an offline trace-event viewer from npm, for the browser test of `teller export`
# (tests/report/browser_test.py): installed into a cache folder, never into the repository.
# Without the network the test skips.
npm_dir="${TELLER_NPM_DIR:-$HOME/.cache/teller/npm}"
if command -v npm >/dev/null 2>&1 &&
   [ ! -f "$npm_dir/node_modules/speedscope/dist/release/index.html" ]; then
  mkdir -p "$npm_dir"
  npm install --silent --no-audit --no-fund --prefix "$npm_dir" speedscope@1.25.0 ||
    echo "tools/setup.sh: speedscope not installed (no network?); its browser test will skip" >&2
fi
