#!/bin/sh
# Transparent pause through a real gpupoold on the fake driver (its NVML and
# its checkpoint API), faults and bad input: a borrower that keeps a pattern
# in fake device memory is paused when the owner comes back, the owner fills
# the GPU and leaves, and the borrower resumes with its pattern intact, from
# its step, in its first attempt; a restore without room (memory held outside
# the pool) leaves it paused with the reason and is retried with a backoff
# (1 s, 2 s, 4 s ...) that the events state, until the memory is freed; a
# process that does not answer the CUDA lock in time is evicted in
# checkpoint mode, the event saying so, and one suspended meanwhile by its
# owner is suspended once the step ends, and one deleted meanwhile is
# deleted even where gpupoold is killed before the step ends; gpupoold
# killed with kill -9 at each step of a pause and of a resume leaves,
# restarted, the borrower paused or running in its first attempt and
# nothing frozen; a resumed interactive
# session's idle timer starts again; a workload of several tasks is evicted
# in checkpoint mode with the engine's reason; gpupoold killed during a
# resume onto another GPU books, restarted, the GPU the task is on. Needs
# root and a cgroup freezer (SKIP without). Waits on conditions only.
. tests/lib/tap.sh
. tests/daemon/lib.sh

HOLDER=$B/tests/executors/cuda-holder
D=$TMP/faults
mkdir -p "$D"
fake_ledger pausefaults
OUTSIDE=
faults_cleanup() {
    [ -n "$OUTSIDE" ] && kill -9 "$OUTSIDE" 2>/dev/null
    fake_ledger_cleanup
}
trap faults_cleanup EXIT

skip_unless_root_pause
CFG="state_dir=$D/tasks,nvml=$B/fake/libnvidia-ml.so.1,cuda=$B/fake/libcuda.so.1,interposer=$TMP/none.so"
tap_ok "gpupoold starts on the fake driver (1 GPU of 256 MiB)" gpd_start "$D" --period 200ms \
    --poll 200ms --usage-period 200ms --executor-config "$CFG"
skip_unless_pause "$D"
# A owns the GPU; B deserves none and borrows it.
tap_ok "queues created" one_gpu_lent

