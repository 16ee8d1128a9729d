#!/bin/sh
# Sessions on the Slurm executor, on the real test cluster: the cases of
# tests/daemon/sessions.py (a terminal typed into, resized, interrupted,
# detached and attached again with its recent output; exec; port-forward to
# a real HTTP server and a half-closed forward; the refusals) against a
# gpupoold on the slurm executor, once on a fraction of a GPU (a step of its
# GPU holder job) and once on a whole GPU (its own job); then the Slurm-only
# cases of tests/slurm/sessions-slurm.py: the session is a step of the
# workload's own job, exec sees the job's environment, and a session past
# its project's maximum length is told on its terminal, suspended and
# resumed, a session left idle past its project's idle GPU timeout is
# suspended and resumed, and batch workloads' GPU use is sampled too. gpupoold reaches each task by `srun --overlap`
# into its job.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh
session_users
# The processes a task left in the background (Slurm's linuxproc tracking
# loses what its shell left when it ended) are the test user's own.
cleanup_all() {
    pkill -9 -u "$UA" 2>/dev/null
    rm -rf "/tmp/gpupool-session.$(id -u "$UA")" "/tmp/gpupool-session.$(id -u "$UB")"
    sx_cleanup
    userdel "$UA" 2>/dev/null
    userdel "$UB" 2>/dev/null
}
trap cleanup_all EXIT
# A sanitizer build's programs cannot run as the task's user under
# --no-new-privs with LeakSanitizer, and its interposer cannot be
# preloaded: the normal build's session program serves the tasks then.
case $B in *asan* | *tsan*) SX_CONFIG_EXTRA="session_program=$(pwd)/build/gpupool-slurm-session" ;; esac
# The jobs' session servers sample their GPUs with the tests' fake NVML
# (the normal build's, which the normal build's session program loads),
# copied where the task's user can read it, with its settings in fake.env
# beside it: a job's environment is not the test's.
NV=$TMP/nvml
mkdir -p "$NV" && cp build/fake/libcuda.so.1 build/fake/libnvidia-ml.so.1 "$NV"/ &&
    printf 'GPUPOOL_FAKE_GPUS=8\n' >"$NV/fake.env" && chmod 755 "$NV" && chmod 644 "$NV/fake.env"
SX_CONFIG_EXTRA="${SX_CONFIG_EXTRA:+$SX_CONFIG_EXTRA,}nvml=$NV/libnvidia-ml.so.1"
export GP_FAKE_ENV="$NV/fake.env"
D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts on the slurm executor" sx_start "$D" --max-user-sessions 8 --usage-period 1s
$GP queue create dept --deserved 8 >/dev/null && $GP queue create proj --parent dept --deserved 8 >/dev/null
tap_is "queues created" "$?" 0
TA=$($GP token create --user "$UA" --role researcher --scope proj | head -1)
TB=$($GP token create --user "$UB" --role researcher --scope proj | head -1)
export GP_TOKEN_A="$TA" GP_TOKEN_B="$TB" GP_ADMIN="$GPUPOOL_TOKEN" GP_USER_A="$UA" GP_USER_B="$UB" SX_TAG
export GP_TAP_NOPLAN=1
cases() {
    out=$(GP_TAP_FIRST=$((tap_n + 1)) python3 "$@" 2>&1)
    rc=$?
    printf '%s\n' "$out" | sed '/^\(not \)\{0,1\}ok /!s/^/# /'
    tap_n=$((tap_n + $(printf '%s\n' "$out" | grep -c -E '^(not )?ok ')))
    # A script that ended early (an exception) has failed, whatever it printed.
    if [ "$rc" != 0 ] && ! printf '%s\n' "$out" | grep -q '^not ok '; then
        tap_n=$((tap_n + 1))
        echo "not ok $tap_n - $1 ended early (status $rc)"
    fi
}
# A socket left by a session server that died (its job killed with
# SIGKILL) in the task user's directory, beside a file that is no socket:
# the next server removes the one nothing answers, and only it.
SD=/tmp/gpupool-session.$(id -u "$UA")
mkdir -p "$SD" && chmod 700 "$SD" && chown "$UA" "$SD"
python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$SD/gp-dead.w1.t0.a1.sock"
: >"$SD/notes.sock.txt"
chown "$UA" "$SD"/*
GP_SESS_GPU=0.25 GP_TAP_PREFIX="fraction: " \
    cases tests/daemon/sessions.py
tap_ok "the stale socket of a dead server is removed" test ! -e "$SD/gp-dead.w1.t0.a1.sock"
tap_ok "and nothing else" test -e "$SD/notes.sock.txt"
pkill -9 -u "$UA" 2>/dev/null
GP_SESS_GPU=1 GP_TAP_PREFIX="whole GPU: " \
    cases tests/daemon/sessions.py
cases tests/slurm/sessions-slurm.py
tap_done
