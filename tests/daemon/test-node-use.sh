#!/bin/sh
# What a node really uses, beside what its tasks asked for. Before, 30
# CPU-only workloads ran on a 2-core node that counted 0 CPUs used, and
# nothing showed the machine was busy. Now the executor measures each node's
# CPU and memory in use (the local executor: /proc/stat and /proc/meminfo)
# at every usage sample, and /api/v1/nodes, gpupool node list and the
# console show both.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts, sampling every 200 ms" gpd_start "$D" --period 300ms --poll 200ms --usage-period 200ms
$GP queue create dept --deserved 8 >/dev/null && $GP queue create proj --parent dept --deserved 8 >/dev/null
$GP submit --project proj --gpu 1 --name spin -- sh -c 'while :; do :; done' >/dev/null
tap_ok "a workload that asks for no CPU spins" wait_until 60 has_count 1 running proj

nodes() { curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/api/v1/nodes"; }
field() { nodes | sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" | head -1; }
busy() { awk -v c="$(field cpu_in_use)" 'BEGIN { exit !(c > 0.1) }'; }
tap_ok "the node's CPU in use is measured (above 0.1 cores)" wait_until 30 busy
asked=$(field cpu_used)
tap_ok "while its tasks asked for none ($asked)" awk -v c="$asked" 'BEGIN { exit !(c == 0) }'
mem=$(field memory_in_use)
tap_ok "the node's memory in use is measured ($mem bytes)" test "${mem:-0}" -gt 0
out=$($GP node list)
tap_ok "gpupool node list shows both, per node" contains "$out" "CPU-ASKED *CPU-IN-USE"
row=$(printf '%s\n' "$out" | awk '/CPU-IN-USE/ { getline; print }')
tap_ok "with a measured figure ($row)" contains "$row" '[0-9]\.[0-9][0-9] '
tap_done
