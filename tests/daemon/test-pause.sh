#!/bin/sh
# Transparent pause through a real gpupoold: borrowers in pause mode that
# never checkpoint (each counts its steps in a file, from 0 at every start)
# are paused when the owner comes back (event "paused", state paused, their
# GPUs to the owner, their counts still), resumed in place when the owner
# leaves (event "resumed") and count on from where they were, in the same
# attempt, also across a kill -9 of gpupoold while they are paused. A
# paused workload deleted is thawed and stopped. A node that
# cannot pause (--paused-memory-max 0) evicts them in checkpoint mode and
# says why. Needs a cgroup freezer (SKIP without).
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
mkdir -p "$D"
# GPUs of 1 GiB: a paused borrower holds that much host memory, which the
# node's default share (25%) has room for.
printf 'node = local\ndomain = local\ngpu = T4 1G 8\n' >"$TMP/inv.conf"
tap_ok "gpupoold starts with 8 emulated GPUs" gpd_start "$D" --period 300ms --poll 200ms \
    --executor-config "state_dir=$D/tasks,inventory=$TMP/inv.conf"
skip_unless_pause "$D"
tap_ok "queues created" two_departments

# Counts from 0 at every start, so that a restart shows as a count that
# went down; writes the count through a rename, so that it is never torn.
cat >"$TMP/count.sh" <<'SH'
n=0
trap '' TERM
while :; do
    n=$((n + 1))
    echo $n >"$GPUPOOL_CHECKPOINT_DIR/count.tmp" && mv "$GPUPOOL_CHECKPOINT_DIR/count.tmp" "$GPUPOOL_CHECKPOINT_DIR/count"
    sleep 0.05
done
SH
for i in 1 2 3 4 5 6 7 8; do
    $GP submit --project b1 --gpu 1 --on-preempt pause --grace 24h --name b$i -- sh "$TMP/count.sh" >/dev/null
done
tap_ok "all 8 of B's workloads run while A is idle" wait_until 60 has_count 8 running b1
count() { cat "$D/checkpoints/$1/count" 2>/dev/null || echo 0; }
counting() { a=$(count "$1"); [ "$a" -gt 2 ]; }
tap_ok "workload 8 counts" wait_until 30 counting 8

for i in 1 2 3 4; do
    $GP submit --project a1 --gpu 1 --name a$i -- sleep 600 >/dev/null
done
tap_ok "A's 4 GPUs are back from borrowers paused in place" wait_until 60 has_count 4 running a1
tap_ok "4 of B's workloads are paused" wait_until 30 has_count 4 paused b1
paused=$(ids_with_event '"kind":"paused"' 1 8)
tap_is "4 of B's workloads have the event paused" "$(echo "$paused" | grep -c .)" 4
tap_ok "gpupool list shows them paused" sh -c "$GP list | grep -c ' paused ' | grep -qx 4"
first=$(echo "$paused" | head -1)
tap_ok "the event says why and how long each step took" \
    contains "$(api GET /api/v1/workloads/$first/events)" 'evicted (reclaim).*lock [0-9]* ms, checkpoint [0-9]* ms, freeze [0-9]* ms'
tap_is "none got the checkpoint signal" "$(ids_with_event checkpoint-signal 1 8)" ""
c1=$(count "$first")
sleep 1
tap_is "a paused workload does not count on (frozen)" "$(count "$first")" "$c1"

# gpupoold killed while they are paused: on restart they are found paused
# (the executor's journal), held so in the engine, and not run again.
kill -9 "$GPD_PID"
wait "$GPD_PID" 2>/dev/null
GPD_PID=
tap_ok "gpupoold restarts after kill -9" gpd_start "$D" --period 300ms --poll 200ms \
    --executor-config "state_dir=$D/tasks,inventory=$TMP/inv.conf"
tap_ok "the 4 are still paused" wait_until 30 has_count 4 paused b1
tap_ok "and A's 4 still run" wait_until 30 has_count 4 running a1
sleep 1
tap_is "a paused workload was not run again (its count stands)" "$(count "$first")" "$c1"

last=$(echo "$paused" | tail -1)
# Its task's own process, not a count of all (the running borrowers' forks
# of mv and sleep carry the same command line until they exec).
tpid=$(sed -n 's/^pid=//p' "$D"/tasks/w"$last".t0.a*/task | head -1)
tap_ok "gpupool delete of a paused workload" $GP delete "$last"
tap_ok "is deleted" wait_until 20 sh -c "$GP describe $last | grep -q '^State: *deleted'"
gone() { [ -n "$tpid" ] && ! grep -qs count.sh "/proc/$tpid/cmdline"; }
tap_ok "and its task is gone" wait_until 20 gone

