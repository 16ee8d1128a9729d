#!/bin/sh
# The daemon out of memory. First while it recovers: a list of the workloads
# to recover that cannot grow fails the start (exit 1, saying so) and changes
# nothing, and the next start recovers them. It once left the workload out:
# its task was reaped as an orphan and the workload stayed "running" with
# nothing behind it (failalloc.so fails every realloc of the size the list
# first grows to, 64 ids).
#
# The list of the queues' specs, read for the queue routes: one that cannot
# grow is an error (500, out of memory), never a shorter list. It once
# stopped at the spec it had no room for, so that the queues after it were
# listed without their weights and could not be changed ("no queue named").
# The list holds 8 specs at first, then twice as many: failalloc.so fails
# its growth to 16 (the size of a spec from type-size), which 20
# queues reach.
#
# A workload whose task was lost while gpupoold was stopped, the allocations
# of its recovery failing one at a time: it is requeued by a later start,
# never failed. A shortage in handing it back to the engine once failed it.
#
# A submission to a running gpupoold, the loop's allocations failing one at
# a time in its hand-over to the engine: it stays pending, is handed over
# again and runs. A shortage in the engine's submit once failed it for good,
# and one in reading it first left it pending until a restart. An owner's
# resume failing so: answered 200, or 503 changing nothing, never 409 (as
# the engine's shortage once was) or 500.
#
# A launch whose Unix user's groups cannot be read for want of memory is
# deferred and tried again, and the workload runs. It once failed for
# good, its user said to be in more than 64 groups. One whose workload's
# environment cannot be made is too; it once ran without a variable.
#
# The tokens, read into a list at start that grows a token at a time: one
# that cannot grow fails the start (exit 1, out of memory). It once stopped
# there with no error, so that a store whose tokens went unread looked new:
# gpupoold made a second admin token and wrote its secret over the admin's
# token file, and every other token was refused until the next start.
#
# The export of finished workloads, its HTTP thread's allocations failing one
# at a time: an answer 200 is the whole export. A shortage in reading a
# workload's stored request once left the workload out of an answer 200.
#
# Then the sweep: the loop thread's allocations (recovery, polls, cycles,
# launches, records) fail one at a time, the Nth in each run of the daemon,
# while a workload runs and another is submitted. Each run must end by its
# own choice (no crash), the running task must never be started again, and
# a last, normal start must find every workload, finished or running on its
# first task. GPD_OOM_STEP (default 24) is the distance between the failed
# allocations; 1 fails each in turn (about 1,000 runs); GPD_OOM_FIRST and
# GPD_OOM_LAST bound the sweep. The running workload sleeps a day: a full
# sweep takes longer than ten minutes, and a task that ended by itself would
# read as one the daemon stopped (it did, once, near run 1,347).
. tests/lib/tap.sh
. tests/daemon/lib.sh
skip_if_sanitized

