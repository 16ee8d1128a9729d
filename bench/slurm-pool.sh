# bench/slurm-pool.sh — sourced by the Slurm benches (slurm.sh,
# slurm-throughput.sh, slurm-sessions.sh): starts a test Slurm cluster in a
# new directory ($dir, named after POOL_NAME) and a gpupoold on its Slurm
# executor, exports GPUPOOL_SERVER and GPUPOOL_TOKEN, and stops both at exit.
# Needs B (the build directory); GP_BENCH_EXEC_CONFIG adds keys to the
# executor's configuration (e.g. gpu_hold=10s). A bench that compares two
# configurations starts another gpupoold on the same cluster with
# gp_pool_start NAME EXTRA_CONFIG (a tag of its own, so that neither takes
# the other's jobs for its own).
dir=$(mktemp -d "/tmp/gpupool-${POOL_NAME:-slurm}.XXXXXX")
export GP_SLURM_DIR=$dir GP_SLURM_PORT=${GP_SLURM_PORT:-$((24000 + ($$ % 1000) * 8))}
GPD_PIDS=
trap 'for p in $GPD_PIDS; do kill "$p"; done; tests/slurm/cluster.sh stop "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
trap 'exit 1' HUP INT TERM # so that a bench killed still stops its cluster
tests/slurm/cluster.sh start "$dir" || exit 1
. "$dir/env"

# gp_pool_start NAME EXTRA_CONFIG: a gpupoold with its data in $dir/NAME and
# job names gp-NAME.*; sets GPUPOOL_SERVER and GPUPOOL_TOKEN to it.
gp_pool_start() {
    mkdir -p "$dir/$1"
    "$B/gpupoold" --data-dir "$dir/$1" --listen 127.0.0.1:0 --period 500ms --poll 200ms \
        --inventory-period 2s --allow-root-workloads --executor slurm --executor-config \
        "slurm_conf=$SLURM_CONF,state_dir=$dir/$1/slurm,partitions=gpu,gpu_mem=80G,tag=$1${2:+,$2}" \
        >"$dir/$1.log" 2>&1 &
    gp_pid=$!
    GPD_PIDS="$GPD_PIDS $gp_pid"
    while [ ! -s "$dir/$1/gpupoold.addr" ]; do
        kill -0 "$gp_pid" 2>/dev/null || { cat "$dir/$1.log" >&2; exit 1; }
        sleep 0.1
    done
    GPUPOOL_SERVER=$(cat "$dir/$1/gpupoold.addr")
    GPUPOOL_TOKEN=$(cat "$dir/$1/admin.token")
    export GPUPOOL_SERVER GPUPOOL_TOKEN
}

gp_pool_start pool "${GP_BENCH_EXEC_CONFIG:-}"
