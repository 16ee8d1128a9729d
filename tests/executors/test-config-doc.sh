#!/bin/sh
# test-config-doc.sh — each executor's keys, as its "unknown key" error
# lists them from its own key table, are the keys of its table in
# docs/executors.md: a key added to the code and not the doc, or the other
# way round, fails here (local.c had written its keys a third time, by
# hand, in that error).
set -u
build=${GP_BUILD:-build}
. tests/lib/tap.sh
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

# doc_keys EXECUTOR: the first column of the key table in the doc's section
# on EXECUTOR, sorted.
doc_keys() {
    awk -v s="## The \`$1\` executor" '
        $0 == s { on = 1; next }
        on && /^## / { exit }
        on && $0 == "| key | default | meaning |" { t = 1; next }
        t && !/^\|/ { exit }
        t && !/^\|---/ { split($0, c, "|"); gsub(/[ `]/, "", c[2]); print c[2] }
    ' docs/executors.md | sort
}

# code_keys EXECUTOR: the keys its error lists for an unknown one, sorted.
code_keys() {
    # (Bounded: an executor that took the key would start serving.)
    out=$(timeout 30 "$build/gpupoold" --data-dir "$D/$1" --listen 127.0.0.1:0 --executor "$1" \
        --executor-config no_such_key=1 2>&1)
    printf '%s\n' "$out" | sed -n "s/.*unknown key 'no_such_key' (expected \(.*\))$/\1/p" |
        sed 's/ or /, /' | tr ',' '\n' | sed 's/^ *//' | sort
}

for x in local slurm; do
    doc=$(doc_keys "$x")
    code=$(code_keys "$x")
    tap_ok "docs/executors.md has the $x executor's key table" test -n "$doc"
    tap_ok "the $x executor names its keys when refusing an unknown one" test -n "$code"
    tap_ok "the $x executor's keys are its table's in docs/executors.md" same_lines "$doc" "$code"
done
tap_done
