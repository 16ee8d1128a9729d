#!/bin/sh
# What a log read costs the daemon while its reader is slow. The answer was
# a 1 MiB buffer copied into another for the reply, the copy held until
# the kernel had taken it all: 64 readers that did not read held 21 MiB of
# the daemon's memory here (a client may hold 128 connections, and a
# reader far away leaves more with the daemon). The answer is now sent
# from the log file itself.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
emulated_pool "$D" 1
id=$($GP submit --project a1 --gpu 1 -- sh -c 'yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 2000000' |
    grep -o '[0-9][0-9]*' | head -1)
tap_ok "a workload prints 2 MB" wait_until 60 is_state "$id" succeeded
mkfifo "$TMP/hold"
python3 tests/daemon/slow_log_readers.py "$GPUPOOL_SERVER" "$GPUPOOL_TOKEN" "$id" 64 "$GPD_PID" \
    <"$TMP/hold" >"$TMP/grew" &
readers=$!
exec 3>"$TMP/hold"
tap_ok "64 readers have the head of their answer" wait_until 60 test -s "$TMP/grew"
grew=$(cat "$TMP/grew")
tap_ok "and the daemon holds less than 8 MiB more for them ($grew KiB)" test "$grew" -lt 8192
exec 3>&-
wait "$readers"
tap_done
