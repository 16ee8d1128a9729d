#!/bin/sh
# Faults on a real Slurm cluster, each ending in a recorded attempt and the
# right state, with nothing lost and nothing run twice:
#   a drained node takes no new work and returns when resumed;
#   a node that dies with a task on it: the attempt is recorded lost and the
#     workload runs again when the node is back;
#   slurmctld restarts while tasks run: they keep running, same jobs;
#   gpupoold is killed (SIGKILL) and restarted while tasks run: it adopts
#     them, and Slurm never runs a second job for them;
#   a Slurm admin cancels a job behind gpupool's back: its attempt is recorded
#     lost and the workload runs again (gpupool, not Slurm, decides whether
#     it ends: `gpupool delete` does that);
#   suspend and resume through Slurm: checkpoint signal, the job ends, the
#     workload comes back as its next attempt from its checkpoint.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts on the slurm executor" sx_start "$D"
cat >"$TMP/train.sh" <<'SH'
step=0
[ -f "$GPUPOOL_CHECKPOINT_DIR/step" ] && step=$(cat "$GPUPOOL_CHECKPOINT_DIR/step") &&
    echo "resumed from step $step"
trap 'echo $step > "$GPUPOOL_CHECKPOINT_DIR/step"; echo "checkpoint saved at step $step"; exit 0' TERM
while [ "$step" -lt 600 ]; do
    sleep 1 &
    wait $!
    step=$((step + 1))
done
SH
$GP queue create P --deserved 16 >/dev/null && $GP queue create p1 --parent P --deserved 16 >/dev/null
tap_is "queues created" "$?" 0

cluster() { tests/slurm/cluster.sh "$@" "$GP_SLURM_DIR" >/dev/null 2>&1; }
schedulable() { api GET /api/v1/nodes | grep -o "\"name\":\"$1\",\"domain\":\"[^\"]*\",\"schedulable\":$2" | grep -q .; }
attempt_of() { api GET "/api/v1/workloads/$1" | grep -o '"attempt":[0-9]*' | head -1 | cut -d: -f2; }
jobs_of() { sx_jobs | grep -c "\.w$1\.t0\."; }
running_on() { sx_jobs RUNNING | grep "\.w$1\.t0\." | cut -d' ' -f4; }

# ---- A drained node -------------------------------------------------------
scontrol update nodename=n1 state=drain reason=gpupool-test
tap_ok "drained n1 leaves the pool (unschedulable)" wait_until 20 schedulable n1 false
for i in 1 2 3 4; do
    $GP submit --project p1 --gpu 4 --grace 3s -- sh "$TMP/train.sh" >/dev/null
done
tap_ok "three of four 4-GPU workloads run" wait_until 30 has_count 3 running p1
tap_is "the fourth waits" "$(count_state pending p1)" 1
tap_is "nothing runs on the drained node" "$(sx_jobs | grep -c ' n1$')" 0
scontrol update nodename=n1 state=resume
tap_ok "resumed n1 returns to the pool" wait_until 20 schedulable n1 true
tap_ok "and the fourth runs there" wait_until 30 has_count 4 running p1
four_running() { [ "$(sx_jobs RUNNING | wc -l)" = 4 ]; }
tap_ok "Slurm runs four jobs" wait_until 30 four_running

# ---- A node dies ------------------------------------------------------------
node=$(running_on 1)
cluster kill-node "$node"
tap_ok "workload 1's node $node dies: its attempt is recorded lost" \
    wait_until 90 sh -c "curl -s -H 'Authorization: Bearer $GPUPOOL_TOKEN' '$GPUPOOL_SERVER/api/v1/workloads/1/events' | grep -q '\"outcome\":\"lost\"'"
tap_ok "the dead node leaves the pool" wait_until 30 schedulable "$node" false
tap_ok "workload 1 waits (no room elsewhere)" wait_until 20 has_count 1 pending p1
cluster start-node "$node"
tap_ok "the node comes back" wait_until 60 schedulable "$node" true
runs_attempt() { [ "$(sx_jobs RUNNING | grep -c "\.w$1\.t0\.a$2 ")" = 1 ]; }
tap_ok "workload 1 runs again" wait_until 60 runs_attempt 1 2
tap_is "as its second attempt" "$(attempt_of 1)" 2

# ---- slurmctld restarts -----------------------------------------------------
running_ids() { sx_jobs RUNNING | cut -d' ' -f1 | sort | tr '\n' ' '; }
before=$(running_ids)
cluster restart-ctld
ctld_answers() { scontrol ping | grep -q UP && [ -n "$(running_ids)" ]; }
tap_ok "slurmctld answers again after its restart" wait_until 60 ctld_answers
tap_is "after slurmctld restarts, the same four jobs run" "$(running_ids)" "$before"
tap_ok "and gpupool still runs the four workloads" wait_until 10 has_count 4 running p1

# ---- gpupoold is killed and restarted ---------------------------------------
gpd_kill9
tap_ok "gpupoold starts again" sx_start "$D"
tap_ok "it adopts the four running workloads" wait_until 20 has_count 4 running p1
# A second job would be submitted by a launch in a scheduling cycle after the
# adoption: three more cycles (each after a poll of the four jobs) have run
# when the count of cycles has grown by three.
cycles() { curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/metrics" | sed -n 's/^gpupool_scheduling_cycle_seconds_count //p'; }
c0=$(cycles)
more_cycles() { [ "$(cycles)" -ge $((c0 + 3)) ]; }
tap_ok "three scheduling cycles run after the adoption" wait_until 30 more_cycles
tap_is "Slurm ran no second job for any of them" "$(running_ids)" "$before"
tap_is "workload 2 is still on its first attempt" "$(attempt_of 2)" 1

# ---- A job cancelled behind gpupool's back ------------------------------------
scancel "$(sx_jobs RUNNING | grep '\.w2\.t0\.' | cut -d' ' -f1)"
tap_ok "workload 2, cancelled in Slurm, runs again" wait_until 60 runs_attempt 2 2
tap_ok "its first attempt is recorded lost: cancelled outside gpupool" sh -c \
    "$GP describe 2 | grep -q 'cancelled outside gpupool'"

# ---- Suspend and resume -----------------------------------------------------
$GP suspend 3 >/dev/null
tap_ok "suspend: workload 3 is suspended after its checkpoint" wait_until 30 has_count 1 suspended p1
tap_is "its Slurm job has ended" "$(sx_jobs RUNNING | grep -c '\.w3\.t0\.')" 0
$GP resume 3 >/dev/null
tap_ok "resume: it runs again" wait_until 30 runs_attempt 3 2
tap_ok "from its checkpoint" wait_until 20 sh -c "$GP logs 3 | grep -q 'resumed from step'"

$GP delete 1 2 3 4 >/dev/null
none_running() { [ "$(sx_jobs RUNNING | wc -l)" = 0 ]; }
tap_ok "deleting the workloads ends their Slurm jobs" wait_until 30 none_running
tap_done
