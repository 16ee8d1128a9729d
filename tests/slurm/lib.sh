# tests/slurm/lib.sh — helpers for the Slurm tier's tests (source it after
# tests/lib/tap.sh and tests/daemon/lib.sh): the cluster's SLURM_CONF, a
# gpupoold on the slurm executor, and questions asked of Slurm through its
# commands.
. "$GP_SLURM_DIR/env"
SX_TAG=t$$

# sx_start DATA_DIR [gpupoold flags...]: gpupoold on the slurm executor of the
# test cluster, with its state and checkpoints under DATA_DIR, on the
# partitions SX_PARTITIONS names (default gpu: every node), with
# SX_CONFIG_EXTRA's key=value pairs added to its configuration.
sx_start() {
    sx_dir=$1
    shift
    # A sanitizer build's interposer cannot be preloaded into programs built
    # without its runtime (see skip_if_sanitized): slices then get the normal
    # build's, or, where there is none, run with their cap not enforced.
    sx_slice=
    case $B in *asan* | *tsan*) sx_slice=",interposer=$(pwd)/build/libgpuslice.so" ;; esac
    gpd_start "$sx_dir" --period 300ms --poll 300ms --inventory-period 1s --executor slurm --executor-config \
        "slurm_conf=$SLURM_CONF,state_dir=$sx_dir/slurm-state,checkpoint_dir=$sx_dir/ckpt,partitions=${SX_PARTITIONS:-gpu},gpu_mem.a100=40G,gpu_mem.h100=80G,tag=$SX_TAG$sx_slice${SX_CONFIG_EXTRA:+,$SX_CONFIG_EXTRA}" "$@"
}

# sx_jobs [STATES]: this test's gpupool jobs that Slurm knows (default: in any
# state), one "<id> <name> <state> <node>" a line.
sx_jobs() {
    squeue -h --states="${1:-all}" -o '%i %j %T %N' | grep " gp-$SX_TAG\\."
}

# node_of ID: the node of a running workload's first task.
node_of() {
    api GET "/api/v1/workloads/$1" | grep -o '"node":"[^"]*"' | head -1 | cut -d'"' -f4
}

# sx_test_user NAME: makes the Unix user NAME for this test (home under
# $TMP, which users may pass), or ends the test as a skip where it cannot
# (not root, no useradd). The caller removes it (userdel) when it ends.
sx_test_user() {
    if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null; then
        echo "ok 1 - # SKIP needs root and useradd"
        echo "1..1"
        exit 0
    fi
    useradd -m -d "$TMP/home-$1" "$1" || exit 1
    chmod 711 "$TMP"
}

# Cancels what this test left in Slurm, then the daemon's cleanup. With a
# daemon built with the sanitizers (make test-slurm SAN=1), a report in any
# daemon's log (an error, or a leak found when it stopped) fails the test:
# the report is shown and the script exits non-zero.
sx_cleanup() {
    gpd_stop
    for id in $(sx_jobs all | cut -d' ' -f1); do scancel "$id" 2>/dev/null; done
    san=$(grep -l -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$TMP"/*.log 2>/dev/null)
    for f in $san; do
        echo "# sanitizer report in $f:"
        grep -E -A12 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$f" | head -40 | sed 's/^/#   /'
    done
    [ -n "${GP_KEEP_TMP:-}" ] || rm -rf "$TMP"
    [ -z "$san" ] || exit 1
}
trap sx_cleanup EXIT