submit() { # ARGS...: submits, prints the id
    $GP submit "$@" | grep -o '[0-9][0-9]*' | head -1
}
state_of() { api GET "/api/v1/workloads/$1" | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p'; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }
events() { api GET "/api/v1/workloads/$1/events"; }
has_event() { events "$1" | grep -q -- "$2"; }
nevents() { events "$1" | grep -o -- "$2" | wc -l; }
at_least() { [ "$(nevents "$1" "$2")" -ge "$3" ]; } # ID PATTERN N
# The holder's state file: "<step> ok" (or "bad" once its pattern broke).
step_of() { cut -d' ' -f1 "$1" 2>/dev/null || echo 0; }
past() { [ "$(step_of "$1")" -gt "$2" ]; }
intact() { grep -q ' ok$' "$1"; }
# A frozen holder counts no further (a bounded look).
frozen() {
    a=$(step_of "$1")
    sleep 1
    [ "$(step_of "$1")" = "$a" ]
}
diag() { # ID: the workload's events and the daemon's log, on a failure
    echo "# events of $1:"
    events "$1" | tr '{' '\n' | sed 's/^/#   /'
    echo "# gpupoold's log:"
    tail -20 "$D.log" | sed 's/^/#   /'
}
check() { # DESCRIPTION ID COMMAND...: tap_ok, with the events of ID on failure
    desc=$1 id=$2
    shift 2
    if "$@"; then tap_ok "$desc" true; else
        tap_ok "$desc" false
        diag "$id"
    fi
}

# ---- 1. Contents survive --------------------------------------------------
ST=$TMP/borrower.state
W=$(submit --project b1 --gpu 1 --on-preempt pause --grace 24h --name borrower -- \
    "$HOLDER" "$LEDGER" 1 256M 16 "$ST")
check "a borrower holding 16 MiB of fake GPU memory counts its steps" "$W" wait_until 60 past "$ST" 2
# (Its owner must find it running: one that comes before a poll has seen the
# task start evicts it in checkpoint mode, a pause needing a running task.)
check "it is running" "$W" wait_until 60 is_state "$W" running
O1=$(submit --project a1 --gpu 1 --name filler -- "$HOLDER" "$LEDGER" 1 256M 200 "$TMP/filler.state")
check "the owner comes back: the borrower is paused" "$W" wait_until 60 has_event "$W" '"kind":"paused"'
check "the owner's workload runs" "$O1" wait_until 60 is_state "$O1" running
check "and fills 200 MiB of the GPU's 256 MiB" "$O1" wait_until 60 past "$TMP/filler.state" 0
tap_ok "the paused borrower counts no further" frozen "$ST"
at=$(step_of "$ST")
tap_ok "gpupool delete of the owner's workload" sh -c "$GP delete $O1 >/dev/null"
check "the borrower is resumed" "$W" wait_until 60 has_event "$W" '"kind":"resumed"'
check "and counts on from step $at" "$W" wait_until 30 past "$ST" "$at"
tap_ok "with its pattern intact after the GPU was filled" intact "$ST"
tap_ok "in its first attempt" sh -c "$GP describe $W | grep -q '^Attempt: *1\$'"
tap_is "started once" "$(nevents "$W" '"kind":"started"')" 1

# ---- 2. Restore without room, retried with a backoff ------------------------
O2=$(submit --project a1 --gpu 1 --name owner -- sleep 600)
check "the owner comes back again: the borrower is paused" "$W" \
    wait_until 60 at_least "$W" '"kind":"paused"' 2
check "the owner's workload runs" "$O2" wait_until 60 is_state "$O2" running
# A program outside the pool takes the GPU's memory.
"$HOLDER" "$LEDGER" 1 256M 248 "$TMP/outside.state" &
OUTSIDE=$!
tap_ok "a program outside the pool holds 248 MiB of the GPU" wait_until 60 past "$TMP/outside.state" 0
at=$(step_of "$ST")
tap_ok "gpupool delete of the owner's workload" sh -c "$GP delete $O2 >/dev/null"
check "the resume fails and is tried again, three times" "$W" \
    wait_until 60 at_least "$W" '"kind":"resume-failed"' 3
ev=$(events "$W")
tap_ok "the event gives the reason" contains "$ev" 'still paused: the CUDA restore of process [0-9]* failed (too little free GPU memory'
tap_ok "and the backoff: the next try in 1 s, then 2 s, then 4 s" \
    contains "$ev" 'try 1 failed, the next in 1 s.*try 2 failed, the next in 2 s.*try 3 failed, the next in 4 s'
# The events' times (ms since the epoch) of the first and third failures.
times=$(printf '%s' "$ev" | tr '{' '\n' | grep '"kind":"resume-failed"' |
    sed -n 's/.*"ts_ms":\([0-9]*\).*/\1/p')
t1=$(echo "$times" | sed -n 1p)
t3=$(echo "$times" | sed -n 3p)
tap_ok "the third try came at least 1.5 s after the first ($t1, $t3)" \
    sh -c "[ -n '$t1' ] && [ -n '$t3' ] && [ $((${t3:-0} - ${t1:-0})) -ge 1500 ]"
tap_is "still paused meanwhile" "$(state_of "$W")" paused
tap_is "frozen at its step" "$(step_of "$ST")" "$at"
kill -9 "$OUTSIDE"
wait "$OUTSIDE" 2>/dev/null
OUTSIDE=
check "the memory freed, the borrower is resumed" "$W" \
    wait_until 90 at_least "$W" '"kind":"resumed"' 2
check "and counts on from step $at" "$W" wait_until 30 past "$ST" "$at"
tap_ok "with its pattern intact" intact "$ST"
tap_ok "in its first attempt" sh -c "$GP describe $W | grep -q '^Attempt: *1\$'"
tap_is "started once" "$(nevents "$W" '"kind":"started"')" 1
$GP delete "$W" >/dev/null
tap_ok "the borrower deleted" wait_until 30 is_state "$W" deleted

# ---- The idle timer of a resumed session --------------------------------------
# An interactive session that may be paused is paused by a workload of higher
# priority for longer than its project's idle timeout; resumed, its idle
# timer starts again, so it is not suspended as soon as it is back.
S=$(api POST /api/v1/workloads '{"project":"a1","name":"session","gpu":1,"kind":"interactive",
"preemptible":true,"on_preempt":"pause","grace":"1s","command":["sleep","600"]}' |
    sed -n 's/.*"id":\([0-9]*\).*/\1/p')
