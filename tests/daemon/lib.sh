# tests/daemon/lib.sh — helpers for the daemon's black-box shell tests (source
# it after tests/lib/tap.sh): start a real gpupoold on a free loopback port
# with a temporary data directory, wait for conditions with generous timeouts
# (the tests must pass on a loaded 2-core machine), and clean up.
B=${GP_BUILD:-build}
GPD=$B/gpupoold
GP=$B/gpupool
TMP=$(mktemp -d /tmp/gpupool-test.XXXXXX)
GPD_PID=

# gpd_start DATA_DIR [gpupoold flags...]: starts the daemon, exports
# GPUPOOL_SERVER and GPUPOOL_TOKEN; returns non-zero if it did not come up.
gpd_start() {
    dir=$1
    shift
    rm -f "$dir/gpupoold.addr"
    # The tests run as root and their workloads use root's files, so root
    # workloads are allowed unless a test says otherwise (GPD_ROOT=no).
    root=--allow-root-workloads
    [ "${GPD_ROOT:-yes}" = no ] && root=
    "$GPD" --data-dir "$dir" --listen "${GPD_LISTEN:-127.0.0.1:0}" $root "$@" >>"$dir.log" 2>&1 &
    GPD_PID=$!
    n=0
    while [ ! -s "$dir/gpupoold.addr" ]; do
        n=$((n + 1))
        if [ $n -gt 300 ] || ! kill -0 "$GPD_PID" 2>/dev/null; then
            echo "# gpupoold did not start; its log:"
            sed 's/^/#   /' "$dir.log" | tail -20
            return 1
        fi
        sleep 0.1
    done
    GPUPOOL_SERVER=$(cat "$dir/gpupoold.addr")
    GPUPOOL_TOKEN=$(cat "$dir/admin.token")
    export GPUPOOL_SERVER GPUPOOL_TOKEN
}

# sessions_pool [gpupoold flags...]: starts gpupoold on $TMP/pool with a
# quick scheduling period, then the queues dept and proj (under it) that
# the session tests' tasks run in; non-zero if any of it failed.
sessions_pool() {
    mkdir -p "$TMP/pool"
    gpd_start "$TMP/pool" --period 200ms --poll 200ms "$@" || return 1
    $GP queue create dept --deserved 8 >/dev/null && $GP queue create proj --parent dept --deserved 8 >/dev/null
}

# gpd_stop: SIGTERM and wait (tasks keep running, as after a crash).
gpd_stop() {
    [ -n "$GPD_PID" ] && kill "$GPD_PID" 2>/dev/null && wait "$GPD_PID" 2>/dev/null
    GPD_PID=
}

# gpd_kill9: the crash.
gpd_kill9() {
    [ -n "$GPD_PID" ] && kill -9 "$GPD_PID" 2>/dev/null && wait "$GPD_PID" 2>/dev/null
    GPD_PID=
}

# two_departments: departments A and B, each deserving 4 GPUs, with one
# project each (a1, b1) deserving them all; 0 if all four were created.
two_departments() {
    $GP queue create A --deserved 4 >/dev/null && $GP queue create a1 --parent A --deserved 4 >/dev/null &&
        $GP queue create B --deserved 4 >/dev/null && $GP queue create b1 --parent B --deserved 4 >/dev/null
}

# one_gpu_lent: department A deserving 1 GPU (project a1) and B deserving
# none (project b1), which borrows it while A leaves it; 0 if all four were
# created.
one_gpu_lent() {
    $GP queue create A --deserved 1 >/dev/null && $GP queue create a1 --parent A --deserved 1 >/dev/null &&
        $GP queue create B --deserved 0 >/dev/null && $GP queue create b1 --parent B --deserved 0 >/dev/null
}

# skip_unless_pause DATA_DIR: ends the test (one SKIP, the executor's reason
# from the log) where the daemon of DATA_DIR cannot pause tasks.
skip_unless_pause() {
    contains "$(api GET /api/v1/nodes)" '"can_pause":true' && return 0
    tap_skip "the local executor cannot pause here: $(grep -o 'pause is not supported.*' "$1.log")"
    gpd_stop
    tap_done
    exit 0
}

