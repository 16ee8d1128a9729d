#!/bin/sh
# The slurm executor's basics on a real Slurm cluster: gpupoold's inventory is
# Slurm's (4 nodes, 16 GRES GPUs, models from the GRES type, features as
# labels and domains); a workload runs as a Slurm job that squeue shows with
# its workload id, user and project, with the workload contract's
# environment and Slurm's GPUs; its log is readable through `gpupool logs`;
# a failing command fails the workload; a bad configuration is refused
# with an error naming the key.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts on the slurm executor" sx_start "$D"
nodes=$($GP --json node list)
tap_is "inventory: 4 nodes from Slurm" "$(echo "$nodes" | grep -c '"domain"')" 4
tap_is "inventory: 16 GPUs from GRES" "$(echo "$nodes" | grep -c '"uuid"')" 16
tap_is "inventory: models from the GRES type" \
    "$(echo "$nodes" | grep -o '"model": *"[a-z0-9]*"' | sort | uniq -c | tr -s ' ' | tr '\n' ';')" \
    ' 8 "model": "a100"; 8 "model": "h100";'
tap_ok "inventory: a feature names the topology domain" contains "$nodes" '"domain": *"rack2"'

$GP queue create A --deserved 8 >/dev/null && $GP queue create a1 --parent A --deserved 8 >/dev/null
tap_is "queues created" "$?" 0

cat >"$TMP/show.sh" <<'SH'
echo "node=$GPUPOOL_NODE id=$GPUPOOL_WORKLOAD_ID task=$GPUPOOL_TASK_INDEX attempt=$GPUPOOL_ATTEMPT"
echo "project=$GPUPOOL_PROJECT user=$GPUPOOL_USER signal=$GPUPOOL_CHECKPOINT_SIGNAL"
echo "gpus=$CUDA_VISIBLE_DEVICES slurm_gpus=$SLURM_JOB_GPUS job=$SLURM_JOB_ID"
echo "ckpt=$GPUPOOL_CHECKPOINT_DIR pwd=$(pwd) mine=$MINE"
test -d "$GPUPOOL_CHECKPOINT_DIR" && echo ckpt-exists
sleep 3
SH
$GP submit --project a1 --gpu 2 --env MINE=yes --name show -- sh "$TMP/show.sh" >/dev/null
tap_ok "the workload runs" wait_until 30 has_count 1 running a1
# (It may have ended by the time this asks: running is what Slurm said.)
tap_ok "squeue shows it as a job named after the workload, run by Slurm" \
    wait_until 20 sh -c "squeue -h --states=all -o '%j %T' | grep -q '^gp-$SX_TAG\.w1\.t0\.a1 \(RUNNING\|COMPLETING\|COMPLETED\)$'"
job=$(sx_jobs)
tap_ok "the job's comment names workload, user and project" sh -c \
    "scontrol show job $(echo "$job" | cut -d' ' -f1) | grep -q 'Comment=gpupool workload=1 task=0 attempt=1 user=admin project=a1'"
tap_ok "it succeeds" wait_until 30 has_count 1 succeeded a1
log=$($GP logs 1)
tap_ok "logs: gpupool's header names the node and the Slurm job" contains "$log" "workload 1 task 0 attempt 1 started .* on node n[1-4] as Slurm job"
tap_ok "logs: the contract's variables" contains "$log" "id=1 task=0 attempt=1"
tap_ok "logs: project, user, checkpoint signal" contains "$log" "project=a1 user=admin signal=TERM"
tap_ok "logs: two GPUs from Slurm's allocation" contains "$log" "gpus=[0-3],[0-3] slurm_gpus=[0-3],[0-3]"
tap_ok "logs: the workload's own environment" contains "$log" "mine=yes"
tap_ok "logs: the configured checkpoint directory exists" contains "$log" "ckpt=$D/ckpt/1/a1 "
tap_ok "logs: gpupool's footer with the status" contains "$log" "attempt ended .* with status 0"

$GP submit --project a1 --cpu 1 -- sh -c 'echo "gpus=[$CUDA_VISIBLE_DEVICES]"; exit 3' >/dev/null
tap_ok "a command that exits 3 fails its workload" wait_until 30 has_count 1 failed a1
tap_ok "a CPU-only task sees no GPU" contains "$($GP logs 2)" "gpus=\[\]"
tap_ok "describe says it exited with status 3" contains "$($GP describe 2)" "exited with status 3"

gpd_stop
bad=$("$GPD" --data-dir "$TMP/bad" --listen 127.0.0.1:0 --executor slurm \
    --executor-config "slurm_conf=$SLURM_CONF,statedir=/x" 2>&1)
tap_ok "an unknown configuration key is refused by name" contains "$bad" "unknown key 'statedir'"
bad=$("$GPD" --data-dir "$TMP/bad" --listen 127.0.0.1:0 --executor slurm \
    --executor-config "slurm_conf=$SLURM_CONF,state_dir=rel" 2>&1)
tap_ok "a relative state_dir is refused" contains "$bad" "state_dir must be an absolute path"
tap_done
