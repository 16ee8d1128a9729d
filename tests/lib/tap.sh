# tests/lib/tap.sh — TAP helpers for gpupool's shell tests (source this file).
#
#   tap_ok "name" command args...   runs the command; ok if it exits 0
#   tap_is "name" got expected      ok if the two strings are equal
#   tap_skip "reason"               one test that cannot run here, and why
#   tap_done                        prints the plan; exits non-zero on failure
#   same_lines "text" "reference"   succeeds if the two are equal; otherwise
#                                   prints the lines that differ (< text's,
#                                   > reference's) as TAP comments (for tap_ok)
tap_n=0
tap_failed=0
tap_ok() {
    name=$1
    shift
    tap_n=$((tap_n + 1))
    if "$@"; then echo "ok $tap_n - $name"; else
        echo "not ok $tap_n - $name"
        tap_failed=$((tap_failed + 1))
    fi
}
tap_is() {
    tap_n=$((tap_n + 1))
    if [ "$2" = "$3" ]; then echo "ok $tap_n - $1"; else
        echo "not ok $tap_n - $1"
        echo "#   got:      '$2'"
        echo "#   expected: '$3'"
        tap_failed=$((tap_failed + 1))
    fi
}
tap_skip() {
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - # SKIP $1"
}
same_lines() {
    [ "$1" = "$2" ] && return 0
    same_tmp=$(mktemp -d)
    printf '%s\n' "$1" >"$same_tmp/text"
    printf '%s\n' "$2" >"$same_tmp/reference"
    diff "$same_tmp/text" "$same_tmp/reference" | grep '^[<>]' | sed 's/^/# /'
    rm -rf "$same_tmp"
    return 1
}
# doc_table FILE HEADER: the Markdown table of FILE whose header row is
# HEADER, from that row to the first line that is not a row.
doc_table() {
    awk -v h="$2" '$0 == h { on = 1 } on && !/^\|/ { exit } on { print }' "$1"
}
tap_done() {
    echo "1..$tap_n"
    [ "$tap_failed" = 0 ]
}
