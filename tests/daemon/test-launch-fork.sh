#!/bin/sh
# A launch of the local executor that cannot fork for now (EAGAIN, ENOMEM:
# no process slot or no memory), whether gpupoold's own fork, the
# intermediate's fork of the supervisor or the supervisor's fork of the
# task, or that cannot make an interactive task's terminal for now (ENOSPC:
# no pseudo-terminal left), is tried again with the same key, the workload
# kept starting with a launch-deferred event saying why; once it can, it
# runs, once, and each failed try leaves nothing behind: no task directory,
# cgroup, slice file or ledger, between the tries and after a workload
# deleted while its launch waits, and after gpupoold restarted while it
# waited. A fork that fails for good (EPERM) still fails the workload at
# once. failfork.so, preloaded into gpupoold, makes
# the forks fail that the file $F asks for ("N WHERE [ERRNO]"), and the
# terminals that $P asks for.
. tests/lib/tap.sh
. tests/daemon/lib.sh
skip_if_sanitized

D=$TMP/pool
F=$TMP/forks
mkdir -p "$D"
P=$TMP/ptys
GPD_TEST_FAIL_FORK=$F GPD_TEST_FAIL_PTY=$P LD_PRELOAD=$B/tests/daemon/failfork.so \
    proj_pool "$D" --period 300ms --poll 200ms
inst=$(cat "$D/tasks/instance" 2>/dev/null)