# one_runs DIR: gpupoold started on store DIR, a workload of project p runs
# (a day's sleep).
one_runs() {
    mkdir -p "$1"
    tap_ok "gpupoold starts on $1" gpd_start "$1" --period 200ms --poll 200ms
    $GP queue create p >/dev/null
    $GP submit --project p -- sleep 86400 >/dev/null
    tap_ok "a workload runs" wait_until 30 has_count 1 running
}
D=$TMP/oom
one_runs "$D"
task=$(ls "$D"/tasks/*/task | head -1)
pid=$(sed -n 's/^pid=//p' "$task")
gpd_stop

out=$(LD_PRELOAD=$B/tests/daemon/failalloc.so GPD_TEST_FAIL_REALLOC=512 timeout 30 \
    "$GPD" --data-dir "$D" --listen 127.0.0.1:0 --allow-root-workloads 2>&1)
tap_is "a restart that runs out of memory recovering exits 1" "$?" 1
tap_ok "saying so" contains "$out" "out of memory listing the workloads to recover"
tap_ok "the workload's task still runs" kill -0 "$pid"

tap_ok "the next start comes up" gpd_start "$D" --period 200ms --poll 200ms
tap_ok "and recovers the workload, running" wait_until 30 has_count 1 running
tap_ok "on the same task" kill -0 "$pid"
gpd_stop

# ---- A lost task's requeue at start ----
# A workload whose task was lost while gpupoold was stopped, its recovery's
# allocations failing one at a time (the Nth of each run, GPD_OOM_LOST_STEP
# apart, each run from the same store): a shortage in handing it back to the
# engine is tried again by a later start, never taken for a refusal. It once
# failed the workload for good, with no reason.
L=$TMP/lost
one_runs "$L"
gpd_stop
# kill_tasks DIR: ends the tasks and supervisors of DIR's local executor.
kill_tasks() {
    for f in "$1"/tasks/*/task; do
        [ -f "$f" ] && kill -9 "-$(sed -n 's/^pid=//p' "$f")" 2>/dev/null
    done
    for f in "$1"/tasks/*/handle; do
        [ -f "$f" ] && kill -9 "$(cut -d: -f3 "$f")" 2>/dev/null
    done
}
spid=$(cut -d: -f3 "$(ls "$L"/tasks/*/handle | head -1)")
kill_tasks "$L"
gone() { ! kill -0 "$1" 2>/dev/null; }
tap_ok "gpupoold stopped, its task is lost" wait_until 30 gone "$spid"
cp -a "$L" "$TMP/lost.saved"
rm -f "$TMP/count"
GPD_TEST_FAIL_THREAD=gpd-loop GPD_TEST_FAIL_NTH=0 GPD_TEST_FAIL_COUNT=$TMP/count \
    LD_PRELOAD=$B/tests/daemon/failalloc.so gpd_start "$L" --period 200ms --poll 200ms
gpd_stop
last=$(cat "$TMP/count") # the loop's allocations until it serves
runs=0 failed=
nth=1
while [ "$nth" -le "$last" ]; do
    kill_tasks "$L"
    rm -rf "$L" && cp -a "$TMP/lost.saved" "$L"
    if GPD_TEST_FAIL_THREAD=gpd-loop GPD_TEST_FAIL_NTH=$nth GPD_TEST_FAIL_COUNT=$TMP/count \
        LD_PRELOAD=$B/tests/daemon/failalloc.so gpd_start "$L" --period 200ms --poll 200ms >/dev/null; then
        # (A shortage in its launch after the recovery fails it, saying so.)
        is_state 1 failed && ! contains "$(api GET /api/v1/workloads/1)" 'could not be launched' &&
            failed="$failed $nth"
        gpd_stop
    else
        wait "$GPD_PID" 2>/dev/null
        GPD_PID=
    fi
    runs=$((runs + 1))
    nth=$((nth + ${GPD_OOM_LOST_STEP:-3}))
done
tap_is "$runs starts recovering it, each failing one allocation: it never failed" "$failed" ""
kill_tasks "$L"

# ---- Handing a workload to the engine: a submission, a resume ----
# idle_failing DIR N [FLAGS...]: gpupoold on a fresh copy of DIR.saved, idle
# (cycles, usage samples and inventories an hour apart, so that nothing else
# allocates; FLAGS may change them), whose loop's Nth allocation from then on
# fails (0: none). The count begins once gpupoold is up (failalloc.so's
# GPD_TEST_FAIL_ARM): counted from its start, past the count of a whole idle
# run, a sweep once missed the engine's submit in all of its 100 runs (a
# full test run, on a loaded machine).
idle_failing() {
    rm -f "$TMP/armed"
    rm -rf "$1" && cp -a "$1.saved" "$1"
    d=$1 nth_fail=$2
    shift 2
    GPD_TEST_FAIL_THREAD=gpd-loop GPD_TEST_FAIL_NTH=$nth_fail GPD_TEST_FAIL_ARM=$TMP/armed \
        LD_PRELOAD=$B/tests/daemon/failalloc.so gpd_start "$d" --period 1h --poll 200ms \
        --usage-period 1h --inventory-period 1h "$@" && touch "$TMP/armed"
}
# sweep_engine DIR RUN: RUN N for each N from the first allocation after
# gpupoold is idle on DIR, GPD_OOM_ENGINE_STEP apart (default 4), then,
# from the first run that failed the engine's submit (RUN returns 0), each
# in turn until one falls past it; engine is that first run, runs their
# number.
sweep_engine() {
    step=${GPD_OOM_ENGINE_STEP:-4}
    nth=1 runs=0 engine=
    while [ "$nth" -le "${GPD_OOM_ENGINE_SPAN:-400}" ]; do
        runs=$((runs + 1))
        if "$2" "$nth"; then
            if [ -z "$engine" ]; then # from the run before on, one at a time
                engine=$nth
                nth=$((nth - step + 1))
                step=1
                continue
            fi
        elif [ -n "$engine" ] && [ "$nth" -gt "$engine" ]; then
            break # past the engine's submit
        fi
        nth=$((nth + step))
    done
}

