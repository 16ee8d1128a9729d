#!/bin/sh
# Two daemons side by side on one host, each with its own data directory:
# their workload ids overlap (both have a workload 1), yet deleting one
# daemon's workload 1 never touches the other's, because each daemon's
# cgroups, slice ledgers and supervisors carry its own instance id. A second
# daemon on a data directory already in use is refused and names the holder.
. tests/lib/tap.sh
. tests/daemon/lib.sh

A=$TMP/a
B=$TMP/b
mkdir -p "$A" "$B"
tap_ok "daemon A starts" gpd_start "$A" --period 300ms --poll 200ms
A_PID=$GPD_PID
A_SERVER=$GPUPOOL_SERVER
A_TOKEN=$GPUPOOL_TOKEN
GPD_OTHERS=$A_PID
tap_ok "daemon B starts beside it" gpd_start "$B" --period 300ms --poll 200ms
B_PID=$GPD_PID
B_SERVER=$GPUPOOL_SERVER
B_TOKEN=$GPUPOOL_TOKEN

tap_ok "the two have different instance ids" test "$(cat "$A/tasks/instance")" != "$(cat "$B/tasks/instance")"

# on A|B COMMAND...: runs a CLI command against daemon A or B.
on() {
    if [ "$1" = A ]; then s=$A_SERVER t=$A_TOKEN; else s=$B_SERVER t=$B_TOKEN; fi
    shift
    GPUPOOL_SERVER=$s GPUPOOL_TOKEN=$t "$@"
}
# state_of A|B ID: the workload's state.
state_of() {
    on "$1" $GP --json describe "$2" 2>/dev/null | grep -o '"state": *"[a-z]*"' | head -1 | sed 's/.*"\([a-z]*\)"$/\1/'
}
is_state() { [ "$(state_of "$1" "$2")" = "$3" ]; }

for d in A B; do
    on $d $GP queue create dept >/dev/null && on $d $GP queue create proj --parent dept >/dev/null
    # Workload 1 on each daemon waits for its own go file, so that it ends
    # well only if nothing killed it on the way.
    on $d $GP submit --project proj --gpu 1 --name long -- \
        sh -c "while [ ! -e $TMP/go-$d ]; do sleep 0.1; done; echo done-$d" >/dev/null
done
tap_ok "A's workload 1 runs" wait_until 30 is_state A 1 running
tap_ok "B's workload 1 runs" wait_until 30 is_state B 1 running

# Each supervisor shows in ps under its daemon's instance and task key.
sup_b=$(ps -eo pid=,args= | grep "gpupool-supervisor $(cat "$B/tasks/instance") w1.t0.a1" | grep -v grep | awk '{print $1}')
tap_ok "B's supervisor shows as gpupool-supervisor <instance> w1.t0.a1" test -n "$sup_b"
tap_is "and its name is not the daemon's" "$(cat /proc/"$sup_b"/comm 2>/dev/null)" gpupool-superv

tap_ok "deleting A's workload 1 succeeds" on A $GP delete 1
gone_a() { ! on A $GP describe 1 >/dev/null 2>&1 || is_state A 1 deleted; }
tap_ok "A's workload 1 is gone" wait_until 30 gone_a
tap_ok "B's workload 1 still runs" is_state B 1 running

# A full lifecycle on A with the same id range while B's task runs on.
on A $GP submit --project proj --gpu 1 -- sh -c 'echo second' >/dev/null
tap_ok "A's workload 2 succeeds" wait_until 30 is_state A 2 succeeded
touch "$TMP/go-B"
tap_ok "B's workload 1 ends on its own and succeeds" wait_until 30 is_state B 1 succeeded
tap_ok "its log has the end of its command" wait_until 10 sh -c "GPUPOOL_SERVER=$B_SERVER GPUPOOL_TOKEN=$B_TOKEN $GP logs 1 | grep -q done-B"

# A second daemon on A's data directory is refused, and A keeps its address.
addr=$(cat "$A/gpupoold.addr")
out=$(timeout 20 "$GPD" --data-dir "$A" --listen 127.0.0.1:0 2>&1)
rc=$?
tap_is "a second daemon on A's data directory exits 1" "$rc" 1
tap_ok "and names the holder's pid ($A_PID)" contains "$out" "in use by another gpupoold (pid $A_PID)"
tap_is "A's address file is untouched" "$(cat "$A/gpupoold.addr")" "$addr"
tap_ok "A still answers" sh -c "GPUPOOL_SERVER=$A_SERVER GPUPOOL_TOKEN=$A_TOKEN $GP queue list >/dev/null"
tap_done
