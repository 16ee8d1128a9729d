#!/bin/sh
# What gpupoold does with its files and its address at start: a data
# directory that already exists with a wide mode is made private (with its
# logs), the admin token is private, listening beyond loopback without TLS is
# warned about loudly, a config value too long is refused, so is an address
# that is not HOST:PORT, and a full disk at start exits 3 as documented (needs
# root for a small tmpfs; skipped otherwise).
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/wide
mkdir -p "$D/logs/1"
chmod 755 "$D" "$D/logs"
tap_ok "gpupoold starts on a data directory of mode 0755" gpd_start "$D"
gpd_stop
# As root, tasks run as other users who pass through it (never list it) to
# reach their own checkpoint directories: 0711, with everything in it private.
want=700
[ "$(id -u)" = 0 ] && want=711
tap_is "the data directory is made private (passable only, as root)" "$(stat -c %a "$D")" $want
tap_is "its logs directory too" "$(stat -c %a "$D/logs")" 700
tap_is "the admin token is readable by its owner only" "$(stat -c %a "$D/admin.token")" 600
tap_is "the store is readable by its owner only" "$(stat -c %a "$D/gpupool.db")" 600

D=$TMP/exposed
GPD_LISTEN=0.0.0.0:0 gpd_start "$D"
gpd_stop
tap_ok "listening on 0.0.0.0 without TLS warns that it is plain HTTP" \
    grep -q 'WARNING: listening on 0.0.0.0:0 with plain HTTP' "$D.log"
D=$TMP/loop
gpd_start "$D"
gpd_stop
tap_ok "listening on loopback does not" sh -c "! grep -q WARNING '$D.log'"

# A value too long for its setting was cut silently (a listen address cut
# short names another address); now it is refused, naming the key and line.
long=$(head -c 200 /dev/zero | tr '\0' 1)
printf '# settings\nlisten = 127.0.0.1:%s\n' "$long" >"$TMP/long.conf"
msg=$("$GPD" --config "$TMP/long.conf" --data-dir "$TMP/long" 2>&1)
tap_is "a config value too long for its setting is refused (exit 2)" "$?" 2
tap_ok "naming the file, the line and the key" contains "$msg" "long.conf:2: listen: the value is longer"

# The port is read whole, once: "80abc" was served on port 80 (atoi).
for bad in 127.0.0.1:80abc 127.0.0.1:65536 127.0.0.1: 127.0.0.1:-1 :8642 localhost:8642; do
    msg=$(timeout 20 "$GPD" --data-dir "$TMP/badport" --listen "$bad" 2>&1)
    tap_is "--listen $bad is refused (exit 2)" "$?" 2
    tap_ok "naming listen and the value" contains "$msg" "listen: \"$bad\" is not an IPv4 address and port"
done

if [ "$(id -u)" = 0 ] && mkdir -p "$TMP/full" && mount -t tmpfs -o size=400k tmpfs "$TMP/full" 2>/dev/null; then
    trap 'umount "$TMP/full" 2>/dev/null; cleanup' EXIT
    # Room for a few pages: the store is created, its first writes fail.
    avail=$(df -k --output=avail "$TMP/full" | tail -1)
    head -c $(((avail - 16) * 1024)) /dev/zero >"$TMP/full/filler" 2>/dev/null
    "$GPD" --data-dir "$TMP/full/data" --listen 127.0.0.1:0 >"$TMP/full.log" 2>&1
    tap_is "a full disk at start exits 3" "$?" 3
    umount "$TMP/full"
else
    echo "ok $((tap_n + 1)) # SKIP needs root and mount"
    tap_n=$((tap_n + 1))
fi
tap_done