# in_sleep PID: succeeds if the main thread of process PID is inside a
# sleep (nanosleep 35, clock_nanosleep 230, and on arm64 101 and 115), not
# merely started.
in_sleep() {
    [ -n "$1" ] && case $(cut -d' ' -f1 "/proc/$1/task/$1/syscall" 2>/dev/null) in
    35 | 230 | 101 | 115) true ;;
    *) false ;;
    esac
}

# wait_until SECONDS COMMAND...: polls every 0.2 s until COMMAND succeeds.
wait_until() {
    limit=$(($1 * 5))
    shift
    i=0
    while ! "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -ge "$limit" ] && return 1
        sleep 0.2
    done
}

# emulated_start DATA_DIR N: starts the daemon (scheduling every 200 ms) on
# N emulated GPUs of 1 GiB, the local executor's state in DATA_DIR/tasks;
# again after a stop, the same pool.
emulated_start() {
    printf 'node = local\ndomain = local\ngpu = T4 1G %s\n' "$2" >"$TMP/inv.conf"
    gpd_start "$1" --period 200ms --poll 200ms --executor-config "state_dir=$1/tasks,inventory=$TMP/inv.conf"
}

# failstep_start DATA_DIR N: makes DATA_DIR and starts the daemon there as
# emulated_start does, with failstep.so preloaded (the caller's GPD_TEST_*
# variables say which store steps it fails or holds).
failstep_start() {
    mkdir -p "$1"
    LD_PRELOAD=$B/tests/daemon/failstep.so emulated_start "$1" "$2"
}

# emulated_pool DATA_DIR N: as the first test, starts the daemon on N
# emulated GPUs (emulated_start) and makes two_departments' queues.
emulated_pool() {
    mkdir -p "$1"
    tap_ok "gpupoold starts with $2 emulated GPU(s)" emulated_start "$1" "$2"
    two_departments
}

# emulated_proj DATA_DIR N: as the first test, starts the daemon on N
# emulated GPUs (emulated_start) and makes the queues dept/proj.
emulated_proj() {
    mkdir -p "$1"
    tap_ok "gpupoold starts with $2 emulated GPU(s)" emulated_start "$1" "$2"
    $GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
}

# with_spawn_hold COMMAND...: runs COMMAND, a start of the daemon, with
# gpupoold-pausekill in its place (pause-kill.c, GPUPOOL_TEST_SPAWN_HOLD):
# it kills itself right after it forks a task's launch, and holds that
# launch's supervisor back before its handle until the file $HOLD exists,
# which the test makes at its end whatever happens.
HOLD=$TMP/hold
with_spawn_hold() {
    trap 'touch "$HOLD"; cleanup' EXIT
    with_spawn_hold_gpd=$GPD
    GPD=$B/tests/daemon/gpupoold-pausekill
    GPUPOOL_TEST_SPAWN_HOLD=$HOLD
    export GPUPOOL_TEST_SPAWN_HOLD
    "$@"
    with_spawn_hold_rc=$?
    GPD=$with_spawn_hold_gpd
    unset GPUPOOL_TEST_SPAWN_HOLD
    return $with_spawn_hold_rc
}

# held_launch DATA_DIR: as the first tests, starts gpupoold on 1 emulated
# GPU through with_spawn_hold, lends it to a1 (one_gpu_lent), submits a
# workload of a1 whose command appends a line to $RUNS (made empty), and
# waits for gpupoold to die right after it forks that launch: ID is the
# workload, its start held back before its handle until $HOLD exists.
held_launch() {
    : >"$RUNS"
    mkdir -p "$1"
    tap_ok "gpupoold starts with 1 emulated GPU" with_spawn_hold emulated_start "$1" 1
    one_gpu_lent
    ID=$($GP submit --project a1 --gpu 1 -- sh -c "echo run >> $RUNS; sleep 300" | grep -o '[0-9][0-9]*' | head -1)
    tap_ok "gpupoold dies right after it forks the launch" wait_until 60 sh -c "! kill -0 $GPD_PID 2>/dev/null"
    wait "$GPD_PID" 2>/dev/null
    GPD_PID=
}