# A workload submitted, the loop's allocations failing through its
# hand-over to the engine (its read, its request's parse, the engine's
# submit): it stays pending, is handed over again and runs. A shortage in
# the engine's submit once failed it for good, and one before it left it
# pending until a restart.
S=$TMP/submit
mkdir -p "$S"
tap_ok "gpupoold starts on a store for submissions" gpd_start "$S"
$GP queue create p >/dev/null
gpd_stop
cp -a "$S" "$S.saved"
over() { is_state "$1" succeeded || is_state "$1" failed; }
engine_short() { grep -c 'cannot hand it to the scheduler for now (out of memory)' "$S.log"; }
# submit_failing N: a workload submitted to gpupoold whose loop's Nth
# allocation fails, its fate added to lost unless it ran; 0 if the engine's
# submit was the one that failed (the log says so).
submit_failing() {
    before=$(engine_short)
    idle_failing "$S" "$1"
    $GP submit --project p -- true >/dev/null
    wait_until 20 over 1
    is_state 1 succeeded || lost="$lost $1:$(state_of 1)"
    gpd_stop
    [ "$(engine_short)" -gt "$before" ]
}
lost=
sweep_engine "$S" submit_failing
tap_ok "the sweep failed the engine's submit" [ -n "$engine" ]
tap_is "$runs submissions, each failing one allocation of the loop: every one ran" "$lost" ""

# A suspended workload resumed by its owner, the loop's allocations failing
# through the resume (the workload's read, its request's parse, the
# engine's submit): the answer is 200, or 503 (try again) with the workload
# still suspended, and a resume then succeeds. A shortage in the engine's
# submit was once answered 409, as if it could not be resumed, and one
# before it 500.
R=$TMP/resume
mkdir -p "$R"
tap_ok "gpupoold starts on a store for resumes" gpd_start "$R" --period 200ms --poll 200ms
$GP queue create p >/dev/null
$GP submit --project p -- sleep 600 >/dev/null
tap_ok "a workload runs" wait_until 30 is_state 1 running
$GP suspend 1 >/dev/null
tap_ok "and is suspended" wait_until 60 is_state 1 suspended
gpd_stop
kill_tasks "$R"
cp -a "$R" "$R.saved"
# resume_failing N: workload 1 resumed by gpupoold whose loop's Nth
# allocation fails, what went wrong added to wrong; 0 if the engine's
# submit was the one that failed (the answer says so).
resume_failing() {
    idle_failing "$R" "$1"
    out=$(api POST /api/v1/workloads/1/resume)
    case ${out##* } in
    200) ;;
    503)
        is_state 1 suspended || wrong="$wrong $1:$(state_of 1)"
        again=$(api POST /api/v1/workloads/1/resume)
        [ "${again##* }" = 200 ] || wrong="$wrong $1:again:${again##* }"
        ;;
    *) wrong="$wrong $1:${out##* }" ;;
    esac
    gpd_stop
    kill_tasks "$R"
    contains "$out" '(out of memory); try again'
}
wrong=
sweep_engine "$R" resume_failing
tap_ok "the sweep failed the engine's submit" [ -n "$engine" ]
tap_is "$runs resumes, each failing one allocation of the loop: each 200, or 503 changing nothing" \
    "$wrong" ""

