#!/bin/sh
# gpupoold killed with kill -9 right after it forked a task's launch, its
# supervisor held back before it writes its handle: gpupoold restarted finds
# the start in flight (the supervisor holds its start file's lock), tries the
# launch again until the handle is there and adopts the task, which runs
# exactly once, in the workload's first attempt. gpupoold-pausekill
# (pause-kill.c, GPUPOOL_TEST_SPAWN_HOLD) does the kill and the hold.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
RUNS=$TMP/runs.txt
: >"$RUNS"
with_spawn_hold proj_pool "$D" --period 200ms --poll 200ms

ID=$($GP submit --project proj -- sh -c "echo run >> $RUNS; sleep 3" | grep -o '[0-9][0-9]*' | head -1)
died() { ! kill -0 "$GPD_PID" 2>/dev/null; }
tap_ok "gpupoold dies right after it forks the launch" wait_until 60 died
wait "$GPD_PID" 2>/dev/null
GPD_PID=
tap_ok "gpupoold restarts" gpd_start "$D" --period 200ms --poll 200ms
# The restarted daemon has decided: it waits for the start in flight, or
# (a double launch) it has run the attempt again.
decided() {
    $GP describe "$ID" | grep -q 'launch to be tried again after a restart' ||
        is_state "$ID" running || is_state "$ID" succeeded
}
tap_ok "the restarted gpupoold decides on the launch in flight" wait_until 60 decided
waits() { $GP describe "$ID" | grep -q 'launch to be tried again after a restart'; }
tap_ok "it waits for the start in flight" waits
touch "$HOLD"
tap_ok "the workload succeeds" wait_until 60 is_state "$ID" succeeded
inst=$(cat "$D/tasks/instance")
no_supervisor() { ! pgrep -f "gpupool-supervisor $inst w$ID\\." >/dev/null; }
tap_ok "no supervisor of it is left" wait_until 60 no_supervisor
tap_is "the task ran exactly once" "$(wc -l <"$RUNS" | tr -d ' ')" 1
tap_ok "in its first attempt" sh -c "$GP describe $ID | grep -q '^Attempt: *1\$'"
gpd_stop
tap_done
