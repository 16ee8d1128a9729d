#!/bin/sh
# A workload deleted while its launch waits for a start in flight, and
# gpupoold killed (kill -9) between storing the delete and storing the
# attempt's end: restarted, gpupoold finds it stopping and finishes the
# delete, abandoning the start in flight, so that the supervisor, once let
# go, never runs the task's command. Before, a workload recovered stopping
# counted no deferred launch, its start was not abandoned, and the held
# supervisor ran the deleted workload's task. with_spawn_hold (lib.sh) holds
# the start; failstep.so holds the write of the attempt's end for 5 s.
. tests/lib/tap.sh
. tests/daemon/lib.sh
skip_if_sanitized

D=$TMP/pool
RUNS=$TMP/runs.txt
held_launch "$D"
GPD_TEST_SLOW_STEP='UPDATE attempts SET ended_ms' GPD_TEST_SLOW_STEP_MS=5000 \
    tap_ok "gpupoold restarts, the writes of attempts' ends slow" failstep_start "$D" 1
held_in_flight "$D"
$GP delete "$ID" >/dev/null 2>&1 &
# State 3: stopping (GP_WL_STATES).
stopping() {
    [ "$(sqlite3 -readonly "$D/gpupool.db" "SELECT state FROM workloads WHERE id=$ID")" = 3 ] &&
        [ "$(sqlite3 -readonly "$D/gpupool.db" "SELECT ended_ms FROM attempts WHERE workload=$ID")" = -1 ]
}
tap_ok "the delete is stored, the attempt's end not yet" wait_until 60 stopping
tap_ok "gpupoold is killed then" gpd_kill9
wait
tap_ok "gpupoold starts again" emulated_start "$D" 1
tap_ok "the workload is deleted" wait_until 60 is_state "$ID" deleted
touch "$HOLD"
tap_ok "the supervisor ends once let go" wait_until 60 sh -c "! pgrep -f 'gpupool-supervisor $inst w$ID\\.'"
tap_is "the deleted workload's command never ran" "$(wc -l <"$RUNS" | tr -d ' ')" 0
tap_ok "nothing of the abandoned start is left" wait_until 60 no_trace "$D" "$ID"
gpd_stop
tap_done