check "an interactive session that may be paused runs" "$S" wait_until 60 is_state "$S" running
P=$(submit --project a1 --gpu 1 --priority 100 --name urgent -- sleep 600)
check "a workload of higher priority pauses it" "$S" wait_until 60 has_event "$S" '"kind":"paused"'
tap_ok "the project takes a 10s idle GPU timeout" sh -c "$GP queue set a1 --idle-gpu-timeout 10s >/dev/null"
ts_of() { # ID PATTERN: the time (ms since the epoch) of the first event matching
    events "$1" | tr '{' '\n' | grep -- "$2" | head -1 | sed -n 's/.*"ts_ms":\([0-9]*\).*/\1/p'
}
paused_at=$(ts_of "$S" '"kind":"paused"')
paused_long() { [ $(($(date +%s%3N) - paused_at)) -ge 12000 ]; }
tap_ok "it stays paused for longer than the timeout" wait_until 60 paused_long
$GP delete "$P" >/dev/null
check "the session is resumed" "$S" wait_until 60 has_event "$S" '"kind":"resumed"'
check "and later suspended for being idle" "$S" wait_until 90 has_event "$S" 'GPUs were idle for'
back=$(ts_of "$S" '"kind":"resumed"')
idle=$(ts_of "$S" 'GPUs were idle for')
tap_ok "only after a full timeout from its resume ($back, $idle), not at once" \
    test $((${idle:-0} - ${back:-0})) -ge 8000
$GP queue set a1 --idle-gpu-timeout 0 >/dev/null
$GP delete "$S" >/dev/null
tap_ok "the session deleted" wait_until 30 is_state "$S" deleted

# ---- 3. A process that does not answer the CUDA lock in time ----------------
# Its allocation sleeps inside the driver (a call under way holds the lock
# off), so the lock times out: the pause is undone and it is evicted in
# checkpoint mode, the event saying why, with its grace period (24 h, the
# checkpoint signal ignored) bounded by its project's reclaim_grace_max (2 s)
# as a reclaim in checkpoint mode is.
LS=$TMP/stuck.state
tap_ok "b1 takes a reclaim_grace_max of 2s" sh -c "$GP queue set b1 --reclaim-grace-max 2s >/dev/null"
# (The fake driver's variables are gpupool's to set: a shell sets it.)
L=$(submit --project b1 --gpu 1 --on-preempt pause --grace 24h --name stuck -- sh -c \
    'trap "" TERM; GPUPOOL_FAKE_ALLOC_DELAY_US=600000000 exec "$0" "$@"' "$HOLDER" "$LEDGER" 1 256M 16 "$LS")
check "a borrower stuck in an allocation runs" "$L" wait_until 60 is_state "$L" running
task_pid() { sed -n 's/^pid=//p' "$D"/tasks/w"$1".t0.a1/task 2>/dev/null; }
# Its main thread really inside the allocation's sleep, not merely started.
sleeping() { in_sleep "$(task_pid "$L")"; }
check "its main thread sleeps inside the allocation" "$L" wait_until 60 sleeping
O3=$(submit --project a1 --gpu 1 --name owner3 -- sleep 600)
check "the owner comes back: the lock times out and it is evicted in checkpoint mode" "$L" \
    wait_until 90 has_event "$L" 'in checkpoint mode (the pause failed: process [0-9]* did not answer the CUDA lock within [0-9]* ms)'
check "the owner's workload runs" "$O3" wait_until 60 is_state "$O3" running
tap_is "it was not paused" "$(nevents "$L" '"kind":"paused"')" 0
tap_ok "its grace period was bounded by reclaim_grace_max" has_event "$L" \
    "grace bounded by its project's reclaim_grace_max: checkpoint signal SIG[A-Z]* sent; stopped at the latest 2s later"
