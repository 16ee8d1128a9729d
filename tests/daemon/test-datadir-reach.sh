#!/bin/sh
# A data directory under a parent that other users cannot pass through (a
# 0700 directory, as mktemp makes them): every workload of a real user failed
# with "workdir: cannot enter .../checkpoints/N: Permission denied". The
# daemon says so at start, with the fix, and refuses such workloads at
# submit with the same words until the mode is fixed (no restart needed).
. tests/lib/tap.sh
. tests/daemon/lib.sh

skip_unless_root_useradd
UA=gptr$$
useradd -M -d /nonexistent "$UA" || exit 1
trap 'pkill -9 -u "$UA" 2>/dev/null; cleanup; userdel "$UA" 2>/dev/null' EXIT
chmod 700 "$TMP"
D=$TMP/pool
mkdir -p "$D"
GPD_ROOT=no
tap_ok "gpupoold starts as root under a 0700 parent" gpd_start "$D" --period 300ms --poll 200ms
tap_ok "it warns at start, naming the parent and the fix" \
    grep -q "warning: data dir .*$TMP (mode 0700).*chmod o+x $TMP" "$D.log"
$GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
TA=$($GP token create --user "$UA" --role researcher --scope proj | head -1)
out=$(GPUPOOL_TOKEN=$TA $GP submit --project proj -- true 2>&1)
tap_ok "a workload of $UA is refused with the fix" contains "$out" "chmod o+x $TMP"
tap_is "and nothing was stored" "$(count_state pending)$(count_state failed)" "00"
chmod 711 "$TMP"
out=$(GPUPOOL_TOKEN=$TA $GP submit --project proj -- true 2>&1)
tap_ok "once the parent lets others pass, it is accepted" contains "$out" "[0-9]"
tap_ok "and runs as $UA to its end" wait_until 60 has_count 1 succeeded
tap_done