# ---- A cycle that binds a workload ----
# A workload submitted to an idle gpupoold, the loop's allocations failing
# one at a time from its hand-over to the engine through the cycle that
# binds it (the engine's cycle, then its decision carried out, up to the
# launch): it runs each time, with no restart. A shortage in copying the
# cycle's decisions out of the engine once dropped them after the engine
# had made them: the workload was held bound in the engine with nothing
# launched, its GPU booked for nothing, until a restart.
handed_back() { grep -c 'back to the queue' "$S.log"; }
# bind_failing N: a workload submitted to gpupoold whose loop's Nth
# allocation fails, its fate added to stuck unless it ran; sets short (its
# hand-over to the engine failed) and back (its bind handed it back).
bind_failing() {
    s0=$(engine_short) h0=$(handed_back)
    idle_failing "$S" "$1" --period 2s
    $GP submit --project p -- true >/dev/null
    wait_until 20 over 1
    is_state 1 succeeded || stuck="$stuck $1:$(state_of 1)"
    gpd_stop
    short=$(($(engine_short) - s0)) back=$(($(handed_back) - h0))
}
# From the first allocation after gpupoold is idle, GPD_OOM_BIND_STEP apart
# (default 8), until one fails the hand-over; then from the run after the
# one before it, each in turn until one past a bind handed back hands none
# back (the launch's own shortages are the sections below). A cycle the
# engine made without memory it could do without binds nothing, and the
# next, 2 s later, binds the workload.
step=${GPD_OOM_BIND_STEP:-8}
nth=1 runs=0 handover= seen_back= stuck=
while [ "$nth" -le 1000 ]; do
    bind_failing "$nth"
    runs=$((runs + 1))
    if [ "$short" -gt 0 ] && [ -z "$handover" ]; then
        handover=$nth
        nth=$((nth - step + 1)) step=1
        continue
    fi
    if [ "$back" -gt 0 ]; then
        seen_back=$nth
    elif [ -n "$seen_back" ]; then
        break
    fi
    nth=$((nth + step))
done
tap_ok "the sweep failed the hand-over to the engine" [ -n "$handover" ]
tap_ok "and made a bind hand its workload back" [ -n "$seen_back" ]
tap_is "$runs submissions, each failing one allocation of the loop through the cycle that binds it: each ran" \
    "$stuck" ""

# ---- A launch out of memory ----
# short_launch DIR SEAM=N WHAT SUBMIT-ARGS...: gpupoold on a new store DIR
# whose failalloc.so fails the first N calls of SEAM (WHAT says which), a
# workload submitted with SUBMIT-ARGS, which must end having succeeded; its
# description is left in $out.
short_launch() {
    mkdir -p "$1"
    eval "$2 LD_PRELOAD=\$B/tests/daemon/failalloc.so tap_ok \"gpupoold starts, \$3 failing\"" \
        'gpd_start "$1" --period 200ms --poll 200ms'
    shift 3
    $GP queue create p >/dev/null
    $GP submit --project p "$@" >/dev/null
    tap_ok "the workload ends" wait_until 60 over 1
    tap_is "having succeeded" "$(state_of 1)" succeeded
    out=$($GP describe 1)
}

# The C library out of memory reading the groups of a task's Unix user, at
# its first two launches: the launch is deferred, saying why, and tried
# again, and the workload runs. It once failed for good, its user said to
# be "in more than 64 groups".
short_launch "$TMP/groups" GPD_TEST_FAIL_GROUPS=2 "its first two reads of a user's groups" -- true
tap_ok "its launch was deferred, out of memory" \
    contains "$out" "not launched yet (run_as: out of memory reading the groups of user"
tap_is "its user never said to be in too many groups" "$(printf '%s\n' "$out" | grep -c 'more than')" 0
gpd_stop

