#!/bin/sh
# tests/style/test-format-tarball.sh — test-format.sh checks a tree that is
# not a git checkout (a release tarball) too: a misformatted file there
# fails it, and a tree without C files is a skip, not a pass. (It once read
# only `git ls-files`, found nothing outside git and passed.)
. tests/lib/tap.sh
if ! command -v clang-format >/dev/null 2>&1; then
    echo "ok 1 - test-format.sh outside git # SKIP clang-format not installed"
    echo "1..1"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree/src" "$tmp/tree/tests/lib" "$tmp/tree/tests/style"
cp .clang-format "$tmp/tree/"
cp tests/lib/tap.sh "$tmp/tree/tests/lib/"
cp tests/style/test-format.sh "$tmp/tree/tests/style/"
run() {
    (cd "$tmp/tree" && GIT_CEILING_DIRECTORIES="$tmp" sh tests/style/test-format.sh)
}
printf 'int  f( void ){return 1;}\n' >"$tmp/tree/src/bad.c"
out=$(run)
tap_is "a misformatted file outside git fails the check" "$(echo "$out" | grep -c '^not ok')" 1
printf 'int f(void) {\n    return 1;\n}\n' >"$tmp/tree/src/bad.c"
out=$(run)
tap_is "a well formatted one passes it" "$(echo "$out" | grep -c '^not ok')" 0
rm "$tmp/tree/src/bad.c"
out=$(run)
tap_ok "no C file at all is a skip with its reason" sh -c "echo '$out' | grep -q '# SKIP no C file'"
tap_done
