#!/bin/sh
# An elastic gang bound with fewer tasks than it asked for (--gang 4
# --min-gang 2 on a pool of 2 GPUs) keeps running across a restart of
# gpupoold, after SIGTERM and after kill -9: the same attempt, its tasks not
# stopped, no requeued event. Waits on conditions only.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/elastic
emulated_proj "$D" 2

id=$($GP submit --project proj --gang 4 --min-gang 2 --gpu 1 -- sleep 600 | grep -o '[0-9][0-9]*' | head -1)
tasks_of() { $GP --json describe "$1" | grep -o '"handle": *"[^"]*"' | wc -l; }
running_with() { is_state "$1" running && [ "$(tasks_of "$1")" = "$2" ]; }
tap_ok "the gang of 4 runs with 2 tasks" wait_until 60 running_with "$id" 2
attempt_of() { $GP describe "$1" | sed -n 's/^Attempt: *//p'; }
not_requeued() { ! api GET "/api/v1/workloads/$1/events" | grep -q '"kind":"requeued"'; }

for how in stop kill9; do
    if [ $how = stop ]; then gpd_stop; else gpd_kill9; fi
    tap_ok "gpupoold starts again (after $how)" emulated_start "$D" 2
    tap_ok "the gang still runs with 2 tasks (after $how)" wait_until 30 running_with "$id" 2
    tap_is "in its first attempt (after $how)" "$(attempt_of "$id")" 1
    tap_ok "it was not requeued (after $how)" not_requeued "$id"
done
tap_done