# The workload's own environment variables out of memory at its first
# launch: the launch is deferred and tried again, and the task has them. It
# once launched without the variable that could not be made.
short_launch "$TMP/env" GPD_TEST_FAIL_ASPRINTF=1 "its first variable of a workload's" \
    --env GP_OOM_VAR=kept -- sh -c 'echo "var=$GP_OOM_VAR"'
tap_ok "its task had the variable" contains "$($GP logs 1)" "var=kept"
tap_ok "its launch was deferred, out of memory" \
    contains "$out" "not launched yet (out of memory making the workload's environment)"
gpd_stop

# ---- The queues' specs ----
Q=$TMP/queues
mkdir -p "$Q"
tap_ok "gpupoold starts on a second store" gpd_start "$Q"
i=1
while [ "$i" -le 20 ]; do
    $GP queue create "q$i" >/dev/null || echo "# queue q$i was not created"
    i=$((i + 1))
done
gpd_stop
size=$(($("$B/tests/daemon/type-size" gp_queue_spec) * 16))
GPD_TEST_FAIL_REALLOC=$size LD_PRELOAD=$B/tests/daemon/failalloc.so \
    tap_ok "it starts again, a list of 16 queue specs failing to grow" gpd_start "$Q"
out=$(api GET /api/v1/queues)
tap_is "the queues' listing answers 500" "${out##* }" 500
tap_ok "saying it ran out of memory" contains "$out" "out of memory"
out=$(api GET /api/v1/queues/q20)
tap_is "the last queue's reading answers 500" "${out##* }" 500
out=$(api PATCH /api/v1/queues/q20 '{"priority": 1}')
tap_is "its change answers 500, not 404" "${out##* }" 500
gpd_stop
tap_ok "a normal start lists every queue" gpd_start "$Q"
tap_is "with its weight" "$(api GET /api/v1/queues | grep -o '"weight"' | wc -l)" 20
gpd_stop

# ---- The tokens ----
T=$TMP/tokens
mkdir -p "$T"
tap_ok "gpupoold starts on a third store" gpd_start "$T"
old=$GPUPOOL_TOKEN
gpd_stop
size=$("$B/tests/daemon/type-size" gpd__token)
out=$(GPD_TEST_FAIL_REALLOC=$size LD_PRELOAD=$B/tests/daemon/failalloc.so timeout 30 \
    "$GPD" --data-dir "$T" --listen 127.0.0.1:0 2>&1)
tap_is "a start that cannot read its tokens exits 1" "$?" 1
tap_ok "saying so" contains "$out" "out of memory listing tokens"
tap_is "the admin's token file is as it was" "$(cat "$T/admin.token")" "$old"
tap_ok "the next start comes up" gpd_start "$T"
tap_is "the admin's token is still the one" "$GPUPOOL_TOKEN" "$old"
tap_is "no token was added" "$(api GET /api/v1/tokens | grep -o '"id"' | wc -l)" 1
gpd_stop

# ---- The export of workloads ----
# The HTTP threads' allocations fail one at a time, the Nth of each run, in
# the second export of finished workloads (GPD_OOM_EXPORT_STEP apart,
# default 5): an answer 200 must be the whole export. The export read each
# row's text with sqlite3_column_text, and took a shortage in parsing a
# workload's stored request for a request that no longer parses: the
# workload was left out of an answer 200.
X=$TMP/export
mkdir -p "$X"
printf 'node = gpu-node-1\ndomain = local\ngpu = H100 80G 4\n' >"$TMP/inv.conf"
XC="state_dir=$X/tasks,inventory=$TMP/inv.conf,interposer=$TMP/none.so,cgroup=off"
tap_ok "gpupoold starts on a fourth store" gpd_start "$X" --executor-config "$XC"
$GP queue create nlp >/dev/null
for i in 1 2 3; do $GP submit --project nlp --gpu 1 -- true >/dev/null; done
tap_ok "three workloads finish" wait_until 60 has_count 3 succeeded
whole=$(api GET /api/v1/export/workloads)
gpd_stop
http_failing() { # N: gpupoold whose HTTP threads' Nth allocation fails (0: none), counting
    GPD_TEST_FAIL_THREAD=MHD-worker GPD_TEST_FAIL_NTH=$1 GPD_TEST_FAIL_COUNT=$TMP/count \
        LD_PRELOAD=$B/tests/daemon/failalloc.so gpd_start "$X" --executor-config "$XC"
}
rm -f "$TMP/count"
http_failing 0
api GET /api/v1/export/workloads >/dev/null
first=$(cat "$TMP/count")
api GET /api/v1/export/workloads >/dev/null
second=$(cat "$TMP/count")
gpd_stop
nth=$((first + 1)) runs=0 short=
while [ "$nth" -le "$second" ]; do
    http_failing "$nth"
    for i in 1 2; do
        out=$(api GET /api/v1/export/workloads)
        [ "${out##* }" != 200 ] || [ "$out" = "$whole" ] || short="$short $nth"
    done
    gpd_stop
    runs=$((runs + 1))
    nth=$((nth + ${GPD_OOM_EXPORT_STEP:-5}))
