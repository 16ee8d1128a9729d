#!/bin/sh
# 200 sessions at once through a real gpupoold on loopback, with real
# processes and pseudo-terminals: 20 interactive shells, each attached once
# and with nine more shells exec'd into its task, every session typing a
# command and reading its own answer, then all detached; twice, the second
# round under a per-user cap of exactly 200 (the first round's sessions must
# all have been given back). The API answers throughout and the daemon's
# resident memory stays bounded and flat from one round to the next —
# tests/daemon/sessions_many.py holds the cases.
. tests/lib/tap.sh
. tests/daemon/lib.sh
trap 'cleanup' EXIT
D=$TMP/pool
mkdir -p "$D"
# Each session holds a few descriptors in the daemon (its WebSocket, the
# executor's endpoint) and in the task's supervisor (its pseudo-terminal).
[ "$(ulimit -n)" -ge 4096 ] 2>/dev/null || ulimit -n 4096 2>/dev/null
# All the sessions and the API reader come from one address (loopback), so
# the per-client connection limit (64 by default) is raised with the cap.
gpd_start "$D" --period 200ms --poll 200ms --max-user-sessions 200 \
    --max-client-connections 512 || exit 1
$GP queue create dept --deserved 8 >/dev/null && $GP queue create proj --parent dept --deserved 8 >/dev/null
case $B in
*asan* | *tsan*) GP_SANITIZED=1 ;;
*) GP_SANITIZED=0 ;;
esac
export GP_SANITIZED
GP_DAEMON_PID=$GPD_PID GP_SESSIONS=200 GP_WORKLOADS=20 python3 tests/daemon/sessions_many.py