$GP queue set b1 --reclaim-grace-max 1m >/dev/null
$GP delete "$L" >/dev/null
$GP delete "$O3" >/dev/null
none_running() { [ "$(count_state running)" = 0 ]; }
tap_ok "both deleted" wait_until 30 none_running

# stuck_pausing NAME WHICH: another borrower stuck so (L), running, its main
# thread in the allocation's sleep; then its owner's workload (O3), and its
# pause under way.
pausing() { grep -q '^state=pausing$' "$D/tasks/w$L.t0.a1/pause" 2>/dev/null; }
stuck_pausing() {
    L=$(submit --project b1 --gpu 1 --on-preempt pause --grace 1s --name "$1" -- sh -c \
        'GPUPOOL_FAKE_ALLOC_DELAY_US=600000000 exec "$0" "$@"' "$HOLDER" "$LEDGER" 1 256M 16 "$LS")
    check "a $2 borrower stuck in an allocation runs" "$L" wait_until 60 is_state "$L" running
    check "its main thread sleeps inside the allocation" "$L" wait_until 60 sleeping
    O3=$(submit --project a1 --gpu 1 --name "owner-$1" -- sleep 600)
    check "the owner comes back: its pause is under way" "$L" wait_until 60 pausing
}

# ---- 3b. Suspended by its owner while its pause is under way ---------------
# The same stuck borrower: its pause step lasts the lock's timeout. A
# suspend that comes meanwhile waits for the step to end and then suspends
# it (it deleted the workload: the step's end knew only a delete).
stuck_pausing stuck2 second
tap_ok "gpupool suspend is taken during the pause" sh -c "$GP suspend $L >/dev/null"
check "when the step ends it is suspended, not deleted" "$L" wait_until 90 is_state "$L" suspended
tap_ok "the event says its owner suspended it" has_event "$L" '"kind":"suspended","message":"attempt 1 stopped: suspended by its owner"'
# (Not the eviction's note, which the pause step was for.)
tap_ok "and so does its reason" contains "$(api GET "/api/v1/workloads/$L")" '"reason":"suspended by its owner"'
check "the owner's workload runs" "$O3" wait_until 60 is_state "$O3" running
$GP delete "$L" >/dev/null
$GP delete "$O3" >/dev/null
tap_ok "both deleted" wait_until 30 none_running

# ---- 3c. Deleted during its pause, gpupoold killed before the step ends -----
# The delete, answered at once, waits for the step: it is stored with the
# workload, so that gpupoold killed meanwhile carries it out once restarted
# (the step undone), where the borrower ran on.
stuck_pausing stuck3 third
tap_ok "gpupool delete is taken during the pause" sh -c "$GP delete $L >/dev/null"
tap_ok "and the step is still under way" pausing
gpd_kill9
tap_ok "gpupoold killed with kill -9 starts again" gpd_start "$D" --period 200ms --poll 200ms \
    --usage-period 200ms --executor-config "$CFG"
check "the borrower is deleted" "$L" wait_until 60 is_state "$L" deleted
check "the owner's workload runs" "$O3" wait_until 60 is_state "$O3" running
$GP delete "$O3" >/dev/null
tap_ok "the owner deleted" wait_until 30 none_running

# ---- 4. gpupoold killed with kill -9 at each step of a pause and a resume ---
# gpupoold-pausekill (gpupoold with pause-kill.c, built for tests only) kills
# itself at step N of the executor's pause or resume; the real gpupoold,
# restarted, finds the borrower paused or running, never run again, and
# nothing left frozen.
gpd_stop
KS=$TMP/killed.state
start_real() { gpd_start "$D" --period 200ms --poll 200ms --usage-period 200ms --executor-config "$CFG"; }
start_killing() { # STEP
    GPUPOOL_TEST_PAUSE_KILL=$1
    export GPUPOOL_TEST_PAUSE_KILL
    real=$GPD
    GPD=$B/tests/daemon/gpupoold-pausekill
    start_real
    rc=$?
    GPD=$real
    unset GPUPOOL_TEST_PAUSE_KILL
    return $rc
}
died() { ! kill -0 "$GPD_PID" 2>/dev/null; }
reaped() { wait "$GPD_PID" 2>/dev/null; GPD_PID=; }
tap_ok "gpupoold restarts" start_real
K=$(submit --project b1 --gpu 1 --on-preempt pause --grace 24h --name killed -- \
    "$HOLDER" "$LEDGER" 1 256M 16 "$KS")
