#!/bin/sh
# The department story on a real Slurm cluster (4 nodes of 4 GPUs): A and B
# deserve 8 GPUs each. B submits four 4-GPU training workloads while A is
# idle: all four run, one per node, 8 GPUs borrowed across nodes. A submits
# one 4-GPU workload: one of B's receives the checkpoint signal through Slurm,
# saves its checkpoint on the shared checkpoint path and is requeued; A's
# runs on the node it left. When B's others finish, the evicted one resumes
# from its checkpoint on another node while A still holds the first.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts on the slurm executor" sx_start "$D"

cat >"$TMP/train.sh" <<'SH'
step=0
if [ -f "$GPUPOOL_CHECKPOINT_DIR/step" ]; then
    step=$(cat "$GPUPOOL_CHECKPOINT_DIR/step")
    echo "resumed from step $step"
fi
trap 'echo $step > "$GPUPOOL_CHECKPOINT_DIR/step.tmp" && mv "$GPUPOOL_CHECKPOINT_DIR/step.tmp" "$GPUPOOL_CHECKPOINT_DIR/step"; echo "checkpoint saved at step $step"; exit 0' TERM
while [ "$step" -lt "$STEPS" ]; do
    sleep 1 &
    wait $!
    step=$((step + 1))
done
echo "finished"
SH

$GP queue create A --deserved 8 >/dev/null && $GP queue create a1 --parent A --deserved 8 >/dev/null &&
    $GP queue create B --deserved 8 >/dev/null && $GP queue create b1 --parent B --deserved 8 >/dev/null
tap_is "queues created" "$?" 0

for i in 1 2 3 4; do
    $GP submit --project b1 --gpu 4 --grace 5s --env STEPS=12 --name b$i -- sh "$TMP/train.sh" >/dev/null
done
tap_ok "all four of B's workloads run while A is idle" wait_until 40 has_count 4 running b1
tap_is "B holds all 16 GPUs (8 borrowed)" "$(api GET /api/v1/queues/B | grep -o '"allocated":{"gpu":[0-9]*' | grep -o '[0-9]*$')" 16
four_nodes() { [ "$(sx_jobs RUNNING | cut -d' ' -f4 | sort -u | wc -l)" = 4 ]; }
tap_ok "Slurm runs them as four jobs on four nodes" wait_until 20 four_nodes

sleep 3
$GP submit --project a1 --gpu 4 --grace 5s --env STEPS=25 --name a1 -- sh "$TMP/train.sh" >/dev/null
tap_ok "A's workload runs (a cycle plus the grace period, generous bound)" \
    wait_until 60 has_count 1 running a1
evicted=$(for id in 1 2 3 4; do
    api GET "/api/v1/workloads/$id/events" | grep -q '"kind":"checkpoint-signal"' && echo "$id"
done)
tap_is "exactly one of B's workloads received the checkpoint signal" "$(echo "$evicted" | grep -c .)" 1
a_node=$(wait_until 20 sh -c "$GP logs 5 | grep -q 'started.*on node'"; $GP logs 5 | sed -n 's/.*started .* on node \(n[0-9]\).*/\1/p' | head -1)
first=$($GP logs "$evicted" | sed -n 's/.*started .* on node \(n[0-9]\).*/\1/p' | head -1)
tap_is "A's workload took the node the evicted one left" "$a_node" "$first"

tap_ok "every workload finishes" wait_until 120 has_count 5 succeeded
log=$($GP logs "$evicted")
saved=$(echo "$log" | sed -n 's/^checkpoint saved at step //p' | head -1)
tap_ok "the evicted workload saved a checkpoint after some steps" test "${saved:-0}" -gt 0
tap_ok "and resumed from it" contains "$log" "resumed from step $saved"
second=$(echo "$log" | sed -n 's/.*attempt 2 started .* on node \(n[0-9]\).*/\1/p' | head -1)
tap_ok "on another node than the first ($first -> $second)" test -n "$second" -a "$second" != "$first"
attempts=$(api GET "/api/v1/workloads/$evicted/events" | grep -o '"outcome":"[a-z]*"' | tr '\n' ' ')
tap_is "its attempts are recorded with their outcome" "$attempts" '"outcome":"evicted" "outcome":"succeeded" '
tap_is "Slurm ran six jobs for five workloads" "$(sx_jobs | wc -l)" 6
tap_done
