#!/bin/sh
# tests/style/test-format.sh — every C file in the tree is as .clang-format
# writes it: one house style, checked so that it stays one. The failure lists
# the files that differ; `make format` rewrites them. In a git checkout the
# files are git's; outside one (a release tarball) every C file under the
# source directories; a tree with neither is reported as skipped, never as
# passed.
. tests/lib/tap.sh
if ! command -v clang-format >/dev/null 2>&1; then
    echo "ok 1 - C files follow .clang-format # SKIP clang-format not installed"
    echo "1..1"
    exit 0
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files '*.c' '*.h')
else
    files=$(find src tests bench fuzz examples -name '*.[ch]' 2>/dev/null | sort)
fi
if [ -z "$files" ]; then
    echo "ok 1 - C files follow .clang-format # SKIP no C file found (neither git nor src/)"
    echo "1..1"
    exit 0
fi
bad=""
for f in $files; do
    [ -f "$f" ] || continue
    clang-format --dry-run "$f" 2>&1 | grep -q . && bad="$bad $f"
done
tap_is "C files follow .clang-format" "$bad" ""
tap_done