check "a borrower counts" "$K" wait_until 60 past "$KS" 2
gpd_stop
first_attempt() { # ID: attempt 1, started once
    $GP describe "$1" | grep -q '^Attempt: *1$' && [ "$(nevents "$1" '"kind":"started"')" = 1 ]
}
goes_on() { # STEP: K counts on from STEP (nothing frozen), intact, attempt 1; stops gpupoold
    check "it counts on from step $1: nothing is left frozen" "$K" wait_until 30 past "$KS" "$1"
    tap_ok "with its pattern intact" intact "$KS"
    check "in its first attempt, started once" "$K" first_attempt "$K"
    gpd_stop
}
for k in 1 2 3 4; do
    tap_ok "gpupoold-pausekill starts (kill at pause step $k)" start_killing $k
    O=$(submit --project a1 --gpu 1 --name owner-k$k -- sleep 600)
    check "the owner comes back and gpupoold dies at pause step $k" "$K" wait_until 90 died
    reaped
    tap_ok "gpupoold restarts" start_real
    check "the borrower ends up paused (step $k)" "$K" wait_until 60 is_state "$K" paused
    check "the owner's workload runs" "$O" wait_until 60 is_state "$O" running
    tap_ok "the borrower is frozen" frozen "$KS"
    at=$(step_of "$KS")
    $GP delete "$O" >/dev/null
    check "the owner gone, the borrower is resumed" "$K" wait_until 60 is_state "$K" running
    goes_on "$at"
done
for k in 11 12 13; do
    tap_ok "gpupoold-pausekill starts (kill at resume step $k)" start_killing $k
    O=$(submit --project a1 --gpu 1 --name owner-k$k -- sleep 600)
    check "the owner comes back: the borrower is paused" "$K" wait_until 60 is_state "$K" paused
    check "the owner's workload runs" "$O" wait_until 60 is_state "$O" running
    at=$(step_of "$KS")
    $GP delete "$O" >/dev/null
    check "the owner gone, gpupoold dies at resume step $k" "$K" wait_until 90 died
    reaped
    tap_ok "gpupoold restarts" start_real
    check "the borrower runs (step $k)" "$K" wait_until 60 is_state "$K" running
    goes_on "$at"
done

# ---- 5. A workload of several tasks is evicted in checkpoint mode ----------
D2=$TMP/gang
mkdir -p "$D2"
printf 'node = local\ndomain = local\ngpu = T4 1G 2\n' >"$TMP/inv.conf"
tap_ok "gpupoold starts with 2 emulated GPUs" gpd_start "$D2" --period 200ms --poll 200ms \
    --executor-config "state_dir=$D2/tasks,inventory=$TMP/inv.conf"
tap_ok "queues created" sh -c "$GP queue create A --deserved 2 >/dev/null &&
    $GP queue create a1 --parent A --deserved 2 >/dev/null &&
    $GP queue create B --deserved 0 >/dev/null && $GP queue create b1 --parent B --deserved 0 >/dev/null"
G=$(submit --project b1 --gang 2 --gpu 1 --on-preempt pause --grace 1s --name gang -- sleep 600)
check "a borrower of two tasks runs" "$G" wait_until 60 is_state "$G" running
O4=$(submit --project a1 --gpu 1 --name owner4 -- sleep 600)
check "the owner comes back: it is evicted in checkpoint mode with the engine's reason" "$G" \
    wait_until 60 has_event "$G" 'in checkpoint mode (on_preempt pause: a workload of several tasks is not paused)'
check "the owner's workload runs" "$O4" wait_until 60 is_state "$O4" running
tap_is "it was not paused" "$(nevents "$G" '"kind":"paused"')" 0
gpd_stop

