#!/bin/sh
# The scenario of the pool service, end to end with a real daemon and real
# processes: one node with 8 emulated GPUs; departments A and B with 4 GPUs
# deserved each. B submits 8 one-GPU training workloads while A is idle: all
# 8 run, 4 on borrowed GPUs. A submits 2: two of B's workloads receive the
# checkpoint signal, save a checkpoint, stop and are requeued; A's 2 run; B's
# requeued workloads resume from their checkpoint when GPUs free up, and
# every workload finishes.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts with 8 emulated GPUs" gpd_start "$D" --period 300ms --poll 200ms

# A training step loop: resumes from $GPUPOOL_CHECKPOINT_DIR/step, saves the
# step there on SIGTERM and exits; STEPS steps of 1 s each.
cat >"$TMP/train.sh" <<'SH'
step=0
if [ -f "$GPUPOOL_CHECKPOINT_DIR/step" ]; then
    step=$(cat "$GPUPOOL_CHECKPOINT_DIR/step")
    echo "resumed from step $step"
fi
trap 'echo $step > "$GPUPOOL_CHECKPOINT_DIR/step"; echo "checkpoint saved at step $step"; exit 0' TERM
while [ "$step" -lt "$STEPS" ]; do
    sleep 1 &
    wait $!
    step=$((step + 1))
done
echo "finished"
SH

$GP queue create A --deserved 4 >/dev/null && $GP queue create a1 --parent A --deserved 4 >/dev/null &&
    $GP queue create B --deserved 4 >/dev/null && $GP queue create b1 --parent B --deserved 4 >/dev/null
tap_is "queues created" "$?" 0

for i in 1 2 3 4 5 6 7 8; do
    $GP submit --project b1 --gpu 1 --grace 2s --env STEPS=10 --name b$i -- sh "$TMP/train.sh" >/dev/null
done
tap_ok "all 8 of B's workloads run while A is idle (4 on borrowed GPUs)" \
    wait_until 30 has_count 8 running b1
tap_is "B holds all 8 GPUs" "$(curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/api/v1/queues/B" | grep -o '"allocated":{"gpu":[0-9]*' | grep -o '[0-9]*$')" 8

# Let B train a few steps, so that the checkpoints have something in them.
sleep 3
for i in 1 2; do
    $GP submit --project a1 --gpu 1 --grace 2s --env STEPS=3 --name a$i -- sh "$TMP/train.sh" >/dev/null
done
tap_ok "A's 2 workloads run within a cycle plus the grace period (generous bound)" \
    wait_until 40 has_count 2 running a1

evicted=$(ids_with_event '"kind":"checkpoint-signal"' 1 8)
tap_is "exactly 2 of B's workloads received the checkpoint signal" "$(echo "$evicted" | grep -c .)" 2

tap_ok "every workload finishes (B's requeued ones when GPUs free up)" \
    wait_until 90 has_count 10 succeeded

ok_resumed=0
for id in $evicted; do
    log=$($GP logs "$id")
    saved=$(echo "$log" | sed -n 's/^checkpoint saved at step //p' | head -1)
    [ -n "$saved" ] && [ "$saved" -gt 0 ] &&
        echo "$log" | grep -q "resumed from step $saved" &&
        api GET "/api/v1/workloads/$id" | grep -q '"attempt":2' && ok_resumed=$((ok_resumed + 1))
done
tap_is "both evicted workloads saved a checkpoint, were requeued and resumed from it" "$ok_resumed" 2

attempts=$(api GET "/api/v1/workloads/$(echo "$evicted" | head -1)/events" | grep -o '"outcome":"[a-z]*"' | tr '\n' ' ')
tap_is "the evicted workload's attempts are recorded with their outcome" "$attempts" '"outcome":"evicted" "outcome":"succeeded" '

tap_ok "describe shows the event history" sh -c "$GP describe $(echo "$evicted" | head -1) | grep -q requeued"
tap_ok "/metrics reports the queues and the cycle histogram" sh -c \
    "curl -s -H 'Authorization: Bearer $GPUPOOL_TOKEN' $GPUPOOL_SERVER/metrics | grep -q 'gpupool_queue_deserved_gpus{queue=\"A\"' && curl -s -H 'Authorization: Bearer $GPUPOOL_TOKEN' $GPUPOOL_SERVER/metrics | grep -q gpupool_scheduling_cycle_seconds_count"
tap_done
