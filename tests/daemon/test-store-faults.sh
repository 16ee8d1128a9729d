#!/bin/sh
# A full disk or a read-only store gives a clear error, not a corrupt file:
# the store lives on a tiny tmpfs that fills up, then on a read-only bind
# mount. Needs root (mount); skipped otherwise.
. tests/lib/tap.sh
. tests/daemon/lib.sh

if [ "$(id -u)" != 0 ] || ! mkdir -p "$TMP/m" || ! mount -t tmpfs -o size=600k tmpfs "$TMP/m" 2>/dev/null; then
    echo "ok 1 # SKIP needs root and mount"
    echo "1..1"
    exit 0
fi
trap 'gpd_stop; umount "$TMP/ro" 2>/dev/null; umount "$TMP/m" 2>/dev/null; cleanup' EXIT
D=$TMP/m/data
tap_ok "gpupoold starts on a 600 KiB file system" gpd_start "$D" --period 1s
$GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
big=$(head -c 3000 /dev/zero | tr '\0' x)
# Fill the disk with submissions padded by a large environment value.
status=
for i in $(seq 1 400); do
    out=$(api POST /api/v1/workloads "{\"project\":\"proj\",\"command\":[\"true\"],\"env\":{\"PAD\":\"$big\"}}")
    status=${out##* }
    [ "$status" = 201 ] || break
done
tap_is "a full disk answers 507 Insufficient Storage" "$status" 507
tap_ok "the message says the disk is full" contains "$out" 'disk is full' 
gpd_stop
tap_is "the store is not corrupt" "$(sqlite3 "$D/gpupool.db" 'PRAGMA integrity_check')" ok

# Read-only: a bind mount of the data directory, remounted read-only.
mkdir -p "$TMP/ro"
mount --bind "$D" "$TMP/ro" && mount -o remount,ro,bind "$TMP/ro"
msg=$("$GPD" --data-dir "$TMP/ro" --listen 127.0.0.1:0 2>&1)
rc=$?
tap_is "gpupoold refuses to start on a read-only store (exit 3)" "$rc" 3
tap_ok "and says why" contains "$msg" 'read-only\|cannot be written\|cannot open' 
umount "$TMP/ro"
tap_is "the store is still intact" "$(sqlite3 "$D/gpupool.db" 'PRAGMA integrity_check')" ok
tap_done
