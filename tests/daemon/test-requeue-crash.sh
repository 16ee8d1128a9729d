#!/bin/sh
# gpupoold killed (kill -9) between stopping a borrower in requeue mode and
# storing its outcome: restarted, it finishes the eviction, and the borrower
# is back in the queue, its attempt evicted. failstep.so holds the write of
# the attempt's end for 3 s before it runs: the kill lands once the task is
# stopped and before anything of its outcome is stored. A stop at once
# (requeue mode, a node gone, a delete) stored nothing before it stopped
# the tasks: the restart found the workload running and its task killed,
# and failed it ("killed by signal"), a workload lost to the crash. Waits on
# conditions only.
. tests/lib/tap.sh
. tests/daemon/lib.sh
skip_if_sanitized

D=$TMP/requeue
GPD_TEST_SLOW_STEP='UPDATE attempts SET ended_ms' GPD_TEST_SLOW_STEP_MS=3000 \
    tap_ok "gpupoold starts on 1 emulated GPU, the writes of attempts' ends slow" \
    failstep_start "$D" 1
tap_ok "queues created" one_gpu_lent
submit() { $GP submit "$@" | grep -o '[0-9][0-9]*' | head -1; }
W=$(submit --project b1 --gpu 1 --on-preempt requeue -- sleep 600)
tap_ok "a borrower in requeue mode runs" wait_until 60 is_state "$W" running
tpid=$(sed -n 's/^pid=//p' "$(ls -d "$D"/tasks/w"$W".t0.a1)/task")
O=$(submit --project a1 --gpu 1 -- sleep 600)
# Its task gone, its attempt not yet ended in the store.
stopped() {
    ! kill -0 "$tpid" 2>/dev/null &&
        [ "$(sqlite3 -readonly "$D/gpupool.db" "SELECT ended_ms FROM attempts WHERE workload=$W")" = -1 ]
}
tap_ok "the owner comes back: the borrower's task is stopped, its outcome not yet stored" \
    wait_until 60 stopped
tap_ok "gpupoold is killed then" gpd_kill9
tap_ok "gpupoold starts again" emulated_start "$D" 1
back() { wait_until 30 is_state "$W" pending || {
    api GET "/api/v1/workloads/$W/events" | tr '{' '\n' | sed 's/^/# /'
    echo
    false
}; }
tap_ok "the borrower is back in the queue" back
tap_ok "its attempt evicted" contains "$(api GET "/api/v1/workloads/$W")" '"outcome":"evicted"'
tap_ok "the owner's workload runs" wait_until 60 is_state "$O" running
$GP delete "$O" >/dev/null
tap_ok "the owner gone, the borrower runs again" wait_until 60 is_state "$W" running
gpd_stop
tap_done
