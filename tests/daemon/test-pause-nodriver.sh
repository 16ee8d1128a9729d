#!/bin/sh
# gpupoold killed (kill -9) within a pause, once the borrower's task is
# checkpointed and frozen and before the executor journaled it paused, and
# restarted with a CUDA driver it cannot load (cuda= names a library that
# is not there): the pause can be neither finished nor undone, so the task
# is thawed and taken as lost, its attempt ended "lost" with the reason in
# its events, and the borrower goes back to the queue, running again in a
# second attempt once the owner leaves. Before, the recovery read the pause
# as undone: the borrower was shown running, its task frozen for ever.
# gpupoold-pausekill (pause-kill.c) does the kill. Needs root and a cgroup
# freezer (SKIP without). Waits on conditions only.
. tests/lib/tap.sh
. tests/daemon/lib.sh

skip_unless_root_pause
fake_ledger pausenodriver
D=$TMP/nodriver
mkdir -p "$D"
HOLDER=$B/tests/executors/cuda-holder
CFG="state_dir=$D/tasks,nvml=$B/fake/libnvidia-ml.so.1,cuda=$B/fake/libcuda.so.1,interposer=$TMP/none.so"
real=$GPD
GPD=$B/tests/daemon/gpupoold-pausekill
GPUPOOL_TEST_PAUSE_KILL=4
export GPUPOOL_TEST_PAUSE_KILL
tap_ok "gpupoold-pausekill starts on the fake driver (kill at pause step 4)" \
    gpd_start "$D" --period 200ms --poll 200ms --executor-config "$CFG"
GPD=$real
unset GPUPOOL_TEST_PAUSE_KILL
skip_unless_pause "$D"
tap_ok "queues created" one_gpu_lent

submit() { $GP submit "$@" | grep -o '[0-9][0-9]*' | head -1; }
events() { api GET "/api/v1/workloads/$1/events"; }
ST=$TMP/borrower.state
step_of() { cut -d' ' -f1 "$1" 2>/dev/null || echo 0; }
past() { [ "$(step_of "$1")" -gt "$2" ]; }
W=$(submit --project b1 --gpu 1 --on-preempt pause --grace 24h --name borrower -- \
    "$HOLDER" "$LEDGER" 1 256M 16 "$ST")
tap_ok "a borrower holding fake GPU memory counts its steps" wait_until 60 past "$ST" 2
tap_ok "it is running" wait_until 60 is_state "$W" running
tpid=$(sed -n 's/^pid=//p' "$D/tasks/w$W.t0.a1/task")
O=$(submit --project a1 --gpu 1 --name owner -- sleep 600)
died() { ! kill -0 "$GPD_PID" 2>/dev/null; }
tap_ok "the owner comes back and gpupoold dies within the pause" wait_until 90 died
wait "$GPD_PID" 2>/dev/null
GPD_PID=
CFG="state_dir=$D/tasks,nvml=$B/fake/libnvidia-ml.so.1,cuda=$TMP/no-libcuda.so.1,interposer=$TMP/none.so"
tap_ok "gpupoold restarts, the CUDA driver unloadable" \
    gpd_start "$D" --period 200ms --poll 200ms --executor-config "$CFG"
lost() { contains "$(events "$W")" 'could be neither finished nor undone'; }
tap_ok "the borrower's task is lost, its events say why" wait_until 60 lost
tap_ok "its attempt ended lost" contains "$(api GET "/api/v1/workloads/$W")" '"outcome":"lost"'
tap_ok "the borrower is back in the queue" wait_until 60 is_state "$W" pending
tap_ok "its frozen task is gone" wait_until 60 sh -c "! kill -0 $tpid 2>/dev/null"
tap_ok "the owner's workload runs" wait_until 60 is_state "$O" running
$GP delete "$O" >/dev/null
tap_ok "the owner gone, the borrower runs again" wait_until 60 is_state "$W" running
tap_ok "in its second attempt" sh -c "$GP describe $W | grep -q '^Attempt: *2\$'"
gpd_stop
tap_done
