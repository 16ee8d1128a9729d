#!/bin/sh
# A session's client that resets its connection while gpupoold does not read
# it (the task's side takes no more of its input): the relay thread does not
# spin on the hang-up, which epoll reports whatever it watches, and the
# session ends, its user's session given back —
# tests/daemon/sessions_hangup.py holds the cases.
. tests/lib/tap.sh
. tests/daemon/lib.sh
trap 'cleanup' EXIT
D=$TMP/pool
mkdir -p "$D"
# Two sessions at most: a session that is not given back shows at once.
gpd_start "$D" --period 200ms --poll 200ms --max-user-sessions 2 || exit 1
$GP queue create dept --deserved 8 >/dev/null && $GP queue create proj --parent dept --deserved 8 >/dev/null
GP_DAEMON_PID=$GPD_PID python3 tests/daemon/sessions_hangup.py