# Two running borrowers leave while A keeps the GPUs the paused ones had:
# two of those are resumed onto the freed GPUs (the executor remaps them).
# The store must book the GPUs each task really holds, or a restart gives
# one GPU to two workloads (the store kept the GPUs of the pause, and this
# check failed before).
running_ids() {
    curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" \
        "$GPUPOOL_SERVER/api/v1/workloads?state=running&limit=1000" |
        grep -o '"id": *[0-9]*' | grep -o '[0-9]*$'
}
stored_gpus() {
    for id in $(running_ids); do
        sqlite3 -readonly "$D/gpupool.db" "SELECT binding FROM tasks WHERE workload=$id"
    done | tr -d ' ' | grep -o '"slices":\[\[[0-9]*' | grep -o '[0-9]*$'
}
running_is() { [ "$(running_ids | grep -c .)" = "$1" ]; }
first_attempts() {
    for id in $(running_ids); do
        $GP describe "$id" | grep -q '^Attempt: *1$' || return 1
    done
}
# Exactly N GPUs stored for the running workloads, no two the same.
stored_apart() {
    g=$(stored_gpus)
    [ "$(printf '%s\n' "$g" | grep -c .)" = "$1" ] && [ -z "$(printf '%s\n' "$g" | sort | uniq -d)" ]
}
left=$(echo "$paused" | grep -vx "$last")
stay=$(for i in 1 2 3 4 5 6 7 8; do echo "$left" | grep -qx "$i" || [ "$i" = "$last" ] || echo "$i"; done)
for i in $(echo "$stay" | head -2); do $GP delete "$i" >/dev/null; done
tap_ok "two paused borrowers are resumed onto the GPUs two others left" wait_until 60 has_count 1 paused b1
tap_ok "the store books the GPUs each running task holds, none twice" wait_until 30 stored_apart 8
kill -9 "$GPD_PID"
wait "$GPD_PID" 2>/dev/null
GPD_PID=
tap_ok "gpupoold restarts after another kill -9" gpd_start "$D" --period 300ms --poll 200ms \
    --executor-config "state_dir=$D/tasks,inventory=$TMP/inv.conf"
tap_ok "the 8 run on, one still paused" wait_until 30 running_is 8
tap_ok "still on GPUs of their own" stored_apart 8
tap_ok "and none was run again" first_attempts

for i in 9 10 11 12; do $GP delete $i >/dev/null; done
tap_ok "the owner gone, the last paused borrower is resumed" wait_until 60 has_count 5 running b1
tap_ok "each with the event resumed" contains "$(api GET /api/v1/workloads/$first/events)" '"kind":"resumed"'
on() { [ "$(count "$first")" -gt "$((c1 + 2))" ]; }
tap_ok "and counts on from where it was paused ($c1), not from 0" wait_until 30 on
tap_ok "in the same attempt" sh -c "$GP describe $first | grep -q '^Attempt: *1\$'"

# A node that cannot pause: the borrower is evicted in checkpoint mode and
# its event says why.
gpd_stop
D2=$TMP/nopause
mkdir -p "$D2"
tap_ok "gpupoold starts with --paused-memory-max 0" gpd_start "$D2" --period 300ms --poll 200ms \
    --executor-config "state_dir=$D2/tasks,inventory=$TMP/inv.conf" --paused-memory-max 0
tap_ok "queues created" two_departments
for i in 1 2 3 4 5; do
    $GP submit --project b1 --gpu 1 --on-preempt pause --grace 1s -- sleep 600 >/dev/null
done
tap_ok "B's 5 run" wait_until 60 has_count 5 running b1
for i in 1 2 3 4; do $GP submit --project a1 --gpu 1 -- sleep 600 >/dev/null; done
tap_ok "A's 4 run" wait_until 60 has_count 4 running a1
tap_is "one borrower was evicted in checkpoint mode, saying why" \
    "$(ids_with_event 'in checkpoint mode (on_preempt pause: its node cannot pause tasks: --paused-memory-max is 0)' 1 5 | grep -c .)" 1
tap_is "and none was paused" "$(ids_with_event '"kind":"paused"' 1 5)" ""
tap_done