# sub CMD...: submits a workload on half a GPU (a slice file, a ledger and
# cgroups where the host offers them); prints its id.
sub() {
    $GP submit --project proj --gpu 0.5 --cpu 1 --memory 1G -- "$@" | grep -o '[0-9][0-9]*' | head -1
}
# deferred ID: how many launch-deferred events workload ID has.
deferred() { $GP describe "$1" | grep -c 'not launched yet (launch: '; }
deferred_twice() { [ "$(deferred "$1")" -ge 2 ]; }
# files_of ID: what the executor holds for workload ID's tasks now.
files_of() {
    ls -d "$D"/tasks/w"$1".* /run/gpupool/slices/"$inst".w"$1".* \
        /run/gpupool/ledgers/"$inst".w"$1".* /sys/fs/cgroup/*/gpupool/"$inst"/w"$1".* \
        /sys/fs/cgroup/gpupool/"$inst"/w"$1".* 2>/dev/null
}

# The first slice launched probes the host's mount namespaces with a fork
# of its own: done here, before any fork is made to fail.
id=$(sub true)
tap_ok "a first workload on a slice succeeds" wait_until 30 is_state "$id" succeeded

# What each failed fork says: the supervisor's says that the supervisor
# started and could not start the task.
why_daemon="cannot fork"
why_intermediate="cannot start the task's supervisor"
why_supervisor="the task's supervisor cannot start the task"
for where in daemon intermediate supervisor; do
    eval "why=\$why_$where"
    echo "2 $where" >"$F"
    id=$(sub sh -c "echo ran >>$TMP/runs-$where")
    tap_ok "$where: the first two forks failing, the launch is tried again and runs" \
        wait_until 60 is_state "$id" succeeded
    tap_is "$where: both failed forks were made" "$(cat "$F")" "0 $where 11"
    tap_is "$where: its events say why, twice" "$(deferred "$id")" 2
    tap_ok "$where: the reason is the fork's ($why)" sh -c \
        "$GP describe $id | grep -q \"not launched yet (launch: $why: Resource temporarily unavailable); trying again in\""
    tap_is "$where: its command ran once" "$(cat "$TMP/runs-$where")" ran
    tap_is "$where: in its first attempt" \
        "$($GP --json describe "$id" | grep -o '"outcome"' | wc -l)" 1
    tap_is "$where: its log says so of each try that could not start" \
        "$(grep -c "^==== gpupool: not started yet: launch: $why: .*; the launch will be tried again ====\$" \
            "$D/logs/$id/task-0.log")" 2
    tap_ok "$where: nothing of it is left once it is reaped" wait_until 30 no_trace "$D" "$id"
done

# An interactive task whose terminal cannot be made for now (no
# pseudo-terminal left on the host: ENOSPC) is tried again as a fork is, and
# says what failed.
# (An interactive workload runs only inside its project's deserved quota.)
$GP queue set dept --deserved 1 >/dev/null && $GP queue set proj --deserved 1 >/dev/null
echo "2 supervisor 28" >"$P"
id=$(api POST /api/v1/workloads "{\"project\":\"proj\",\"gpu\":0.5,
\"tty\":true,\"command\":[\"sh\",\"-c\",\"echo ran >>$TMP/runs-pty\"]}" |
    sed -n 's/.*"id":\([0-9]*\).*/\1/p')
tap_ok "pty: the first two terminals failing, the launch is tried again and runs" \
    wait_until 60 is_state "$id" succeeded
tap_is "pty: both failed opens were made" "$(cat "$P")" "0 supervisor 28"
tap_is "pty: its events say why, twice" "$(deferred "$id")" 2
tap_ok "pty: the reason is the terminal's" sh -c \
    "$GP describe $id | grep -q \"not launched yet (launch: the task's supervisor cannot make the task's terminal: No space left on device); trying again in\""
tap_is "pty: its command ran once" "$(cat "$TMP/runs-pty")" ran
tap_ok "pty: nothing of it is left once it is reaped" wait_until 30 no_trace "$D" "$id"

# Terminals that keep failing hold only the launches that need one: a batch
# workload submitted meanwhile starts at once (it waited on the terminals'
# hold before, so that a tenant using up the host's pseudo-terminals held
# every tenant's batch work).
echo "1000 supervisor 28" >"$P"
tid=$(api POST /api/v1/workloads "{\"project\":\"proj\",\"gpu\":0.5,
\"tty\":true,\"command\":[\"sleep\",\"600\"]}" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
tap_ok "pty: a launch whose terminal keeps failing is tried again" wait_until 60 deferred_twice "$tid"
bid=$(sub true)
tap_ok "pty: a batch workload submitted meanwhile runs" wait_until 30 is_state "$bid" succeeded
tap_is "pty: without waiting on the terminals' hold" "$(deferred "$bid")" 0
tap_is "pty: the interactive one still waits for its terminal" "$(state_of "$tid")" starting
echo "0 supervisor 28" >"$P"
$GP delete "$tid" >/dev/null
tap_ok "pty: deleted while its launch waits" wait_until 30 is_state "$tid" deleted
tap_ok "pty: nothing of it is left" wait_until 30 no_trace "$D" "$tid"

# ENOMEM is as transient as EAGAIN; while the fork keeps failing, nothing of
# the failed tries is there between them, and deleting the workload leaves
# nothing either.
echo "1000 supervisor 12" >"$F"
id=$(sub sleep 600)
tap_ok "a launch whose fork keeps failing with ENOMEM is tried again" \
    wait_until 60 deferred_twice "$id"
tap_is "the workload stays starting" "$(state_of "$id")" starting
# A try under way may be seen in passing: what lasts is what counts.
left() { [ -z "$(files_of "$1")" ]; }
tap_ok "between its tries nothing of them is left" wait_until 30 left "$id"
files_of "$id" | sed 's/^/# left: /'
$GP delete "$id" >/dev/null
tap_ok "deleted while its launch waits" wait_until 30 is_state "$id" deleted
tap_ok "nothing of it is left" wait_until 30 no_trace "$D" "$id"

echo "1 daemon 1" >"$F"
id=$(sub true)
tap_ok "a fork that fails for good (EPERM) fails the workload" wait_until 30 is_state "$id" failed
tap_ok "with the fork's reason" sh -c \
    "$GP describe $id | grep -q 'could not be launched: launch: cannot fork: Operation not permitted'"
tap_ok "and leaves nothing behind" wait_until 30 no_trace "$D" "$id"

# gpupoold restarted while a launch waits: the launch it tries again at once
# fails too, and its event is a launch-deferred one, as before the restart
# (it was recorded as launched).
echo "1000 intermediate" >"$F"
id=$(sub sh -c "echo ran >>$TMP/runs-restart")
deferred_once() { [ "$(deferred "$1")" -ge 1 ]; }
tap_ok "restart: a launch whose forks keep failing waits" wait_until 60 deferred_once "$id"
gpd_kill9
GPD_TEST_FAIL_FORK=$F GPD_TEST_FAIL_PTY=$P LD_PRELOAD=$B/tests/daemon/failfork.so \
    tap_ok "restart: gpupoold starts again" gpd_start "$D" --period 300ms --poll 200ms
after_restart() { api GET "/api/v1/workloads/$1/events" | grep -o '"kind":"[a-z-]*","message":"launch to be tried again after a restart'; }
restart_event() { [ -n "$(after_restart "$1")" ]; }
tap_ok "restart: its launch is tried again and fails" wait_until 30 restart_event "$id"
tap_is "restart: the event is launch-deferred" "$(after_restart "$id" | head -1)" \
    '"kind":"launch-deferred","message":"launch to be tried again after a restart'
echo "0 intermediate" >"$F"
tap_ok "restart: once it can, it runs" wait_until 60 is_state "$id" succeeded
tap_is "restart: its command ran once" "$(cat "$TMP/runs-restart")" ran
tap_done