# held_in_flight DATA_DIR: once gpupoold restarted after held_launch, tests
# that it waits for the start in flight and that the start's supervisor is
# held back; inst is the executor's instance.
held_in_flight() {
    tap_ok "it waits for the start in flight" wait_until 60 sh -c \
        "$GP describe $ID | grep -q 'launch to be tried again after a restart'"
    inst=$(cat "$1/tasks/instance")
    tap_ok "the start's supervisor is held back" sh -c "pgrep -f 'gpupool-supervisor $inst w$ID\\.' >/dev/null"
}

# proj_pool DATA_DIR [gpupoold flags...]: starts the daemon as the first test
# and makes the queues dept/proj.
proj_pool() {
    mkdir -p "$1"
    tap_ok "gpupoold starts" gpd_start "$@"
    $GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
}

# state_of ID: the workload's state ("running", "failed", ...).
state_of() {
    $GP --json describe "$1" 2>/dev/null | grep -o '"state": *"[a-z]*"' | head -1 | sed 's/.*"\([a-z]*\)"$/\1/'
}

# is_state ID STATE: succeeds if the workload is in STATE.
is_state() { [ "$(state_of "$1")" = "$2" ]; }

# count_state STATE [PROJECT]: workloads in a state.
count_state() {
    q="state=$1&limit=1000"
    [ -n "${2:-}" ] && q="$q&project=$2"
    curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/api/v1/workloads?$q" |
        grep -o '"id":' | wc -l
}

# api METHOD PATH [BODY]: prints "STATUS BODY".
api() {
    if [ -n "${3:-}" ]; then
        curl -s -w ' %{http_code}' -X "$1" -H "Authorization: Bearer $GPUPOOL_TOKEN" \
            -H 'Content-Type: application/json' -d "$3" "$GPUPOOL_SERVER$2"
    else
        curl -s -w ' %{http_code}' -X "$1" -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER$2"
    fi
}

