#!/bin/sh
# A slice's compute share, end to end: --gpu-compute reaches the API, the
# stored request, describe, node list and the task, and the interposer paces
# the task's kernel launches by it. Two half-GPU workloads run the same
# launch loop on the fake driver (tests/fake, 1 ms per kernel); the one with
# --gpu-compute 0.25 gets a much smaller part of the GPU's time than the one
# without (a loose ratio, not a time: the machine may be loaded).
. tests/lib/tap.sh
. tests/daemon/lib.sh

case $B in
*asan* | *tsan*)
    # A sanitizer build's interposer cannot be preloaded into the loop.
    echo "ok 1 - # SKIP the interposer of a sanitizer build is not preloadable"
    echo "1..1"
    exit 0
    ;;
esac
D=$TMP/share
mkdir -p "$D"
tap_ok "gpupoold starts" gpd_start "$D" --period 300ms --poll 200ms
$GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null

out=$($GP submit --project proj --gpu 1 --gpu-compute 0.3 -- true 2>&1)
tap_ok "a compute share needs a slice, not a whole GPU" contains "$out" "gpu_compute: only a slice"
out=$($GP submit --project proj --gpu 0.5 --gpu-compute 1.5 -- true 2>&1)
tap_ok "a share above the whole GPU is refused" contains "$out" "gpu-compute"

loop="$(pwd)/$B/tests/daemon/share-loop"
lib="LD_LIBRARY_PATH=$(pwd)/$B/fake"
T=$($GP submit --project proj --gpu 0.5 --gpu-compute 0.25 --env "$lib" -- "$loop" 3.5 | grep -o '[0-9][0-9]*' | head -1)
F=$($GP submit --project proj --gpu 0.5 --env "$lib" -- "$loop" 3.5 | grep -o '[0-9][0-9]*' | head -1)
tap_ok "describe shows the share" sh -c "$GP --json describe $T | grep -q '\"gpu_compute\": *\"0.25\"'"
nodes() { $GP node list | grep -q "$T(25%)"; }
tap_ok "node list shows it beside the slice" wait_until 30 nodes
state_of() {
    $GP --json describe "$1" 2>/dev/null | grep -o '"state": *"[a-z]*"' | head -1 | sed 's/.*"\([a-z]*\)"$/\1/'
}
done2() { [ "$(state_of "$T")" = succeeded ] && [ "$(state_of "$F")" = succeeded ]; }
tap_ok "both loops finish" wait_until 60 done2
bt=$($GP logs "$T" | sed -n 's/^busy=//p')
bf=$($GP logs "$F" | sed -n 's/^busy=//p')
echo "# busy fraction: throttled $bt, unthrottled $bf"
tap_ok "the unthrottled loop kept the GPU busy (above 0.5)" awk -v f="$bf" 'BEGIN { exit !(f > 0.5) }'
tap_ok "the throttled one got less than half as much" awk -v t="$bt" -v f="$bf" 'BEGIN { exit !(t > 0 && t < f / 2) }'
tap_done
