#!/bin/sh
# Fractions of one GPU on a real Slurm cluster, shared by two projects of two
# departments on one node, while a job submitted to Slurm directly holds the
# node's other GPUs: gpupool offers only the GPU Slurm has not given away;
# the shared GPU is held in Slurm's books by one holder job; each slice is a
# step of it, named after its workload, with the slice's memory cap; when the
# last slice ends the holder is cancelled and the GPU goes back to Slurm.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh

direct=$(sbatch --parsable --job-name=direct --nodelist=n1 --gres=gpu:3 --mem=64 \
    --output=/dev/null --wrap 'sleep 600')
for n in n2 n3 n4; do scontrol update nodename=$n state=drain reason=gpupool-test; done
restore() {
    scancel "$direct"
    for n in n2 n3 n4; do scontrol update nodename=$n state=resume; done
    sx_cleanup
}
trap restore EXIT
direct_runs() { [ "$(squeue -h -j "$direct" -o %T)" = RUNNING ]; }
tap_ok "a job submitted directly to Slurm holds 3 of n1's GPUs" wait_until 30 direct_runs

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts on the slurm executor" sx_start "$D"
n1_gpus() { [ "$($GP --json node list | jq '.nodes[] | select(.name == "n1") | [.gpus[] | select(.taken | not)] | length')" = "$1" ]; }
tap_ok "gpupool offers only n1's one GPU that Slurm has not given away" wait_until 20 n1_gpus 1

$GP queue create X --deserved 2 >/dev/null && $GP queue create x1 --parent X --deserved 2 >/dev/null &&
    $GP queue create Y --deserved 2 >/dev/null && $GP queue create y1 --parent Y --deserved 2 >/dev/null
tap_is "queues created" "$?" 0

cmd='echo "mem=$GPUPOOL_MEMORY_LIMIT gpus=$CUDA_VISIBLE_DEVICES slice=$GPUPOOL_SLICE step=$SLURM_STEP_ID"; sleep 8'
$GP submit --project x1 --gpu 0.5 -- sh -c "$cmd" >/dev/null
$GP submit --project y1 --gpu 0.5 -- sh -c "$cmd" >/dev/null
$GP submit --project x1 --gpu 0.5 -- sh -c "$cmd" >/dev/null
tap_ok "the two halves from two projects run" wait_until 30 has_count 2 running
tap_is "the third half waits: the GPU is full" "$(count_state pending)" 1
holder_runs() { squeue -h -o '%j %T %b %N' | grep -q "^gp-$SX_TAG\.hold\.n1\.g0 RUNNING .*gpu:1 n1$"; }
tap_ok "one holder job holds the shared GPU in Slurm's books" wait_until 30 holder_runs
two_steps() {
    [ "$(squeue -h -s -o '%j' | grep -c "^gp-$SX_TAG\.w[12]\.t0\.a1$")" = 2 ]
}
tap_ok "each slice is a step of it, named after its workload" wait_until 30 two_steps
tap_is "Slurm has given all four of n1's GPUs" \
    "$(sinfo -h -p gpu -n n1 -O GresUsed:40 | tr -d ' ')" "gpu:a100:4(IDX:0-3)"

tap_ok "both halves finish" wait_until 60 has_count 2 succeeded
l1=$($GP logs 1)
l2=$($GP logs 2)
tap_ok "slice 1 saw half of the 40 GiB a100 as its cap" contains "$l1" "mem=21474836480 "
tap_ok "slice 2 likewise" contains "$l2" "mem=21474836480 "
g1=$(echo "$l1" | sed -n 's/.* gpus=\([0-9]*\) .*/\1/p')
g2=$(echo "$l2" | sed -n 's/.* gpus=\([0-9]*\) .*/\1/p')
tap_ok "both on the same GPU ($g1, $g2)" test -n "$g1" -a "$g1" = "$g2"
tap_is "the GPU the direct job does not hold" "$g1" 3
tap_ok "each started as a step of the holder" contains "$l1" "step [0-9]* (in its GPU holder)"
tap_ok "the third half runs when the GPU frees" wait_until 60 has_count 1 running
tap_ok "and finishes" wait_until 60 has_count 3 succeeded
holder_gone() { ! squeue -h -o '%j' | grep -q "^gp-$SX_TAG\.hold\."; }
tap_ok "with no slice left, the holder is cancelled" wait_until 30 holder_gone
gpu_back() { [ "$(sinfo -h -p gpu -n n1 -O GresUsed:40 | tr -d ' ')" = "gpu:a100:3(IDX:0-2)" ]; }
tap_ok "and the GPU is Slurm's again" wait_until 30 gpu_back
tap_done
