#!/bin/sh
# A WebSocket client that sends pings and never reads: each ping's pong was
# queued for it while its socket was read on, without bound (one connection
# without a token took gpupoold to 1.9 GB in 8 s). Its socket is no longer
# read while its queue is full — tests/daemon/sessions_pings.py holds the
# cases, each against a daemon of its own (a daemon keeps what it freed).
. tests/lib/tap.sh
. tests/daemon/lib.sh
trap 'cleanup' EXIT
D=$TMP/pool
proj_pool "$D" --period 200ms --poll 200ms
GP_TAP_FIRST=2 GP_TAP_NOPLAN=1 GP_DAEMON_PID=$GPD_PID python3 tests/daemon/sessions_pings.py open \
    >"$TMP/open.tap"
cat "$TMP/open.tap"
gpd_stop
gpd_start "$D" --period 200ms --poll 200ms || exit 1
GP_TAP_FIRST=$(($(grep -c '^\(not \)\?ok ' "$TMP/open.tap") + 2)) GP_DAEMON_PID=$GPD_PID \
    python3 tests/daemon/sessions_pings.py hello
