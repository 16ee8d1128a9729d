#!/bin/sh
# The task of a paused workload ends while it is paused, through a real
# gpupoold: its supervisor killed (the executor reports the task lost), the
# workload goes back to the queue, its node's paused memory freed, and runs
# again from the beginning once a GPU is free; its frozen task killed (it
# failed), the workload fails and its node's paused memory is freed. Neither
# is resumed afterwards: the engine held a ghost of each before, paused on
# the node, which it tried to resume whenever the GPU came free ("cannot
# resume it" at every cycle), the lost one never running again. A session
# the idle policy paused, lost, is suspended until its owner resumes it (it
# was recorded pending, which the engine never ran), also when found so by
# the recovery after a restart (it was requeued and ran again unasked). A
# task lost while its pause waits for the pause worker is requeued, its GPU
# going to the owner (the engine kept it evicting for ever). An interactive
# gang running one task is suspended by the idle policy, not paused (the engine
# resumes no gang: its owner's resume failed for ever). Needs root and a
# cgroup freezer (SKIP without). Waits on conditions only.
. tests/lib/tap.sh
. tests/daemon/lib.sh

skip_unless_root_pause
D=$TMP/ends
mkdir -p "$D"
# One GPU of 1 GiB: a paused borrower holds that much host memory.
tap_ok "gpupoold starts with 1 emulated GPU" emulated_start "$D" 1
skip_unless_pause "$D"
# A owns the GPU; B deserves none and borrows it.
tap_ok "queues created" one_gpu_lent
submit() { $GP submit "$@" | grep -o '[0-9][0-9]*' | head -1; }
paused_memory() { api GET /api/v1/nodes | grep -o '"paused_memory": *[0-9]*' | head -1 | grep -o '[0-9]*$'; }
holds_some() { [ "$(paused_memory)" -gt 0 ]; }
holds_none() { [ "$(paused_memory)" = 0 ]; }
attempt_is() { contains "$(api GET "/api/v1/workloads/$1")" "\"attempt\":$2[,}]"; }
tdir() { ls -d "$D"/tasks/w"$1".t0.a"$2" 2>/dev/null; }
task_pid() { sed -n 's/^pid=//p' "$(tdir "$1" 1)/task"; }
# thaw ID ATTEMPT: thaws the task's cgroup, so that a signal can end it.
thaw() {
    for z in /sys/fs/cgroup/freezer/gpupool/"$(cat "$D/tasks/instance")"/w"$1".t0.a"$2"*/freezer.state; do
        [ -f "$z" ] && echo THAWED >"$z"
    done
}
# borrower_paused ATTEMPT: B's borrower runs (that attempt), then A's
# workload takes its GPU and it is paused; prints A's workload's id.
borrower_paused() {
    wait_until 60 is_state "$BW" running && attempt_is "$BW" "$1" || return 1
    a=$(submit --project a1 --gpu 1 -- sleep 600)
    wait_until 60 is_state "$BW" paused && wait_until 60 is_state "$a" running &&
        wait_until 30 holds_some || return 1
    echo "$a"
}

BW=$(submit --project b1 --gpu 1 --on-preempt pause --grace 24h --name borrower -- sleep 600)
A1=$(borrower_paused 1)
tap_ok "B's borrower is paused for A's workload, its node holding its memory" [ -n "$A1" ]

# Lost: its supervisor killed, the executor can tell nothing of its task.
spid=$(cut -d: -f3 "$(tdir "$BW" 1)/handle")
tpid1=$(sed -n 's/^pid=//p' "$(tdir "$BW" 1)/task")
tap_ok "its supervisor is killed" kill -9 "$spid"
tap_ok "the lost paused workload is back in the queue" wait_until 30 is_state "$BW" pending
tap_ok "with the event lost" contains "$(api GET "/api/v1/workloads/$BW/events")" '"kind":"lost"'
tap_ok "its node's paused memory is freed" wait_until 30 holds_none
gone() { ! kill -0 "$1" 2>/dev/null; }
tap_ok "and its frozen task is ended" wait_until 30 gone "$tpid1"
$GP delete "$A1" >/dev/null
tap_ok "A's workload gone, the borrower runs again from the beginning" \
    wait_until 60 attempt_is "$BW" 2
tap_ok "and runs" wait_until 60 is_state "$BW" running

