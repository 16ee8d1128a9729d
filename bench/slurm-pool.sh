# bench/slurm-pool.sh — sourced by the Slurm benches (slurm.sh,
# slurm-throughput.sh): starts a test Slurm cluster in a new directory
# ($dir, named after POOL_NAME) and a gpupoold on its Slurm executor, exports
# GPUPOOL_SERVER and GPUPOOL_TOKEN, and stops both at exit. Needs B (the
# build directory).
dir=$(mktemp -d "/tmp/gpupool-${POOL_NAME:-slurm}.XXXXXX")
export GP_SLURM_DIR=$dir GP_SLURM_PORT=${GP_SLURM_PORT:-$((24000 + ($$ % 1000) * 8))}
GPD_PID=
trap '[ -n "$GPD_PID" ] && kill "$GPD_PID"; tests/slurm/cluster.sh stop "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
tests/slurm/cluster.sh start "$dir" || exit 1
. "$dir/env"
mkdir -p "$dir/pool"
"$B/gpupoold" --data-dir "$dir/pool" --listen 127.0.0.1:0 --period 500ms --poll 200ms \
    --inventory-period 2s --allow-root-workloads --executor slurm --executor-config \
    "slurm_conf=$SLURM_CONF,state_dir=$dir/pool/slurm,partitions=gpu,gpu_mem=80G" \
    >"$dir/pool.log" 2>&1 &
GPD_PID=$!
while [ ! -s "$dir/pool/gpupoold.addr" ]; do
    kill -0 "$GPD_PID" 2>/dev/null || { cat "$dir/pool.log" >&2; exit 1; }
    sleep 0.1
done
GPUPOOL_SERVER=$(cat "$dir/pool/gpupoold.addr")
GPUPOOL_TOKEN=$(cat "$dir/pool/admin.token")
export GPUPOOL_SERVER GPUPOOL_TOKEN