done
tap_is "$runs runs of an export, each failing one allocation: every answer 200 is whole" \
    "$short" ""

# ---- The sweep ----
step=${GPD_OOM_STEP:-24}
last=${GPD_OOM_LAST:-720}
runs=0 crashed= lost_task= submitted=0
nth=${GPD_OOM_FIRST:-1} # not n, which gpd_start uses
while [ "$nth" -le "$last" ]; do
    rm -f "$TMP/count"
    if GPD_TEST_FAIL_THREAD=gpd-loop GPD_TEST_FAIL_NTH=$nth GPD_TEST_FAIL_COUNT=$TMP/count \
        LD_PRELOAD=$B/tests/daemon/failalloc.so gpd_start "$D" --period 200ms --poll 200ms; then
        $GP submit --project p -- true >/dev/null 2>&1 && submitted=$((submitted + 1))
        # Until the Nth allocation has come and gone (or the daemon gave up).
        wait_until 20 sh -c "[ \"\$(cat $TMP/count 2>/dev/null || echo 0)\" -gt $nth ] ||
            ! kill -0 $GPD_PID" || true
        kill "$GPD_PID" 2>/dev/null
        wait "$GPD_PID"
        st=$?
        GPD_PID=
    else
        wait "$GPD_PID" 2>/dev/null
        st=$?
        GPD_PID=
    fi
    # 0: stopped by the test; 1: gave up, saying why. Anything else is a
    # crash (a signal) or an error the daemon does not know it has.
    case $st in
    0 | 1) ;;
    *)
        crashed="$crashed $nth:$st"
        echo "# run $nth ended with status $st; the end of its log:"
        tail -5 "$D.log" | sed 's/^/#   /'
        ;;
    esac
    if ! kill -0 "$pid" 2>/dev/null && [ -z "$lost_task" ]; then
        # The first time only: what its task directory and the daemon say.
        echo "# run $nth: the running task is gone; its directory:"
        for f in "${task%/task}"/*; do
            [ -f "$f" ] || continue
            echo "#  $f:"
            tail -5 "$f" | sed 's/^/#    /'
        done
        echo "# the end of the daemon's log:"
        tail -20 "$D.log" | sed 's/^/#   /'
    fi
    kill -0 "$pid" 2>/dev/null || lost_task="$lost_task $nth"
    runs=$((runs + 1))
    nth=$((nth + step))
done
tap_is "$runs runs, each failing one allocation of the loop: none crashed" "$crashed" ""
tap_is "the running task was never stopped" "$lost_task" ""
tap_ok "a normal start after them comes up" gpd_start "$D" --period 200ms --poll 200ms
tap_ok "the first workload runs on its first task" \
    sh -c "$GP describe 1 | grep -q 'attempt.*1' && kill -0 $pid"
tap_ok "every workload submitted during the sweep ($submitted) is kept and ends" \
    wait_until 60 has_count "$submitted" succeeded ||
    for st in pending starting running failed; do echo "# $st: $(count_state $st)"; done
gpd_stop
tap_done
