#!/bin/sh
# A task may open only its own GPUs' device files. Two emulated GPUs have
# device files made here with mknod (c 195:0 and c 195:1, as /dev/nvidia0
# and /dev/nvidia1); a workload given one GPU opens both. Its own GPU's open
# gets past the cgroup (no NVIDIA driver answers here, so the kernel says
# ENXIO, "No such device or address"); the other's is refused with EPERM,
# "Operation not permitted", by the devices cgroup (devices=v1) and by the
# BPF device program attached in the cgroup2 tree (devices=v2); and over the
# fake NVML, whose GPUs' minor numbers are 0 and 1 (devices=v1). The
# workload with a GPU runs as a test user made here (removed at the end); a
# workload with no GPU is refused both. Needs root, mknod and the kernel's cgroups;
# skips, saying why, where they are refused.
. tests/lib/tap.sh
. tests/daemon/lib.sh

if [ "$(id -u)" != 0 ]; then
    echo "ok 1 - # SKIP needs root (device cgroups and mknod)"
    echo "1..1"
    exit 0
fi
DEV=$TMP/dev
mkdir -p "$DEV"
if ! mknod -m 0666 "$DEV/nvidia0" c 195 0 2>/dev/null || ! mknod -m 0666 "$DEV/nvidia1" c 195 1; then
    echo "ok 1 - # SKIP mknod of character devices is refused here"
    echo "1..1"
    exit 0
fi
chmod 0755 "$TMP"
# The workload with a GPU runs as a test user, as a tenant's would (as root
# where useradd is missing).
U=
if command -v useradd >/dev/null && useradd -M -d /nonexistent "gptd$$" 2>/dev/null; then
    U=gptd$$
    trap 'pkill -9 -u "$U" 2>/dev/null; cleanup; userdel "$U" 2>/dev/null' EXIT
fi
# The fake NVML of the nvml check declares two GPUs.
GPUPOOL_FAKE_GPUS=2
export GPUPOOL_FAKE_GPUS
printf 'node = local\ndomain = local\ngpu = H100 80G 2 dev=%s,%s\n' "$DEV/nvidia0" "$DEV/nvidia1" >"$TMP/inv.conf"

# What a process outside any task gets: the open passes every check and
# reaches the missing driver.
outside=$(cat "$DEV/nvidia1" 2>&1)
tap_ok "outside a task, GPU 1's device file is not refused ($outside)" \
    sh -c "! printf '%s' \"$outside\" | grep -q 'not permitted'"

# The script a workload runs: one line per device file, "gpuN: <message>".
probe='echo "user=$(id -un)"; for i in 0 1; do echo "gpu$i: $(cat '"$DEV"'/nvidia$i 2>&1 | sed "s/.*: //")"; done; echo "visible=$CUDA_VISIBLE_DEVICES"'

# gpu_index UUID: the index of the GPU with that UUID, from /api/v1/nodes.
gpu_index() {
    curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/api/v1/nodes" |
        grep -o '"index":[0-9]*,"uuid":"[^"]*"' | grep -F "\"$1\"" | sed 's/^"index":\([0-9]*\).*/\1/'
}

# check MODE GPUS: one daemon with devices=MODE over GPUS (emulated: the
# inventory's dev= files; nvml: the fake NVML's minor numbers, 0 and 1), one
# workload with a GPU and one without.
check() {
    mode=$1
    D=$TMP/$mode-$2
    mkdir -p "$D"
    gpus="inventory=$TMP/inv.conf"
    [ "$2" = nvml ] && gpus="nvml=$(pwd)/$B/fake/libnvidia-ml.so.1,interposer=$TMP/none.so"
    if ! gpd_start "$D" --period 300ms --poll 200ms \
        --executor-config "$gpus,devices=$mode"; then
        # Only the kernel or the privileges refusing the mechanism is a skip.
        why=$(grep -o 'devices: .*' "$D.log" | head -1)
        if [ -n "$why" ]; then
            tap_n=$((tap_n + 1))
            echo "ok $tap_n - # SKIP devices=$mode refused here: $why"
        else
            tap_ok "devices=$mode ($2): gpupoold starts" false
        fi
        return 0
    fi
    mode="$mode ($2)"
    $GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
    T=$GPUPOOL_TOKEN
    [ -n "$U" ] && T=$($GP token create --user "$U" --role researcher --scope proj | head -1)
    one=$(GPUPOOL_TOKEN=$T $GP submit --project proj --gpu 1 -- sh -c "$probe" | grep -o '[0-9][0-9]*' | head -1)
    none=$($GP submit --project proj -- sh -c "$probe" | grep -o '[0-9][0-9]*' | head -1)
    tap_ok "devices=$mode: both workloads end" wait_until 60 has_count 2 succeeded proj
    log=$($GP logs "$one")
    mine=$(gpu_index "$(printf '%s\n' "$log" | sed -n 's/^visible=//p')")
    other=$((1 - ${mine:-0}))
    tap_is "devices=$mode: the workload holds one GPU, as its user" \
        "${mine:+yes} $(printf '%s\n' "$log" | sed -n 's/^user=//p')" "yes ${U:-root}"
    tap_ok "devices=$mode: its own GPU's device file opens past the cgroup" \
        sh -c "printf '%s\n' \"$log\" | grep '^gpu$mine: ' | grep -vq 'not permitted'"
    tap_is "devices=$mode: the other GPU's device file is refused (EPERM)" \
        "$(printf '%s\n' "$log" | sed -n "s/^gpu$other: //p")" "Operation not permitted"
    tap_is "devices=$mode: a workload without GPUs is refused both" \
        "$($GP logs "$none" | grep -c '^gpu[01]: Operation not permitted$')" 2
    tap_ok "devices=$mode: the daemon's log says how GPU devices are filtered" \
        grep -q "GPU devices: each task is denied the GPUs it was not given" "$D.log"
    nodes=$($GP node list)
    tap_ok "devices=$mode: node list says so" \
        contains "$nodes" "^GPU devices: each task is denied the GPUs it was not given"
    tap_ok "devices=$mode: node list says what limits GPU memory (no dmem here)" \
        contains "$nodes" "^GPU memory limits: interposer and watchdog only"
    gpd_stop
}

check v1 emulated
check v2 emulated
check v1 nvml
tap_done
