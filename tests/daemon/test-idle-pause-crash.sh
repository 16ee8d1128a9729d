#!/bin/sh
# gpupoold killed (kill -9) as the idle policy's pause of a session is
# stored: the session, restarted, is still held paused for its owner, its
# GPU free for other work, and its owner's resume brings it back where it
# was. failstep.so holds the commit of each change of a workload for 2 s
# after it is written: the kill lands once the state paused is on disk,
# before the loop goes on. The row of the GPUs the policy returned, which
# is what tells a restart that the policy holds the session, was stored
# only after the state paused: the restart took the session for one the
# engine had paused, and the engine resumed it at once on the GPU its owner
# had left. The same where gpupoold-pausekill (pause-kill.c) dies within the
# pause's step, after the freeze, which the restart finishes: the row is now
# stored before the pause begins. And gpupoold restarted with fewer GPUs, the
# one of a held session gone: the session is suspended, its frozen task
# stopped, where its owner's resume failed for ever before. Needs root and
# a cgroup freezer (SKIP without). Waits on conditions only.
. tests/lib/tap.sh
. tests/daemon/lib.sh
skip_if_sanitized

skip_unless_root_pause
P=$TMP/held
idle_gpu_config "$P"
start() { gpd_start "$P" --period 200ms --poll 200ms --usage-period 200ms --executor-config "$CFG"; }
GPD_TEST_SLOW_COMMIT_AFTER='UPDATE workloads' GPD_TEST_SLOW_COMMIT_MS=2000 \
    LD_PRELOAD=$B/tests/daemon/failstep.so \
    tap_ok "gpupoold starts on a fake NVML whose GPU is idle, its workloads' commits slow" start
skip_unless_pause "$P"
tap_ok "a project with an idle timeout, and another" sh -c "$GP queue create dept --deserved 1 >/dev/null &&
    $GP queue create proj --parent dept --deserved 1 --idle-gpu-timeout 10s >/dev/null &&
    $GP queue create other --parent dept >/dev/null"
submit() { $GP submit "$@" | grep -o '[0-9][0-9]*' | head -1; }
attempt_is() { contains "$(api GET "/api/v1/workloads/$1")" "\"attempt\":$2[,}]"; }
events() { api GET "/api/v1/workloads/$1/events"; }
S=$(submit --project proj --kind interactive --gpu 1 -- sleep 600)
tap_ok "a session runs" wait_until 90 is_state "$S" running
stored_paused() { [ "$(sqlite3 -readonly "$P/gpupool.db" "SELECT state FROM workloads WHERE id=$S")" = 4 ]; }
tap_ok "idle, it is stored paused" wait_until 90 stored_paused
tap_ok "gpupoold is killed as that commit returns" gpd_kill9

# held_after_restart ID: gpupoold, killed during the idle policy's pause of
# session ID, starts again; the session is held paused, another workload
# gets its GPU, and its owner's resume brings it back where it was; then it
# is deleted, and the project's idle timeout set back to 10 s.
held_after_restart() {
    tap_ok "gpupoold starts again" start
    tap_ok "the session is paused" wait_until 30 is_state "$1" paused
    O=$(submit --project other --gpu 1 -- sleep 600)
    tap_ok "another workload takes the GPU" wait_until 60 is_state "$O" running
    tap_ok "the session is still paused" is_state "$1" paused
    not_resumed() { ! events "$1" | grep -q '"kind":"resumed"'; }
    tap_ok "and was not resumed by the engine" not_resumed "$1"
    $GP queue set proj --idle-gpu-timeout 1h >/dev/null
    tap_ok "its owner resumes it" $GP resume "$1"
    tap_ok "the other workload deleted" sh -c "$GP delete $O >/dev/null"
    tap_ok "the session is resumed on the GPU" wait_until 60 is_state "$1" running
    tap_ok "where it was, in its first attempt" attempt_is "$1" 1
    tap_ok "with the event resumed" contains "$(events "$1")" '"kind":"resumed"'
    $GP delete "$1" >/dev/null
    tap_ok "deleted, it ends" wait_until 30 is_state "$1" deleted
    $GP queue set proj --idle-gpu-timeout 10s >/dev/null
}
held_after_restart "$S"
gpd_stop

GPUPOOL_TEST_PAUSE_KILL=4 GPD=$B/tests/daemon/gpupoold-pausekill \
    tap_ok "gpupoold-pausekill starts (kill after the pause's freeze)" start
S2=$(submit --project proj --kind interactive --gpu 1 -- sleep 600)
tap_ok "another session runs" wait_until 90 is_state "$S2" running
died() { ! kill -0 "$GPD_PID" 2>/dev/null; }
tap_ok "idle, its pause begins and gpupoold dies in it" wait_until 90 died
wait "$GPD_PID" 2>/dev/null
GPD_PID=
held_after_restart "$S2"
gpd_stop

# Restarted with fewer GPUs, the one of a held session gone: its frozen task
# can be resumed nowhere, so it is taken as lost, suspended as a held
# session lost, and its owner's resume starts it again. It was held paused
# on the missing GPU before, and each resume of its owner failed ("cannot
# resume: was.slices[0].gpu: node ... has no GPU 1"), its task frozen for
# ever.
F=$TMP/fewer
idle_gpu_config "$F"
GPUPOOL_FAKE_GPUS=2
start_fewer() { gpd_start "$F" --period 200ms --poll 200ms --usage-period 200ms --executor-config "$CFG"; }
tap_ok "gpupoold starts on 2 fake GPUs" start_fewer
$GP queue create dept --deserved 1 >/dev/null && $GP queue create other --parent dept >/dev/null &&
    $GP queue create proj --parent dept --deserved 1 --idle-gpu-timeout 10s >/dev/null
O=$(submit --project other --gpu 1 -- sleep 600)
tap_ok "a workload runs on GPU 0" wait_until 60 is_state "$O" running
S3=$(submit --project proj --kind interactive --gpu 1 -- sleep 600)
tap_ok "a session runs on GPU 1" wait_until 60 is_state "$S3" running
tap_ok "idle, it is paused" wait_until 90 is_state "$S3" paused
tpid=$(sed -n 's/^pid=//p' "$(ls -d "$F"/tasks/w"$S3".t0.a1)/task")
gpd_stop
GPUPOOL_FAKE_GPUS=1
tap_ok "gpupoold starts again on 1 fake GPU" start_fewer
tap_ok "the session whose GPU is gone is suspended" wait_until 30 is_state "$S3" suspended
tap_ok "the event says why" contains "$(events "$S3")" "suspended: its owner's resume starts it again"
gone() { ! kill -0 "$1" 2>/dev/null; }
tap_ok "its frozen task is ended" wait_until 30 gone "$tpid"
tap_ok "the workload on GPU 0 runs on" is_state "$O" running
$GP queue set proj --idle-gpu-timeout 1h >/dev/null
tap_ok "its owner resumes it" $GP resume "$S3"
$GP delete "$O" >/dev/null
tap_ok "it runs again, from the beginning, on the GPU left" wait_until 60 attempt_is "$S3" 2
tap_ok "and runs" wait_until 60 is_state "$S3" running
gpd_stop
tap_done
