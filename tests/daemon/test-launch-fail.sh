#!/bin/sh
# A gang whose launch fails for good after its first task started leaves
# nothing of that task behind: the task is stopped and reaped (its task
# directory, cgroups and slice file removed, its processes gone), as when an
# attempt ends any other way, not kept by the executor until gpupoold
# restarts. Task 1's launch is made to fail by a directory where its log
# file goes; task 0 has started by then.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
proj_pool "$D" --period 300ms --poll 200ms
inst=$(cat "$D/tasks/instance" 2>/dev/null)
tap_ok "the executor's instance is known" test -n "$inst"

# The first workload of a new data directory is workload 1.
mkdir -p "$D/logs/1/task-1.log"
id=$($GP submit --project proj --gang 2 --gpu 0.5 --cpu 1 --memory 1G -- sleep 600 | grep -o '[0-9][0-9]*' | head -1)
tap_is "the gang is workload 1" "$id" 1

tap_ok "its launch fails" wait_until 30 is_state 1 failed
tap_ok "because task 1's log could not be opened" sh -c \
    "$GP describe 1 | grep -q 'could not be launched: log_path: cannot open .*task-1.log'"
tap_ok "after task 0 had been launched (its log has the executor's header)" \
    grep -q "workload 1 task 0 attempt 1 starting" "$D/logs/1/task-0.log"

tap_ok "its started task's directory, cgroups, slice file and processes are gone" \
    wait_until 30 no_trace "$D" 1
tap_done
