#!/bin/sh
# test-names.sh — the copies of the names the API speaks, in the console and
# the CLI, agree with the daemon's lists, as enum-names prints them: the
# console's state filter offers "active", "any" and every state (it lacked
# starting), its form every eviction mode; gpupool queue's --on-preempt
# takes every mode and inherit, and its help names them; gpupool help submit
# names every kind, gpupool help usage what --by takes, gpupool help token
# every role a token may have; docs/api.md every outcome of an attempt, and
# the docs no event kind the daemon lacks.
set -u
build=${GP_BUILD:-build}
. tests/lib/tap.sh
names=$build/tests/daemon/enum-names
js=src/daemon/console/console.js

states=$("$names" states)
tap_ok "the daemon has states" test -n "$states"
filter=$(sed -n "s/^ *const states = \[\(.*\)\];$/\1/p" "$js" | tr -d "' " | tr ',' '\n')
tap_ok "the console's state filter is active, any and every state, in order" \
    same_lines "$filter" "$(printf 'active\nany\n%s' "$states")"

modes=$("$names" on-preempt)
tap_ok "the engine has eviction modes" test -n "$modes"
options=$(sed -n "s/^ *\[\(.*\)\]\.map((m) => el('option', { value: m }, onPreemptText(m))).*/\1/p" "$js" |
    tr -d "' " | tr ',' '\n' | sort)
tap_ok "the console's form offers every eviction mode" same_lines "$options" "$(printf '%s\n' "$modes" | sort)"

# A mode the CLI takes goes on to the server (none here: unreachable, 3); one
# it refuses is a usage error (2).
for m in $modes inherit; do
    GPUPOOL_SERVER=http://127.0.0.1:1 GPUPOOL_TOKEN=x "$build/gpupool" queue set q \
        --on-preempt "$m" >/dev/null 2>&1
    tap_is "gpupool queue set --on-preempt $m is taken" "$?" 3
done
GPUPOOL_SERVER=http://127.0.0.1:1 GPUPOOL_TOKEN=x "$build/gpupool" queue set q \
    --on-preempt never >/dev/null 2>&1
tap_is "gpupool queue set --on-preempt never is refused" "$?" 2
help=$("$build/gpupool" help queue | sed -n 's/^ *--on-preempt \([a-z|]*\) .*/\1/p' | tr '|' '\n' | sort)
tap_ok "gpupool help queue names every mode and inherit" \
    same_lines "$help" "$(printf '%s\ninherit\n' "$modes" | sort)"
kinds=$("$names" kinds)
tap_ok "the engine has kinds" test -n "$kinds"
said=$("$build/gpupool" help submit | sed -n 's/^ *--kind K  *//p' | sed 's/ (default)//; s/, / /g; s/ or / /' |
    tr ' ' '\n' | sort)
tap_ok "gpupool help submit names every kind" same_lines "$said" "$(printf '%s\n' "$kinds" | sort)"
by=$("$names" usage-by)
tap_ok "the daemon counts usage by something" test -n "$by"
said=$("$build/gpupool" help usage | sed -n 's/.*\[--by \([a-z|]*\)\].*/\1/p' | tr '|' '\n')
tap_ok "gpupool help usage names what --by takes, in order" same_lines "$said" "$by"
roles=$("$names" roles)
tap_ok "the daemon has roles" test -n "$roles"
said=$("$build/gpupool" help token | sed -n '/^Roles:/,/^$/p' | tr '\n' ' ' | tr ';' '\n' |
    sed -n 's/^ *\(Roles: \)*\([a-z-]*\) (.*/\2/p' | sort)
tap_ok "gpupool help token names every role" same_lines "$said" "$(printf '%s\n' "$roles" | sort)"
# docs/api.md names every outcome of an attempt (it lacked starting), and
# every event kind it mentions in its prose is one the daemon records.
outcomes=$("$names" outcomes)
tap_ok "the daemon has attempt outcomes" test -n "$outcomes"
said=$(sed -n '/an outcome, one of:/,/)\./p' docs/api.md | tr '\n' ' ' | sed 's/.*one of://' |
    grep -o '`[a-z-]*`' | tr -d '`')
tap_ok "docs/api.md names every attempt outcome, in order" same_lines "$said" "$outcomes"
events=$("$names" events)
tap_ok "the daemon has event kinds" test -n "$events"
# What the docs name as an event: "event `x`", "events `x` and `y`", "events
# say `x`, then `y`", "a `x` event", 'event "x"'.
doc_events() {
    cat docs/*.md | tr '\n' ' ' |
        grep -oE '(^|[^a-z])events?( say)? `[a-z-]+`((, then|,| and| or) `[a-z-]+`)*|`[a-z-]+` events?([^a-z]|$)|(^|[^a-z])events? "[a-z-]+"' |
        grep -oE '`[a-z-]+`|"[a-z-]+"' | tr -d '`"' | sort -u
}
named=$(doc_events)
tap_ok "the docs name events" test "$(printf '%s\n' "$named" | wc -l)" -ge 5
unknown=""
for k in $named; do
    printf '%s\n' "$events" | grep -qx -- "$k" || unknown="$unknown $k"
done
tap_is "every event the docs name is one the daemon records" "$unknown" ""
tap_done