# Killed: its frozen task thawed and killed by hand, it failed.
A2=$(borrower_paused 2)
tap_ok "paused again for A's second workload" [ -n "$A2" ]
tpid=$(sed -n 's/^pid=//p' "$(tdir "$BW" 2)/task")
thaw "$BW" 2
tap_ok "its task is killed" kill -9 "-$tpid"
tap_ok "the paused workload whose task died fails" wait_until 30 is_state "$BW" failed
tap_ok "its node's paused memory is freed" wait_until 30 holds_none
$GP delete "$A2" >/dev/null
tap_ok "A's second workload is deleted" wait_until 30 is_state "$A2" deleted
# Ten scheduling periods with the GPU free: a ghost was resumed at each.
sleep 2
tap_is "no resume of a paused workload without a task was tried" \
    "$(grep -c 'cannot resume it' "$D.log")" 0
tap_is "it stays failed" "$(state_of "$BW")" failed
gpd_stop

# A session the idle policy paused is out of the engine until its owner
# resumes it: lost, it is suspended, as the policy's suspend leaves it, and
# its owner's resume starts it again. It was recorded pending before, which
# the engine did not know, and it never ran again.
P=$TMP/held
idle_gpu_config "$P"
tap_ok "gpupoold starts on a fake NVML whose GPU is idle" gpd_start "$P" --period 200ms \
    --poll 200ms --usage-period 200ms --executor-config "$CFG"
D=$P # where tdir looks
tap_ok "a project with an idle timeout" sh -c "$GP queue create dept --deserved 1 >/dev/null &&
    $GP queue create proj --parent dept --deserved 1 --idle-gpu-timeout 10s >/dev/null"
# owner_resumes ID: the owner's resume of suspended session ID (the idle
# timeout out of its way) starts it again from the beginning; then deleted.
owner_resumes() {
    $GP queue set proj --idle-gpu-timeout 1h >/dev/null
    tap_ok "its owner resumes it" $GP resume "$1"
    tap_ok "it runs again, from the beginning" wait_until 60 attempt_is "$1" 2
    tap_ok "and runs" wait_until 60 is_state "$1" running
    $GP delete "$1" >/dev/null
    tap_ok "deleted, it ends" wait_until 30 is_state "$1" deleted
}
S=$(submit --project proj --kind interactive --gpu 1 -- sleep 600)
tap_ok "an idle session is paused by the idle policy" wait_until 90 is_state "$S" paused
tap_ok "its node holds its memory" wait_until 30 holds_some
tpid1=$(sed -n 's/^pid=//p' "$(tdir "$S" 1)/task")
tap_ok "its supervisor is killed" kill -9 "$(cut -d: -f3 "$(tdir "$S" 1)/handle")"
tap_ok "the lost session is suspended" wait_until 30 is_state "$S" suspended
tap_ok "its node's paused memory is freed" wait_until 30 holds_none
tap_ok "and its frozen task is ended" wait_until 30 gone "$tpid1"
owner_resumes "$S"

# The same found after a restart: gpupoold stopped while the session is held
# paused, its task lost meanwhile. Recovery requeued it before, and it ran
# again by itself, unasked, taking the GPU while its owner was away.
$GP queue set proj --idle-gpu-timeout 10s >/dev/null
S2=$(submit --project proj --kind interactive --gpu 1 -- sleep 600)
tap_ok "another idle session is paused by the idle policy" wait_until 90 is_state "$S2" paused
tap_ok "its node holds its memory" wait_until 30 holds_some
gpd_stop
tpid2=$(sed -n 's/^pid=//p' "$(tdir "$S2" 1)/task")
spid=$(cut -d: -f3 "$(tdir "$S2" 1)/handle")
tap_ok "gpupoold stopped, its supervisor is killed" sh -c "kill -9 $spid"
tap_ok "the supervisor is gone" wait_until 30 gone "$spid"
tap_ok "gpupoold starts again" gpd_start "$P" --period 200ms --poll 200ms --usage-period 200ms \
    --executor-config "$CFG"
tap_ok "the session lost meanwhile is suspended" wait_until 30 is_state "$S2" suspended
ran_once() { ! attempt_is "$1" 2; }
tap_ok "it did not run again by itself" ran_once "$S2"
tap_ok "its frozen task is ended" wait_until 30 gone "$tpid2"
owner_resumes "$S2"

