#!/bin/sh
# test-queue-fields.sh — the copies of a queue's fields agree with the one
# list, GP_QUEUE_FIELDS (src/common/gp_queue.h), as queue-fields prints it:
# docs/api.md's queue table is the list's, row for row; the console's queue
# editing sends only its names; `gpupool help queue` and the shell
# completion offer exactly its flags, and the man page and docs/cli.md name
# no other; and each of gpupool queue's range checks is the daemon's: a
# value just past each bound of each flag that takes a number is a usage
# error (2) naming the flag, before anything is sent, and the same value in
# a body is refused by the daemon (400) naming the field, in the same words
# where the CLI's message is about the range (--min-runtime-max 8d,
# --reclaim-grace-max 25h and --idle-gpu-timeout 5s went to the daemon and
# came back as 6).
set -u
. tests/lib/tap.sh
. tests/daemon/lib.sh
fields=$B/tests/common/queue-fields

flags=$("$fields" flags | sort)
tap_ok "the list names flags" test -n "$flags"

doc=$(doc_table docs/api.md '| field | type | range | `gpupool queue` | meaning |')
tap_ok "docs/api.md's queue table is the list's" same_lines "$doc" "$("$fields" table)"

help=$("$GP" help queue | grep -oE -- '--[a-z][a-z-]*' | grep -vx -- '--json' | sort -u)
tap_ok "gpupool help queue offers the list's flags" same_lines "$help" "$flags"

completion=$(sed -n 's/^ *queue) COMPREPLY=(\$(compgen -W "\([^"]*\)".*/\1/p' contrib/gpupool.bash-completion |
    tr ' ' '\n' | grep -e '^--' | grep -vx -e '--json' | sort -u)
tap_ok "the shell completion offers the list's flags" same_lines "$completion" "$flags"

man=$(sed -n '/^\.B queue /,/^\.TP/p' contrib/gpupool.1 | sed 's/\\f[BIR]//g; s/\\-/-/g' |
    grep -oE -- '--[a-z][a-z-]*' | sort -u)
bad=$(printf '%s\n' "$man" | grep -vxF -e "$flags" | tr '\n' ' ')
tap_is "the man page's queue names only the list's flags" "$bad" ""

# The console's queue editing sends fields of the list, by resource.
sent=$(grep "api('PATCH', '/api/v1/queues/'" src/daemon/console/console.js |
    sed -n "s/.*encodeURIComponent(q.name), \(.*\));$/\1/p" | grep -oE "[a-z_]+:" | tr -d ':' | sort -u)
tap_ok "the console's queue editing sends fields" test -n "$sent"
bad=$(printf '%s\n' "$sent" | grep -vxF -e "$("$fields" names)" -e gpu -e cpu -e memory | tr '\n' ' ')
tap_is "the console sends only the list's names" "$bad" ""

cli_md=$(sed -n '/gpupool queue list/,/delete NAME/p' docs/cli.md | grep -oE -- '--[a-z][a-z-]*' | sort -u)
bad=$(printf '%s\n' "$cli_md" | grep -vxF -e "$flags" | tr '\n' ' ')
tap_is "docs/cli.md's queue names only the list's flags" "$bad" ""

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts" gpd_start "$D"
$GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
tap_is "a queue to change" "$?" 0

tab=$(printf '\t')
"$fields" past >"$TMP/past"
tap_ok "the list has bounds to pass" test -s "$TMP/past"
while IFS=$tab read -r flag value field body; do
    err=$($GP queue set proj "$flag" "$value" 2>&1 >/dev/null)
    rc=$?
    tap_ok "gpupool queue $flag $value is a usage error naming the flag" \
        sh -c '[ "$1" = 2 ] && printf "%s\n" "$2" | grep -qF -- "$3: "' - "$rc" "$err" "$flag"
    out=$(api PATCH /api/v1/queues/proj "$body")
    tap_ok "the daemon refuses $body, naming $field" contains "$out" "\"field\":\"$field\".* 400\$"
    # Where the CLI speaks of the range, the daemon says the same.
    why=$(printf '%s\n' "$err" |
        sed -n "s/^gpupool queue: $flag: \(.* is \(outside\|below\) .*\|must be above 0\)$/\1/p")
    if [ -n "$why" ]; then
        tap_ok "and in the same words: $why" contains "$out" "$field: $(printf '%s' "$why" | sed 's/[.[*^$]/\\&/g')"
    fi
done <"$TMP/past"
tap_ok "the project is as it was" \
    contains "$(api GET /api/v1/queues/proj)" '"idle_gpu_timeout":null.*200$'
tap_done
