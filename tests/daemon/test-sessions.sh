#!/bin/sh
# Sessions through a real gpupoold on loopback, with real processes and
# pseudo-terminals: a raw WebSocket client (tests/daemon/wsclient.py, the
# browser's way: the token in the first message; and the CLI's: the header)
# types into a shell and reads it back, resizes, interrupts, detaches and
# attaches again (the recent output replayed, a shell variable kept), runs a
# command with exec, forwards a port to a real HTTP server in the task, and
# is refused where it must be (another user's token, unknown, not running,
# not interactive workloads, a port out of range, malformed and oversized
# messages) — tests/daemon/sessions.py holds the cases.
. tests/lib/tap.sh
. tests/daemon/lib.sh
# A sanitizer build's interposer cannot be preloaded into the tasks' programs:
# there the sessions run on whole GPUs, which get no interposer.
case $B in
*asan* | *tsan*) GP_SESS_GPU=1 ;;
*) GP_SESS_GPU=0.25 ;;
esac
export GP_SESS_GPU
trap 'cleanup' EXIT
session_users
cleanup_all() {
    pkill -9 -u "$UA" 2>/dev/null
    cleanup
    userdel "$UA" 2>/dev/null
    userdel "$UB" 2>/dev/null
}
trap 'cleanup_all' EXIT
D=$TMP/pool
mkdir -p "$D"
GPD_ROOT=no
gpd_start "$D" --period 200ms --poll 200ms --max-user-sessions 8 || exit 1
$GP queue create dept --deserved 8 >/dev/null && $GP queue create proj --parent dept --deserved 8 >/dev/null
TA=$($GP token create --user "$UA" --role researcher --scope proj | head -1)
TB=$($GP token create --user "$UB" --role researcher --scope proj | head -1)
GP_TOKEN_A=$TA GP_TOKEN_B=$TB GP_ADMIN=$GPUPOOL_TOKEN GP_USER_A=$UA GP_USER_B=$UB python3 tests/daemon/sessions.py
