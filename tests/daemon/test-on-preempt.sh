#!/bin/sh
# A workload's eviction mode (on_preempt: pause, checkpoint, requeue) and its
# project's default. A submission that gives none takes the project's default
# as it is then, written into its stored request: a later change of the
# default does not change it. Bad values are refused naming the field and
# change nothing. The default survives a restart (store migration 7). A
# borrower in requeue mode that ignores the checkpoint signal and asks for a
# 24-hour grace is stopped at once when the owner comes back, and its event
# says so.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts with 8 emulated GPUs" gpd_start "$D" --period 300ms --poll 200ms

tap_ok "gpupool queue create --on-preempt pause" $GP queue create C --on-preempt pause
tap_ok "the created queue shows it" contains "$(api GET /api/v1/queues/C)" '"on_preempt":"pause"'
tap_ok "queues created" two_departments
tap_ok "a project's default mode is checkpoint" \
    contains "$(api GET /api/v1/queues/b1)" '"on_preempt":"checkpoint"'

out=$(api PATCH /api/v1/queues/b1 '{"on_preempt":"freeze"}')
tap_ok "an unknown mode for a queue is refused, naming the field" \
    contains "$out" '"field":"on_preempt".* 400$'
out=$(api PATCH /api/v1/queues/b1 '{"on_preempt":1}')
tap_ok "a mode that is not a string is refused" contains "$out" '"field":"on_preempt".* 400$'
tap_ok "and the queue is unchanged" \
    contains "$(api GET /api/v1/queues/b1)" '"on_preempt":"checkpoint"'
$GP queue set b1 --on-preempt sleep >/dev/null 2>&1
tap_is "gpupool queue set refuses an unknown mode (usage)" "$?" 2
tap_ok "gpupool queue set --on-preempt requeue" $GP queue set b1 --on-preempt requeue
tap_ok "the queue shows it" contains "$(api GET /api/v1/queues/b1)" '"on_preempt":"requeue"'
tap_ok "queue list has an ON-PREEMPT column" contains "$($GP queue list)" 'RUNNING *ON-PREEMPT$'
tap_ok "giving each project's default" contains "$($GP queue list)" '^ *b1 .* requeue$'
tap_ok "and a department's, which its projects that set none inherit" \
    contains "$($GP queue list)" '^B .* checkpoint (default)$'

out=$(api POST /api/v1/workloads '{"project":"b1","command":["true"],"on_preempt":"stop"}')
tap_ok "an unknown mode in a submission is refused, naming the field" \
    contains "$out" '"field":"on_preempt".* 400$'
tap_is "and no workload was created" "$(count_state pending)" 0

# Ignores the checkpoint signal (the shell and its sleeps inherit SIG_IGN).
cat >"$TMP/stubborn.sh" <<'SH'
trap '' TERM
while :; do sleep 1; done
SH
for i in 1 2 3 4 5 6 7; do
    $GP submit --project b1 --gpu 1 --grace 24h --name b$i -- sh "$TMP/stubborn.sh" >/dev/null
done
$GP submit --project b1 --gpu 1 --grace 24h --on-preempt checkpoint --name b8 -- sleep 600 >/dev/null
tap_ok "describe shows the project's default for a workload that gave none" \
    sh -c "$GP describe 1 | grep -q '^On preempt: *requeue$'"
tap_ok "and the workload's own mode for one that gave it" \
    sh -c "$GP describe 8 | grep -q '^On preempt: *checkpoint$'"
tap_ok "the API's spec carries the mode written at submission" \
    contains "$(api GET /api/v1/workloads/1)" '"on_preempt":"requeue"'

tap_ok "gpupool queue set --on-preempt pause" $GP queue set b1 --on-preempt pause
tap_ok "a later default does not change a submitted workload's mode" \
    sh -c "$GP describe 2 | grep -q '^On preempt: *requeue$'"
$GP queue set b1 --on-preempt requeue >/dev/null

tap_ok "all 8 of B's workloads run while A is idle (4 on borrowed GPUs)" \
    wait_until 60 has_count 8 running b1

for i in 1 2 3; do
    $GP submit --project a1 --gpu 1 --name a$i -- sleep 600 >/dev/null
done
# The reclaim grace bound is 1 minute: requeue mode must not wait for it,
# nor for the borrowers' 24 hours.
tap_ok "A's 3 GPUs are back at once from borrowers in requeue mode" \
    wait_until 40 has_count 3 running a1
# Workload 8 (checkpoint mode, a plain sleep) may be among the victims: it
# ends on the signal.
evicted=$(ids_with_event 'evicted (reclaim)' 1 8)
tap_is "3 of B's workloads were evicted" "$(echo "$evicted" | grep -c .)" 3
tap_is "each in requeue mode was stopped at once, and says so" \
    "$(ids_with_event 'on_preempt requeue' 1 8 | tr '\n' ' ')" \
    "$(echo "$evicted" | grep -vx 8 | tr '\n' ' ')"
# no_signal IDS...: none of the workloads got the checkpoint signal.
no_signal() {
    for id in "$@"; do
        api GET "/api/v1/workloads/$id/events" | grep -q checkpoint-signal && return 1
    done
    return 0
}
tap_ok "none of those got the checkpoint signal" no_signal $(echo "$evicted" | grep -vx 8)

# Whether nodes can pause: the executor's answer (logged at start) and the
# host memory paused tasks may hold, 25% of the node's memory by default.
nodes=$(api GET /api/v1/nodes)
mem=$(echo "$nodes" | sed -n 's/.*"memory":\([0-9]*\),"cpu_used".*/\1/p')
tap_is "a node may hold 25% of its memory in paused tasks by default" \
    "$(echo "$nodes" | sed -n 's/.*"paused_memory_max":\([0-9]*\).*/\1/p')" $((mem / 100 * 25))
if grep -q "executor local: pause is not supported" "$D.log"; then
    can=false
else
    can=true
fi
tap_ok "can_pause is what the executor said at start ($can)" contains "$nodes" "\"can_pause\":$can"
tap_ok "nothing is paused there" contains "$nodes" '"paused_memory":0,"paused":0'

gpd_stop
out=$($GPD --data-dir "$D" --listen 127.0.0.1:0 --paused-memory-max 101% 2>&1)
tap_is "--paused-memory-max 101% is refused" "$?" 2
tap_ok "naming the setting" contains "$out" 'paused-memory-max: "101%" is not a share'
out=$($GPD --data-dir "$D" --listen 127.0.0.1:0 --paused-memory-max lots 2>&1)
tap_ok "and a value that is no size" contains "$out" 'paused-memory-max: "lots" is neither a size'
tap_ok "gpupoold restarts on the same store" \
    gpd_start "$D" --period 300ms --poll 200ms --paused-memory-max 1G
tap_ok "the project's default survived the restart" \
    contains "$(api GET /api/v1/queues/b1)" '"on_preempt":"requeue"'
tap_ok "--paused-memory-max 1G bounds every node's paused tasks" \
    contains "$(api GET /api/v1/nodes)" '"paused_memory_max":1073741824'
gpd_stop
tap_ok "gpupoold restarts with --paused-memory-max 0" \
    gpd_start "$D" --period 300ms --poll 200ms --paused-memory-max 0
tap_ok "and then no node can pause" contains "$(api GET /api/v1/nodes)" '"can_pause":false'
tap_done
