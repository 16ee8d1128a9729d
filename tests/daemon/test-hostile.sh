#!/bin/sh
# Hostile tenants against a slice, through a root daemon, as a test user of
# its own holding a researcher token: the workload cannot crash the daemon
# through the ledger it owns (an ftruncate loop shrinking it under the
# daemon's reads; the daemon survives, and restarts, while the loop runs);
# nor outgrow its slice by rewriting that ledger (a charge also fits what
# the driver says the task's other processes hold), nor with many processes
# (the watchdog's allowance for their contexts is bounded).
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

# 2. The ledger is the workload's file: a task that puts back the empty
# books it copied before allocating (no layout to know) got the whole slice
# again from a second process. The charge also fits what the driver says
# the task's other processes hold.
R=$(submit "o=\$(mktemp); e=\$(mktemp); cat /run/gpupool/ledger >\$e
$loop alloc 15360 60 >\$o & while ! grep -q alloc= \$o; do sleep 0.1; done; cat \$o
dd if=\$e of=/run/gpupool/ledger conv=notrunc status=none && echo restored
exec $loop alloc 15360")
tap_ok "a task rewrites its ledger while a process holds 15 GiB" wait_until 60 logs_have "$R" "^restored"
tap_ok "its second process ran" wait_until 60 sh -c "[ \$($GP logs $R | grep -c '^alloc=') = 2 ]"
tap_is "and got no more than the 20 GiB slice left it" \
    "$($GP logs "$R" | sed -n 's/^alloc=//p' | tr '\n' ' ')" "ok oom "
$GP delete "$R" >/dev/null

# 3. Processes count against the slice: the watchdog allows 512 MiB per
# process for its CUDA context for four processes at most. 40 processes of
# 600 MiB each (23.4 GiB in a 20 GiB slice) were within the 40.4 GiB that
# 512 MiB per process allowed.
state_of() {
    $GP --json describe "$1" | grep -o '"state": *"[a-z]*"' | head -1 | sed 's/.*"\([a-z]*\)"$/\1/'
}
is_state() { [ "$(state_of "$1")" = "$2" ]; }
M=$(submit "for i in \$(seq 40); do $loop unseen 600 & done; wait")
tap_ok "40 processes of 600 MiB each are stopped" wait_until 60 is_state "$M" failed
# (The scan that stops it may see 38 to 40 of them: 22.4 GiB is the bound.)
tap_ok "with the watchdog's reason" \
    contains "$($GP describe "$M")" "stopped by the watchdog: 2[23]\.[0-9] GiB on GPU 0, its slice is 20 GiB"
tap_done