# Stops the daemon (and those a test started beside it, GPD_OTHERS) and
# every task they started (their process groups are recorded by the local
# executor in DATA/tasks), then removes TMP.
GPD_OTHERS=
cleanup() {
    gpd_stop
    for p in $GPD_OTHERS; do
        kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    # A paused (frozen) task dies of SIGKILL only once thawed.
    for f in "$TMP"/*/tasks/instance; do
        [ -f "$f" ] || continue
        inst=$(cat "$f")
        for z in /sys/fs/cgroup/freezer/gpupool/"$inst"/*/freezer.state \
            /sys/fs/cgroup/gpupool/"$inst"/*/cgroup.freeze; do
            [ -f "$z" ] || continue
            case $z in
            *freezer.state) echo THAWED >"$z" 2>/dev/null ;;
            *) echo 0 >"$z" 2>/dev/null ;;
            esac
        done
    done
    for f in "$TMP"/*/tasks/*/task; do
        [ -f "$f" ] || continue
        pid=$(sed -n 's/^pid=//p' "$f")
        # (dash's kill takes no "--" before a negative pid: "-9 -PGID".)
        [ -n "$pid" ] && kill -9 "-$pid" 2>/dev/null
    done
    for f in "$TMP"/*/tasks/*/handle; do
        [ -f "$f" ] || continue
        spid=$(cut -d: -f3 "$f") # local:KEY:PID:STARTTIME
        [ -n "$spid" ] && kill -9 "$spid" 2>/dev/null
    done
    # The cgroups of the daemons' instances, now that their tasks are gone.
    for f in "$TMP"/*/tasks/instance; do
        [ -f "$f" ] || continue
        inst=$(cat "$f")
        for d in /sys/fs/cgroup/*/gpupool/"$inst" /sys/fs/cgroup/gpupool/"$inst"; do
            [ -d "$d" ] || continue
            for t in "$d"/*/; do [ -d "$t" ] && rmdir "$t" 2>/dev/null; done
            rmdir "$d" 2>/dev/null
        done
    done
    [ -n "${GP_KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

# no_trace DATA_DIR ID: succeeds if nothing of workload ID's task attempts
# is left with the local executor of the daemon of DATA_DIR: no task
# directory, no cgroup, no slice file or ledger, no supervisor.
no_trace() {
    no_trace_inst=$(cat "$1/tasks/instance") || return 1
    for f in "$1"/tasks/w"$2".* /sys/fs/cgroup/*/gpupool/"$no_trace_inst"/w"$2".* \
        /sys/fs/cgroup/gpupool/"$no_trace_inst"/w"$2".* \
        /run/gpupool/slices/"$no_trace_inst".w"$2".* /run/gpupool/ledgers/"$no_trace_inst".w"$2".*; do
        [ ! -e "$f" ] || return 1
    done
    ! ps -eo args | grep -q "^gpupool-supervisor $no_trace_inst w$2\\."
}

# ids_with_event PATTERN FIRST LAST: prints the workloads FIRST..LAST whose
# events match the grep PATTERN, one a line.
ids_with_event() {
    for id in $(seq "$2" "$3"); do
        api GET "/api/v1/workloads/$id/events" | grep -q -- "$1" && echo "$id"
    done
}

# skip_unless_root_pause: ends a test (one SKIP) unless it runs as root:
# pausing a task needs its cgroups' freezer.
skip_unless_root_pause() {
    if [ "$(id -u)" != 0 ]; then
        tap_skip "pausing needs cgroups, which need root"
        tap_done
        exit 0
    fi
}

# fake_ledger NAME: one fake GPU of 256 MiB, shared by gpupoold (the fake
# driver's NVML and checkpoint API) and the tasks (cuda-holder is given the
# same ledger, LEDGER, /dev/shm/gpfake-NAME-PID); small, so that programs
# filling it copy little on a loaded machine. The ledger is removed at exit
# (fake_ledger_cleanup, after cleanup).
fake_ledger() {
    LEDGER=gpfake-$1-$$
    GPUPOOL_FAKE_LEDGER=$LEDGER GPUPOOL_FAKE_GPUS=1 GPUPOOL_FAKE_GPU_MEMORY=256M
    export GPUPOOL_FAKE_LEDGER GPUPOOL_FAKE_GPUS GPUPOOL_FAKE_GPU_MEMORY
    trap fake_ledger_cleanup EXIT
}
fake_ledger_cleanup() {
    cleanup
    rm -f "/dev/shm/$LEDGER"
}

# idle_gpu_config DATA_DIR: makes DATA_DIR, and sets the executor's
# configuration (CFG) and the fake NVML's environment for one fake GPU of
# 1 GiB that is never busy, which the idle policy finds idle.
idle_gpu_config() {
    mkdir -p "$1"
    GPUPOOL_FAKE_GPUS=1 GPUPOOL_FAKE_BUSY=0 GPUPOOL_FAKE_GPU_MEMORY=1073741824
    export GPUPOOL_FAKE_GPUS GPUPOOL_FAKE_BUSY GPUPOOL_FAKE_GPU_MEMORY
    CFG="state_dir=$1/tasks,nvml=$B/fake/libnvidia-ml.so.1,cuda=$B/fake/libcuda.so.1,interposer=$TMP/none.so"
}

# skip_unless_root_useradd: ends a test (one SKIP) where it cannot make Unix
# users (not root, or no useradd).
skip_unless_root_useradd() {
    if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null; then
        echo "ok 1 - # SKIP needs root and useradd"
        echo "1..1"
        exit 0
    fi
}

# has_count N STATE [PROJECT]: succeeds if exactly N workloads are in STATE.
# session_users: the two users of the session tests, UA (its shell bash) and
# UB, made with homes under $TMP (which they may pass); or the test ends as a
# skip where it cannot (not root, no useradd). The caller removes them.
session_users() {
    if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null; then
        echo "1..1"
        echo "ok 1 - # SKIP needs root and useradd (tasks run as a second user)"
        exit 0
    fi
    UA=gpsa$$
    UB=gpsb$$
    add_user -m -d "$TMP/home-$UA" -s /bin/bash "$UA" && add_user -m -d "$TMP/home-$UB" "$UB" || exit 1
    chmod 711 "$TMP"
}

# add_user ARGS...: useradd, tried again while another test's useradd or
# userdel holds the password or group file's lock (its status 1 or 10), for
# up to 60 s; its complaint is shown if it fails for good.
add_user() {
    add_user_n=0
    while :; do
        useradd "$@" 2>"$TMP/useradd.err"
        add_user_rc=$?
        [ "$add_user_rc" = 0 ] && return 0
        add_user_n=$((add_user_n + 1))
        if { [ "$add_user_rc" != 1 ] && [ "$add_user_rc" != 10 ]; } || [ "$add_user_n" -ge 300 ]; then
            sed 's/^/# /' "$TMP/useradd.err"
            return 1
        fi
        sleep 0.2
    done
}

has_count() {
    [ "$(count_state "$2" "${3:-}")" = "$1" ]
}

# contains TEXT PATTERN: succeeds if TEXT matches the grep PATTERN.
contains() {
    printf '%s\n' "$1" | grep -qi -- "$2"
}

# skip_if_sanitized: ends a test (one SKIP) in a sanitizer build, whose
# interposer cannot be preloaded into programs built without its runtime.
skip_if_sanitized() {
    case $B in
    *asan* | *tsan*)
        echo "ok 1 - # SKIP the interposer of a sanitizer build is not preloadable"
        echo "1..1"
        exit 0
        ;;
    esac
}

# slice_user PREFIX: for a test of slices as a tenant would use them. Ends
# the test with one SKIP unless it runs as root with useradd and mount
# namespaces (and not in a sanitizer build); otherwise makes a Unix user
# PREFIX<pid> (in $U, with its home in $TMP), removed at exit with every
# process of it, and copies the interposer, the fake driver, the fake NVML
# and share-loop into $TMP/lib, which the user can read. A test may add its
# own clean-up in SLICE_USER_AT_EXIT.
SLICE_USER_AT_EXIT=:
slice_user() {
    skip_if_sanitized
    if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null || ! unshare -m true 2>/dev/null; then
        echo "ok 1 - # SKIP needs root, useradd and mount namespaces"
        echo "1..1"
        exit 0
    fi
    U=$1$$
    useradd -m -d "$TMP/home-$U" "$U" || exit 1
    trap 'pkill -9 -u "$U" 2>/dev/null; cleanup; userdel "$U" 2>/dev/null; $SLICE_USER_AT_EXIT' EXIT
    # The build tree may be closed to others.
    chmod 711 "$TMP"
    mkdir -p "$TMP/lib" && chmod 755 "$TMP/lib"
    cp "$B/libgpuslice.so" "$B/fake/libcuda.so.1" "$B/fake/libnvidia-ml.so.1" \
        "$B/tests/daemon/share-loop" "$TMP/lib/" && chmod 755 "$TMP/lib/"*
}

# slice_pool DATA_DIR [gpupoold flags...]: after slice_user, starts the
# daemon (workloads not allowed to run as root) as the first test, ends the
# test with a SKIP where it finds no cgroups, makes the queues dept/proj and
# a researcher token of $U's for proj in $T.
slice_pool() {
    mkdir -p "$1"
    GPD_ROOT=no
    tap_ok "gpupoold starts" gpd_start "$@"
    if grep -q "no cgroup" "$1.log"; then
        echo "ok 2 - # SKIP needs cgroups (the slice file is found from the task's cgroup)"
        echo "1..2"
        exit 0
    fi
    $GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
    T=$($GP token create --user "$U" --role researcher --scope proj | head -1)
}
