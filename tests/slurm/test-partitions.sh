#!/bin/sh
# More than one partition and per-model GPU memory on a real Slurm cluster:
# with partitions=amp:hop (n1 and n2 in amp, n3 and n4 in hop only) the pool
# is every node of both, and each job goes to its node's partition, so the
# nodes of the second partition run work too; gpu_mem.a100=40G and
# gpu_mem.h100=80G give each model its memory, and a request for 60 GiB of
# GPU memory runs only on an h100 (in a GPU holder job, in partition hop).
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh

D=$TMP/pool
mkdir -p "$D"
SX_PARTITIONS=amp:hop
tap_ok "gpupoold starts on partitions amp and hop" sx_start "$D"
nodes=$($GP --json node list)
tap_is "the pool is the nodes of both partitions" \
    "$(echo "$nodes" | jq -r '[.nodes[].name] | sort | join(" ")')" "n1 n2 n3 n4"
tap_is "gpu_mem.<model>: an a100 has 40 GiB, an h100 80 GiB" \
    "$(echo "$nodes" | jq -c '[.nodes[].gpus[] | [.model, .memory]] | unique')" \
    '[["a100",42949672960],["h100",85899345920]]'
$GP queue create P --deserved 16 >/dev/null && $GP queue create p1 --parent P --deserved 16 >/dev/null
tap_is "queues created" "$?" 0

for i in 1 2 3 4; do
    $GP submit --project p1 --gpu 4 -- sleep 600 >/dev/null
done
tap_ok "four 4-GPU workloads run, one per node" wait_until 60 has_count 4 running p1
parts() { [ "$(squeue -h -o '%j %P %N' | grep "^gp-$SX_TAG\\." | cut -d' ' -f2,3 | sort | tr '\n' ' ')" = "amp n1 amp n2 hop n3 hop n4 " ]; }
tap_ok "each job in its node's partition" wait_until 30 parts
$GP delete 1 2 3 4 >/dev/null
none() { [ "$(squeue -h -t RUNNING -o %j | grep -c "^gp-$SX_TAG\\.")" = 0 ]; }
tap_ok "deleted" wait_until 60 none

$GP submit --project p1 --gpu-memory 60G -- sleep 600 >/dev/null
tap_ok "a 60 GiB GPU memory request runs" wait_until 60 has_count 1 running p1
tap_ok "on an h100 node, in its GPU holder job in partition hop" wait_until 30 sh -c \
    "squeue -h -o '%j %P %N' | grep -q '^gp-$SX_TAG\\.hold\\.n[34]\\.g[0-9]* hop n[34]$'"
$GP delete 5 >/dev/null
tap_ok "deleted" wait_until 60 none
tap_done
