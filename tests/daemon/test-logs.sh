#!/bin/sh
# Task logs and the disk. Before, one task wrote 300 MB in 12 s into a log
# beside the store, and logs stayed after their workload ended. Now each
# task's log rotates at the local executor's log_max (here 256K, one older
# part kept), a workload's logs are removed --log-retention (here 15 s) after
# it ends, they may live in a directory of their own (--log-dir), and when
# that disk is full the tasks lose their output but run to their end and
# the store and the API go on working. The disk is a real 2 MiB tmpfs where
# this test may mount one (root); elsewhere that part is skipped.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
L=$TMP/logdisk
mkdir -p "$D" "$L"
mounted=
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=2m,mode=0700 tmpfs "$L" 2>/dev/null; then
    mounted=1
fi
trap 'gpd_stop; [ -n "$mounted" ] && umount -l "$L"; cleanup' EXIT

out=$("$GPD" --data-dir "$D" --log-retention 3x 2>&1)
tap_ok "a bad --log-retention is refused, naming it" contains "$out" "log-retention"

tap_ok "gpupoold starts with its logs in a directory of their own" \
    gpd_start "$D" --period 300ms --poll 200ms --log-dir "$L" --log-retention 15s \
    --executor-config "emulate=$TMP/emulated.conf,log_max=256K"
$GP queue create dept --deserved 8 >/dev/null && $GP queue create proj --parent dept --deserved 8 >/dev/null

id_of() { sed -n 's/.*"id": *\([0-9]*\).*/\1/p'; }
state_of() { api GET "/api/v1/workloads/$1" | sed -n 's/.*"state": *"\([a-z]*\)".*/\1/p'; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }

# A workload that keeps running: its logs stay however old they are.
KEEP=$($GP --json submit --project proj --gpu 1 --name keep -- sh -c 'echo kept; sleep 600' | id_of)
tap_ok "a long workload runs" wait_until 60 is_state "$KEEP" running

# 3 MB of output through a 256K cap.
BIG=$($GP --json submit --project proj --gpu 1 --name big -- \
    sh -c 'yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 3000000; echo; echo last-line' | id_of)
tap_ok "a workload printing 3 MB succeeds" wait_until 60 is_state "$BIG" succeeded
log=$L/$BIG/task-0.log
size=$(stat -c %s "$log" 2>/dev/null || echo 0)
old=$(stat -c %s "$log.1" 2>/dev/null || echo 0)
tap_ok "its log is in --log-dir, not beside the store" test -f "$log" -a ! -e "$D/logs/$BIG"
tap_ok "its log was rotated at 256K ($size bytes, and $old in task-0.log.1)" \
    test "$size" -le 262144 -a "$old" -gt 0 -a "$old" -le 262144
followed=$($GP logs -f "$BIG" | wc -c)
tap_is "gpupool logs -f gives what is kept, once, from its oldest byte" "$followed" $((old + size))
tap_ok "the log's end is there, with the task's end" \
    contains "$($GP logs -f "$BIG" | tail -3)" "the task ended: exit code 0"
start=$(cat "$log.start" 2>/dev/null)
tap_ok "task-0.log.start says where the kept part begins in the whole output ($start)" \
    test "${start:-0}" -gt 2500000
tail_api=$(curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" \
    "$GPUPOOL_SERVER/api/v1/workloads/$BIG/logs?offset=$start" | head -c 36)
at=$(curl -s -D - -o /dev/null -H "Authorization: Bearer $GPUPOOL_TOKEN" \
    "$GPUPOOL_SERVER/api/v1/workloads/$BIG/logs?offset=0" | tr -d '\r' | sed -n 's/^X-Log-Offset: //ip')
tap_is "asked for output rotated away, the API says where its answer begins" "$at" $((start - old))
head_now=$(head -c 36 "$log")
tap_is "the API reads by offsets in the whole output, across the rotation" "$tail_api" "$head_now"
tap_ok "its logs are removed once it has ended 15 s ago" wait_until 60 test ! -e "$L/$BIG"
tap_ok "a running workload's logs are kept" test -f "$L/$KEEP/task-0.log"

if [ -z "$mounted" ]; then
    tap_skip "the log disk full: cannot mount a small tmpfs here (not root)"
    tap_done
    exit
fi
# The log disk full.
dd if=/dev/zero of="$L/filler" bs=64K count=100 2>/dev/null
tap_ok "the log disk is full" test "$(df -P "$L" | awk 'NR==2 {print $4}')" -eq 0
FULL=$($GP --json submit --project proj --gpu 1 --name full -- \
    sh -c 'yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 2000000; echo done' | id_of)
tap_ok "a submission is stored (the store lives elsewhere)" test -n "$FULL"
tap_ok "a workload printing 2 MB still runs to its end (its output lost)" \
    wait_until 60 is_state "$FULL" succeeded
tap_ok "the API lists and describes it" contains "$($GP describe "$FULL")" "succeeded"
rm -f "$L/filler"
AFTER=$($GP --json submit --project proj --gpu 1 --name after -- echo after-the-disk-was-freed | id_of)
tap_ok "with room again, the next workload's log is written" \
    wait_until 60 sh -c "$GP logs $AFTER | grep -q after-the-disk-was-freed"
tap_done