# ---- 6. gpupoold killed during a resume onto another GPU -------------------
# Two fake GPUs. The borrower, paused on its GPU for an owner, is resumed on
# the other once that frees, and gpupoold-pausekill dies there: at step 10,
# as the resume begins (the task still paused on its GPU), or at step 11,
# once its journal says "resuming" onto the other GPU, when the restart's
# recovery finishes the resume but the restore fails (the task's first
# restore fails, as GPUPOOL_FAKE_FAIL_RESTORES says) and the task stays
# paused on its GPU. Restarted, the workload is resumed, and it must be
# booked on the GPU its task uses (the executor's record of its GPUs). The
# store kept the new GPU from before the step: the workload, paused again on
# its old GPU, was booked on the new one, and its next resume, "onto the
# same GPU", left the task on the old one, booked on the other.
rm -f "/dev/shm/$LEDGER"
GPUPOOL_FAKE_GPUS=2
slice_gpu() { api GET "/api/v1/workloads/$1" | sed -n 's/.*"slices":\[\[\([0-9]*\),.*/\1/p'; }
moved_resume() { # STEP FAILED_RESTORES
    D=$TMP/moved$1
    mkdir -p "$D"
    LEDGER=gpfake-pausemoved$1-$$
    GPUPOOL_FAKE_LEDGER=$LEDGER
    CFG="state_dir=$D/tasks,nvml=$B/fake/libnvidia-ml.so.1,cuda=$B/fake/libcuda.so.1,interposer=$TMP/none.so"
    MS=$TMP/moved$1.state
    tap_ok "gpupoold-pausekill starts on two fake GPUs (kill at resume step $1)" start_killing "$1"
    tap_ok "queues created" sh -c "$GP queue create A --deserved 2 >/dev/null &&
        $GP queue create a1 --parent A --deserved 2 >/dev/null &&
        $GP queue create B --deserved 0 >/dev/null && $GP queue create b1 --parent B --deserved 0 >/dev/null"
    M=$(submit --project b1 --gpu 1 --on-preempt pause --grace 24h --name moved -- sh -c \
        'export GPUPOOL_FAKE_FAIL_RESTORES=$1; shift; exec "$0" "$@"' "$HOLDER" "$2" "$LEDGER" 2 256M 16 "$MS")
    check "a borrower counts" "$M" wait_until 60 past "$MS" 2
    check "it is running" "$M" wait_until 60 is_state "$M" running
    O1=$(submit --project a1 --gpu 1 --name owner-m1 -- sleep 600)
    check "an owner runs on the other GPU" "$O1" wait_until 60 is_state "$O1" running
    O2=$(submit --project a1 --gpu 1 --name owner-m2 -- sleep 600)
    check "a second owner: the borrower is paused" "$M" wait_until 60 is_state "$M" paused
    check "the second owner runs on its GPU" "$O2" wait_until 60 is_state "$O2" running
    at=$(step_of "$MS")
    $GP delete "$O1" >/dev/null
    check "the first owner gone, gpupoold dies resuming the borrower onto its GPU (step $1)" "$M" \
        wait_until 90 died
    reaped
    tap_ok "gpupoold restarts" start_real
    check "the borrower runs" "$M" wait_until 60 is_state "$M" running
    [ "$2" = 0 ] || tap_ok "after the restart's restore failed" grep -q "workload $M: still paused" "$D.log"
    tap_is "it is booked on the GPU its task uses (step $1)" "$(slice_gpu "$M")" \
        "$(sed -n 's/^gpu=\([0-9]*\) .*/\1/p' "$D/tasks/w$M.t0.a1/binding")"
    tap_is "which the second owner does not" "$(slice_gpu "$M")" "$(slice_gpu "$O2" | tr 01 10)"
    check "it counts on from step $at" "$M" wait_until 30 past "$MS" "$at"
    tap_ok "with its pattern intact" intact "$MS"
    gpd_stop
    rm -f "/dev/shm/$LEDGER"
}
moved_resume 10 0
moved_resume 11 1

tap_done
