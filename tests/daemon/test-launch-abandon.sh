#!/bin/sh
# A workload deleted while its launch waits for a start in flight
# (gpupoold killed right after it forked the launch, the supervisor held
# back before its handle): the start is abandoned, so that the supervisor,
# once let go, never runs the task's command, and nothing of the attempt is
# left; the workload's GPU goes to the next one. Before, the supervisor ran
# the deleted workload's task on, found only by the next start of gpupoold.
# with_spawn_hold (lib.sh) does the kill and the hold.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
RUNS=$TMP/runs.txt
held_launch "$D"
tap_ok "gpupoold restarts" emulated_start "$D" 1
held_in_flight "$D"
tap_ok "the workload is deleted meanwhile" sh -c "$GP delete $ID >/dev/null"
tap_ok "it is deleted" wait_until 60 is_state "$ID" deleted
touch "$HOLD"
tap_ok "the supervisor ends once let go" wait_until 60 sh -c "! pgrep -f 'gpupool-supervisor $inst w$ID\\.'"
tap_is "the deleted workload's command never ran" "$(wc -l <"$RUNS" | tr -d ' ')" 0
NEXT=$($GP submit --project a1 --gpu 1 -- true | grep -o '[0-9][0-9]*' | head -1)
tap_ok "its GPU goes to the next workload" wait_until 60 is_state "$NEXT" succeeded
tap_ok "nothing of the abandoned start is left" wait_until 60 no_trace "$D" "$ID"
gpd_stop
tap_done
