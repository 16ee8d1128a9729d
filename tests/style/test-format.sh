#!/bin/sh
# tests/style/test-format.sh — every C file in the tree is as .clang-format
# writes it: one house style, checked so that it stays one. The failure lists
# the files that differ; `make format` rewrites them.
. tests/lib/tap.sh
if ! command -v clang-format >/dev/null 2>&1; then
    echo "ok 1 - C files follow .clang-format # SKIP clang-format not installed"
    echo "1..1"
    exit 0
fi
bad=""
for f in $(git ls-files '*.c' '*.h'); do
    [ -f "$f" ] || continue
    clang-format --dry-run "$f" 2>&1 | grep -q . && bad="$bad $f"
done
tap_is "C files follow .clang-format" "$bad" ""
tap_done
