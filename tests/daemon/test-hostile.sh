#!/bin/sh
# Hostile tenants against a slice, through a root daemon, as a test user of
# its own holding a researcher token: the workload cannot crash the daemon
# through the ledger it owns (an ftruncate loop shrinking it under the
# daemon's reads; the daemon survives, and restarts, while the loop runs).
# Runs the fake driver and the fake NVML; needs root, useradd, cgroups and
# mount namespaces.
. tests/lib/tap.sh
. tests/daemon/lib.sh

FAKE_STATE=gpupool-test-hostile-$$
SLICE_USER_AT_EXIT="rm -f /dev/shm/$FAKE_STATE"
slice_user gpth
# One fake GPU state for the daemon's NVML and every workload: an 80 GiB GPU.
# Its file is the user's, so that the workloads can open it too.
install -m 600 -o "$U" /dev/null "/dev/shm/$FAKE_STATE"
export GPUPOOL_FAKE_LEDGER=$FAKE_STATE GPUPOOL_FAKE_GPUS=1 GPUPOOL_FAKE_GPU_MEMORY=80G
FAKE="GPUPOOL_FAKE_LEDGER=$FAKE_STATE GPUPOOL_FAKE_GPUS=1 GPUPOOL_FAKE_GPU_MEMORY=80G"
D=$TMP/pool
CFG="interposer=$TMP/lib/libgpuslice.so,nvml=$TMP/lib/libnvidia-ml.so.1"
slice_pool "$D" --period 300ms --poll 100ms --executor-config "$CFG"
loop=$TMP/lib/share-loop
submit() { # submit SCRIPT: a 0.25 slice of the 80 GiB GPU (20 GiB)
    GPUPOOL_TOKEN=$T $GP submit --project proj --gpu 0.25 --workdir "$TMP/home-$U" \
        --env "LD_LIBRARY_PATH=$TMP/lib" -- sh -c "export $FAKE; $1" | grep -o '[0-9][0-9]*' | head -1
}
logs_have() { $GP logs "$1" | grep -q "$2"; }
alive() { kill -0 "$GPD_PID" 2>/dev/null && $GP queue list >/dev/null; }

# 1. The ledger is the workload's file: shrinking it under the daemon's
# reads (it polls every 100 ms) once killed the daemon with SIGBUS, and
# every restart while the loop ran.
S=$(submit "o=\$(mktemp); $loop alloc 1024 120 >\$o & while ! grep -q alloc= \$o; do sleep 0.1; done
cat \$o; $loop shrink /run/gpupool/ledger 8; exec $loop shrink /run/gpupool/ledger 8")
tap_ok "a workload holding memory shrinks its ledger in a loop" wait_until 60 logs_have "$S" "^alloc=ok"
tap_ok "the first loop ends" wait_until 60 logs_have "$S" "^shrink=done"
tap_ok "the daemon survived it" alive
gpd_stop
tap_ok "the daemon restarts while the loop runs" gpd_start "$D" --period 300ms --poll 100ms \
    --executor-config "$CFG"
tap_ok "the second loop ends" wait_until 60 sh -c "[ \$($GP logs $S | grep -c '^shrink=done') = 2 ]"
tap_ok "the restarted daemon survived it too" alive
$GP delete "$S" >/dev/null
tap_done
