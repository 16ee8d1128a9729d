#!/bin/sh
# Four 0.25-GPU workloads share one GPU, each with a quarter of its memory as
# its cap (GPUPOOL_MEMORY_LIMIT) in its environment.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/slices
mkdir -p "$D"
# A sanitizer build's interposer cannot be preloaded into uninstrumented
# programs such as /bin/sh: there, the same emulated GPUs without it.
set --
case $B in
*asan*)
    printf 'node = local\ndomain = local\ngpu = H100 80G 8\n' >"$TMP/inv.conf"
    set -- --executor-config "state_dir=$D/tasks,inventory=$TMP/inv.conf,interposer=$TMP/none.so"
    ;;
esac
tap_ok "gpupoold starts" gpd_start "$D" --period 300ms --poll 200ms "$@"
$GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
for i in 1 2 3 4; do
    $GP submit --project proj --gpu 0.25 -- sh -c 'echo "limit=$GPUPOOL_MEMORY_LIMIT gpu=$CUDA_VISIBLE_DEVICES"; sleep 3' >/dev/null
done
tap_ok "all four run at once" wait_until 30 has_count 4 running proj
gpus=$(curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/api/v1/nodes" |
    grep -o '"allocated":[0-9.]*,"allocated_memory":[0-9]*,"slices_count":[0-9]*' | grep -v '"slices_count":0')
tap_is "they share one GPU, fully allocated, four slices" "$gpus" '"allocated":1.0,"allocated_memory":85899345920,"slices_count":4'
tap_ok "all four finish" wait_until 30 has_count 4 succeeded proj
limits=$(for id in 1 2 3 4; do $GP logs "$id" | sed -n 's/^limit=\([0-9]*\) gpu=\(.*\)$/\1 \2/p'; done | sort -u)
tap_is "each saw a quarter of the GPU's 80 GiB as its cap, on the same GPU" "$limits" "21474836480 GPU-emulated-local-0"
tap_done
