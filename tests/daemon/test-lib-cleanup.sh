#!/bin/sh
# The daemon tests' clean-up (tests/daemon/lib.sh) ends what a failed test
# left running: the process group of each task its state directory records,
# and each task's supervisor, named by the handle's third field. (Under
# dash, "kill -9 -- -PGID" killed nothing, and it took the fourth field, a
# start time, for the supervisor's pid.)
. tests/lib/tap.sh
. tests/daemon/lib.sh

dir=$TMP/d/tasks/w1.t0.a1
mkdir -p "$dir"
# A task in a session and process group of its own, with a child, and a
# stand-in for its supervisor.
setsid sh -c 'sleep 300 & wait' &
lead=$!
sleep 301 &
sup=$!
wait_until 10 sh -c "[ \"\$(ps -o pgid= -p $lead | tr -d ' ')\" = $lead ]"
printf 'pid=%s\nstart=1\n' "$lead" >"$dir/task"
printf 'local:w1.t0.a1:%s:123456\n' "$sup" >"$dir/handle"
child=$(ps -o pid= --ppid "$lead" | tr -d ' ')

# gone PID: no such process, or a zombie waiting for this shell.
gone() { ! ps -o stat= -p "$1" | grep -qv Z; }
(cleanup)
tap_ok "the task's process group is killed" wait_until 10 gone "$lead"
tap_ok "... its child too" wait_until 10 gone "$child"
tap_ok "the supervisor named by the handle is killed" wait_until 10 gone "$sup"
kill -9 "$lead" "$child" "$sup" 2>/dev/null
tap_done
