#!/bin/sh
# test-doc-tables.sh — the tables the docs copy from gpupoold are what it
# prints, row for row: docs/api.md's routes (`gpupoold --routes`, from the
# route list in api.h; 3 of 26 rows had drifted: ?order= and ?cursor= missing,
# the /nodes and /usage texts differing) and docs/daemon.md's settings
# (`gpupoold --settings`, from config.c's list; the doc's prose had said a
# client address holds 64 connections where the daemon allowed 128), and
# docs/api.md's error statuses (`gpupoold --errors`, from http.c's map; the
# doc lacked 429, 503 for GP_EAGAIN and 504), and its event kinds
# (`gpupoold --events`, from daemon.h's list). Then
# the settings list itself: --help names every flag of it, and a value past
# a bound of each kind is refused naming the flag; the man page names
# every flag; the shipped configuration file's commented defaults are the
# defaults.
set -u
build=${GP_BUILD:-build}
. tests/lib/tap.sh
has() { case "$1" in *"$2"*) return 0 ;; esac; return 1; }

# doc_is FLAG DOC HEADER: DOC's table under HEADER is gpupoold FLAG's output.
doc_is() {
    printed=$("$build/gpupoold" "$1")
    tap_is "gpupoold $1 exits 0" "$?" 0
    table=$(doc_table "$2" "$3")
    tap_ok "$2 has the table of gpupoold $1" test -n "$table"
    tap_ok "$2's table is gpupoold $1" same_lines "$table" "$printed"
}
doc_is --routes docs/api.md '| method | path | least role | what it does |'
doc_is --errors docs/api.md '| code | status |'
doc_is --events docs/api.md '| event | what happened |'
doc_is --settings docs/daemon.md '| flag | value | default | range | what |'
settings=$printed

help=$("$build/gpupoold" --help)
missing=""
for flag in $(printf '%s\n' "$settings" | sed -n 's/^| `\(--[a-z-]*\)` .*/\1/p'); do
    printf '%s\n' "$help" | grep -q -- "^  $flag\b" || missing="$missing $flag"
done
tap_is "gpupoold --help names every setting" "$missing" ""

# --help names each flag that prints a table, from the same list as the
# flag's action (main.c); each prints a table.
tables=$(printf '%s\n' "$help" | sed -E ':a; $!N; s/\n {27}/ /; ta; P; D' |
    sed -n 's/^  \(--[a-z-]*\) .*print .* as a table and exit.*/\1/p')
tap_ok "--help names the flags that print tables" test "$(printf '%s\n' "$tables" | wc -l)" -ge 4
for flag in $tables; do
    tap_ok "gpupoold $flag prints a table" sh -c "'$build/gpupoold' $flag | grep -q '^|---|'"
done

# The man page names every flag --help names, and no other (it gave
# defaults of its own, one of them wrong: 64 connections per address).
man=$(sed -n '/^\.SH OPTIONS/,/^\.SH FILES/p' contrib/gpupoold.8 | sed 's/\\-/-/g' |
    grep -oE -- '--[a-z][a-z-]*' | sort -u)
flags=$(printf '%s\n' "$help" | sed -n 's/^  \(--[a-z][a-z-]*\).*/\1/p' | sort -u)
tap_ok "contrib/gpupoold.8 names every flag of gpupoold, and no other" same_lines "$man" "$flags"

# The shipped configuration file shows some defaults as commented lines
# ("# period = 2s"): each is the default.
wrong=""
while read -r key value; do
    default=$(printf '%s\n' "$settings" | sed -n "s/^| \`--$key\` | [^|]* | \`\([^\`]*\)\` |.*/\1/p")
    [ "$default" = "$value" ] || wrong="$wrong $key = $value (the default: $default)"
done <<EOF
$(sed -n 's/^# \([a-z-]*\) = \(.*\)$/\1 \2/p' contrib/gpupoold.conf)
EOF
tap_is "contrib/gpupoold.conf's commented defaults are the defaults" "$wrong" ""

# A bound of each kind, one past it: refused with the flag's name, before
# anything is started (exit status 2, no data directory made).
D=$(mktemp -d)
for bad in "--period 5ms" "--http-threads 257" "--log-retention 500ms" \
    "--usage-half-life 366d" "--paused-memory-max 101%" "--listen 127.0.0.1:80abc"; do
    out=$("$build/gpupoold" --data-dir "$D/data" $bad 2>&1)
    rc=$?
    key=${bad%% *}
    tap_is "$bad: exit status 2" "$rc" 2
    tap_ok "$bad: the message names ${key#--}" has "$out" "${key#--}: "
done
# A switch alone says yes, and takes a yes or no after it (so that the
# command line may turn off what a config file set), in either spelling:
# the value is read, and the next flag is the one refused.
for sw in "--allow-root-workloads" "--allow-root-workloads no" "--allow_root_workloads yes"; do
    out=$("$build/gpupoold" --data-dir "$D/data" $sw --period 5ms 2>&1)
    tap_ok "$sw is taken (the next flag's error is the one said)" has "$out" "period: "
done
tap_ok "no data directory was made" test ! -e "$D/data"
rm -rf "$D"
tap_done
