#!/bin/sh
# A slice's limits hold against its own workload. A renamed copy of the
# driver opened with dlopen, and a second process of the task, stay within
# the slice. A task that sets GPUPOOL_MEMORY_LIMIT=80G (or
# GPUPOOL_COMPUTE_SHARE=100) in its own command still gets its 0.25 slice's
# cap, because an executor running as
# root writes the limits into a root-owned file that the interposer finds
# from the task's cgroup and that the environment can only narrow. Runs the
# fake driver (tests/fake) through the daemon; needs root and cgroups.
. tests/lib/tap.sh
. tests/daemon/lib.sh

case $B in
*asan* | *tsan*)
    echo "ok 1 - # SKIP the interposer of a sanitizer build is not preloadable"
    echo "1..1"
    exit 0
    ;;
esac
D=$TMP/limits
mkdir -p "$D"
tap_ok "gpupoold starts" gpd_start "$D" --period 300ms --poll 200ms
$GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
if [ "$(id -u)" != 0 ] || grep -q "no cgroup" "$D.log"; then
    echo "ok 2 - # SKIP needs root and cgroups (the slice file is found from the task's cgroup)"
    echo "1..2"
    exit 0
fi
loop="$(pwd)/$B/tests/daemon/share-loop"
lib="LD_LIBRARY_PATH=$(pwd)/$B/fake"
state_of() {
    $GP --json describe "$1" 2>/dev/null | grep -o '"state": *"[a-z]*"' | head -1 | sed 's/.*"\([a-z]*\)"$/\1/'
}
# A quarter of an emulated 80 GiB GPU: a 20 GiB cap.
run() { # run SCRIPT: prints the workload's alloc= line
    id=$($GP submit --project proj --gpu 0.25 --env "$lib" -- sh -c "$1" | grep -o '[0-9][0-9]*' | head -1)
    wait_until 30 sh -c "[ \"\$($GP --json describe $id | grep -o '\"state\": *\"[a-z]*\"' | head -1)\" != '' ] && $GP logs $id | grep -q '^alloc='" || true
    $GP logs "$id" | sed -n 's/^alloc=//p'
}
tap_is "10 GiB fits the 20 GiB slice" "$(run "exec $loop alloc 10240")" ok
tap_is "30 GiB does not" "$(run "exec $loop alloc 30720")" oom
tap_is "nor with GPUPOOL_MEMORY_LIMIT=80G set by the workload itself" \
    "$(run "GPUPOOL_MEMORY_LIMIT=80G exec $loop alloc 30720")" oom
tap_is "the environment may still narrow the cap (5G)" \
    "$(run "GPUPOOL_MEMORY_LIMIT=5G exec $loop alloc 10240")" oom
# A renamed copy of the driver, opened by its own file name, reaches the
# same wrappers (the interposer knows a driver by what it exports).
copy="/tmp/gp-renamed-cuda-$$.so"
cp "$(pwd)/$B/fake/libcuda.so.1" "$copy" && chmod 0755 "$copy"
tap_is "nor through a renamed copy of libcuda opened with dlopen" \
    "$(run "SHARE_LOOP_LIBCUDA=$copy exec $loop alloc 30720")" oom
rm -f "$copy"
# The slice is the task's, not one process's: a child allocating while its
# parent holds 15 GiB gets only what is left of the 20 GiB.
tap_is "nor from a second process of the task (15 GiB held, 15 more asked)" \
    "$(run "o=\$(mktemp); $loop alloc 15360 10 >\$o & while ! grep -q alloc= \$o; do sleep 0.1; done; cat \$o; exec $loop alloc 15360" | tr '\n' ' ')" "ok oom "
# Dropping LD_PRELOAD does not drop the interposer: the task's own mount
# namespace binds a file naming it over /etc/ld.so.preload.
if unshare -m true 2>/dev/null; then
    tap_is "nor when the workload drops LD_PRELOAD" \
        "$(run "exec env -u LD_PRELOAD $loop alloc 30720")" oom
    tap_ok "the host's /etc/ld.so.preload is left empty" test ! -s /etc/ld.so.preload
else
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - # SKIP no mount namespaces here (unshare -m refused)"
fi
# Without the file (a root workload, allowed in these tests, may remove it:
# the layer holds against workloads that are not root), the environment wins.
inst=$(cat "$D/tasks/instance")
tap_is "without the slice file, the workload's own setting would win" \
    "$(run "rm -f /run/gpupool/slices/$inst.*; GPUPOOL_MEMORY_LIMIT=80G exec $loop alloc 30720")" ok
wait_gone() { [ "$(ls /run/gpupool/slices/ 2>/dev/null | grep -v '\.preload$' | grep -c "^$inst\.")" = 0 ]; }
tap_ok "the slice files go when their tasks are reaped" wait_until 30 wait_gone
tap_done