# An elastic interactive gang running one task (its second finds no GPU) is
# suspended when idle, not paused: the engine resumes no gang, and its
# owner's resume failed for ever before ("a workload of several tasks is
# never paused"), the session kept paused.
$GP queue set proj --idle-gpu-timeout 10s >/dev/null
G=$(submit --project proj --kind interactive --gang 2 --min-gang 1 --gpu 1 --grace 1s -- sleep 600)
tap_ok "an interactive gang runs one task" wait_until 60 is_state "$G" running
tap_ok "idle, it is suspended" wait_until 90 is_state "$G" suspended
tap_ok "the event says a gang is not paused" \
    contains "$(api GET "/api/v1/workloads/$G/events")" 'not paused: a workload of several tasks is not paused'
$GP queue set proj --idle-gpu-timeout 1h >/dev/null
tap_ok "its owner resumes it" $GP resume "$G"
tap_ok "it runs again" wait_until 60 attempt_is "$G" 2
tap_ok "and runs" wait_until 60 is_state "$G" running
gpd_stop

# A task lost while its pause waits for the pause worker: the engine has it
# EVICTING, and refused its requeue before, so that it kept its GPU for
# ever and the owner's workload waited for it ("room is being made"). The
# worker is held by another borrower, whose allocation in the fake driver
# never lets the CUDA lock through (the pause step lasts the lock's timeout).
Q=$TMP/queued
mkdir -p "$Q"
LEDGER=gpfake-pauseends-$$
GPUPOOL_FAKE_LEDGER=$LEDGER GPUPOOL_FAKE_GPUS=2 GPUPOOL_FAKE_GPU_MEMORY=256M
export GPUPOOL_FAKE_LEDGER GPUPOOL_FAKE_GPUS GPUPOOL_FAKE_GPU_MEMORY
trap 'cleanup; rm -f "/dev/shm/$LEDGER"' EXIT
CFG="state_dir=$Q/tasks,nvml=$B/fake/libnvidia-ml.so.1,cuda=$B/fake/libcuda.so.1,interposer=$TMP/none.so"
tap_ok "gpupoold starts on the fake driver (2 GPUs)" gpd_start "$Q" --period 200ms \
    --poll 200ms --executor-config "$CFG"
D=$Q # where tdir looks
tap_ok "queues created" one_gpu_lent
$GP queue set A --deserved 2 >/dev/null && $GP queue set a1 --deserved 2 >/dev/null
L=$(submit --project b1 --gpu 1 --priority -1 --on-preempt pause --grace 1s -- sh -c \
    'GPUPOOL_FAKE_ALLOC_DELAY_US=600000000 exec "$0" "$@"' "$B/tests/executors/cuda-holder" \
    "$LEDGER" 2 256M 16 "$TMP/stuck.state")
# (The fake driver gives a process its first GPU whatever it was bound to:
# the stuck one runs first, on GPU 0.)
stuck() { is_state "$L" running && in_sleep "$(task_pid "$L")"; }
tap_ok "a borrower runs, asleep inside an allocation" wait_until 60 stuck
W=$(submit --project b1 --gpu 1 --on-preempt pause --grace 24h -- sleep 600)
tap_ok "another borrower runs" wait_until 60 is_state "$W" running
O1=$(submit --project a1 --gpu 1 -- sleep 600)
pausing() { grep -q '^state=pausing$' "$(tdir "$1" 1)/pause" 2>/dev/null; }
tap_ok "the stuck one is evicted first: its pause holds the worker" wait_until 60 pausing "$L"
O2=$(submit --project a1 --gpu 1 -- sleep 600)
making_room() { contains "$(api GET "/api/v1/workloads/$O2")" 'room is being made'; }
tap_ok "the other is evicted in pause mode, its pause waiting" wait_until 30 making_room
spid=$(cut -d: -f3 "$(tdir "$W" 1)/handle")
tpid=$(sed -n 's/^pid=//p' "$(tdir "$W" 1)/task")
tap_ok "its supervisor and its task are killed" sh -c "kill -9 $spid && kill -9 -$tpid"
tap_ok "the lost workload is back in the queue" wait_until 60 is_state "$W" pending
tap_ok "its GPU goes to the owner's second workload" wait_until 60 is_state "$O2" running
gpd_stop
tap_done
