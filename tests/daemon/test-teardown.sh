#!/bin/sh
# Nothing of a task outlives its workload: deleting or suspending a running
# workload stops its task and removes its task directory and its cgroups,
# although the stop and the reap come before the task's supervisor has
# recorded the end (the daemon retries the reap until it succeeds).
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
proj_pool "$D" --period 300ms --poll 200ms

# no_trace KEY CGROUPS: the task directory and every cgroup listed are gone.
no_trace() {
    [ ! -e "$D/tasks/$1" ] || return 1
    for c in $2; do [ ! -e "$c" ] || return 1; done
}

for verb in delete suspend; do
    id=$($GP submit --project proj --gpu 1 --cpu 1 --memory 1G --grace 1s -- sh -c "trap '' TERM; while :; do sleep 1; done" | grep -o '[0-9][0-9]*' | head -1)
    tap_ok "workload $id runs" wait_until 30 is_state "$id" running
    key=w$id.t0.a1
    tap_ok "its task directory exists" test -d "$D/tasks/$key"
    cgroups=$(cat "$D/tasks/$key/cgroup" 2>/dev/null)
    pid=$(sed -n 's/^pid=//p' "$D/tasks/$key/task")
    tap_ok "$verb $id" $GP "$verb" "$id"
    want=deleted
    [ "$verb" = suspend ] && want=suspended
    tap_ok "workload $id is $want" wait_until 30 is_state "$id" $want
    tap_ok "its task directory and cgroups are removed ($verb)" wait_until 30 no_trace "$key" "$cgroups"
    tap_ok "its processes are gone ($verb)" wait_until 10 sh -c "! kill -0 -$pid 2>/dev/null"
done
tap_done
