#!/usr/bin/env bash
# Formats the C/C++ sources with the repository's .clang-format, in place.
#   tools/format.sh          rewrite every file that is not formatted
#   tools/format.sh --check  change nothing; list the differences and exit 1 if any
# The files are the tracked ones (git ls-files) in a git checkout, otherwise those found
# under the source folders. clang-format 14 (Debian 12's) is required: other versions
# format some constructs differently, so their verdict would not match CI's. Without it
# the check exits 77, which ctest reports as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=fix
case "${1:-}" in
  --check) mode=check ;;
  "") ;;
  *) echo "usage: tools/format.sh [--check]" >&2; exit 2 ;;
esac

clang_format=""
for c in "${CLANG_FORMAT:-}" clang-format-14 clang-format; do
  [ -n "$c" ] || continue
  if command -v "$c" >/dev/null 2>&1 &&
     "$c" --version | grep -Eq 'clang-format version 14\.'; then
    clang_format=$c
    break
  fi
done
if [ -z "$clang_format" ]; then
  echo "tools/format.sh: clang-format 14 not found (Debian: apt-get install clang-format)" >&2
  exit 77
fi

# Generated or configure-time templates (*.in) are not C++ until CMake fills them in.
pattern='\.(c|cc|cpp|h|hpp)$'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- src include tests bench demo tools | grep -E "$pattern")
else
  mapfile -t files < <(find src include tests bench demo tools -type f 2>/dev/null |
                       grep -E "$pattern" | sort)
fi
if ((${#files[@]} == 0)); then
  echo "tools/format.sh: no C/C++ sources found (neither a git checkout nor a source tree)" >&2
  exit 77
fi

if [ "$mode" = check ]; then
  # --dry-run -Werror prints every change clang-format would make as a warning with its
  # position and exits non-zero when there is one.
  if "$clang_format" --style=file --dry-run -Werror "${files[@]}"; then
    echo "${#files[@]} files formatted as .clang-format asks"
  else
    echo "tools/format.sh: files above are not formatted; run tools/format.sh" >&2
    exit 1
  fi
else
  "$clang_format" --style=file -i "${files[@]}"
fi
