#!/bin/sh
# The Debian package on this machine: `make deb` builds it with
# dpkg-buildpackage, `dpkg -i` installs it, gpupoold started from the installed
# paths as the installed unit starts it (its ExecStart, with the unit's
# NoNewPrivileges and capability bounding set applied by setpriv; only the
# port is changed, to a free one) serves, and runs a fractional workload as an
# unprivileged Unix user with the installed interposer; `dpkg --purge` then
# leaves nothing behind: no file of the package, no state in /var/lib/gpupool,
# no configuration, no systemd link. Root only; runs one at a time on a host
# (a lock in /tmp), and never touches a gpupool package or state it did not
# install itself.
. tests/lib/tap.sh
. tests/daemon/lib.sh

skip() {
    echo "1..0 # SKIP $1"
    exit 0
}
[ "$(id -u)" = 0 ] || skip "installing a package needs root"
for c in dpkg-buildpackage dh fakeroot setpriv; do
    command -v $c >/dev/null || skip "$c is not installed (scripts/install-deps.sh)"
done
case $B in
*asan* | *tsan*) skip "the package is built and tested by the normal build's pass" ;;
esac
exec 9>/tmp/gpupool-deb-test.lock
flock -w 900 9 || skip "another run of this test held its lock for 15 minutes"
dpkg-query -W -f='${Status}' gpupool 2>/dev/null | grep -q installed &&
    skip "a gpupool package is installed on this host; this test would replace it"
[ -e /var/lib/gpupool ] && skip "/var/lib/gpupool exists; this test would remove it"
[ -e /etc/gpupool ] && skip "/etc/gpupool exists; this test would remove it"

INSTALLED=
DPID=
cleanup_deb() {
    if [ -n "$DPID" ]; then
        kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
    fi
    for f in /var/lib/gpupool/tasks/*/task; do
        [ -f "$f" ] || continue
        pid=$(sed -n 's/^pid=//p' "$f")
        [ -n "$pid" ] && kill -9 "-$pid" 2>/dev/null
    done
    [ -n "$INSTALLED" ] && dpkg --purge gpupool >/dev/null 2>&1
    cleanup
}
trap cleanup_deb EXIT

tap_ok "make deb" sh -c "MAKEFLAGS= make --no-print-directory BUILD='$B' deb >'$TMP/deb.log' 2>&1"
deb=$(ls "$B"/deb/gpupool_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || {
    tail -20 "$TMP/deb.log" | sed 's/^/# /'
    tap_done
    exit 1
}
# What the package holds, and which of those paths (and of the state and
# systemd links it makes) exist before it is installed.
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|; s|/$||' | grep -v '^$' >"$TMP/files"
cat >>"$TMP/files" <<'LIST'
/var/lib/gpupool
/etc/systemd/system/multi-user.target.wants/gpupoold.service
/var/lib/systemd/deb-systemd-helper-enabled/gpupoold.service.dsh-also
/var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/gpupoold.service
LIST
while read -r f; do [ -e "$f" ] || [ -L "$f" ] || echo "$f"; done <"$TMP/files" >"$TMP/new"
find /etc /usr /lib /var/lib -xdev -name '*gpupool*' 2>/dev/null | sort >"$TMP/named-before"

tap_ok "dpkg -i installs it" sh -c "dpkg -i '$deb' >'$TMP/dpkg.log' 2>&1"
INSTALLED=1
tap_ok "the unit is installed" test -f /lib/systemd/system/gpupoold.service
tap_ok "and enabled" test -L /etc/systemd/system/multi-user.target.wants/gpupoold.service
out=$(systemd-analyze verify /lib/systemd/system/gpupoold.service 2>&1)
tap_is "systemd-analyze verify on the installed unit" "$out" ""

# Start the daemon as the unit does.
unit=/lib/systemd/system/gpupoold.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
nnp=
grep -qx 'NoNewPrivileges=yes' "$unit" && nnp=--no-new-privs
drop=$(sed -n 's/^CapabilityBoundingSet=~//p' "$unit" | tr 'A-Z' 'a-z' | sed 's/cap_/-/g; s/ /,/g')
tap_ok "the unit removes capabilities from the bounding set" test -n "$drop"
mkdir -p /var/lib/gpupool && chmod 711 /var/lib/gpupool # the unit's StateDirectory
(cd /var/lib/gpupool && exec setpriv $nnp --bounding-set "$drop" $exec_start \
    --listen 127.0.0.1:0 --period 300ms --poll 200ms >"$TMP/gpupoold.log" 2>&1) &
DPID=$!
up() { [ -s /var/lib/gpupool/gpupoold.addr ]; }
tap_ok "the installed gpupoold serves" wait_until 30 up
export GPUPOOL_SERVER="$(cat /var/lib/gpupool/gpupoold.addr 2>/dev/null)"
export GPUPOOL_TOKEN="$(cat /var/lib/gpupool/admin.token 2>/dev/null)"
GP=/usr/bin/gpupool
$GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
TN=$($GP token create --user nobody --role researcher --scope proj | head -1)
id=$(GPUPOOL_TOKEN=$TN $GP submit --project proj --gpu 0.5 -- \
    sh -c 'echo "preload=$LD_PRELOAD user=$(id -un)"' | grep -o '[0-9][0-9]*' | head -1)
finished() { $GP describe "$id" 2>/dev/null | grep -qE '^State: *succeeded'; }
tap_ok "a workload of the user nobody succeeds" wait_until 60 finished
log=$($GP logs "$id" 2>&1)
tap_ok "it ran as nobody with the installed interposer" \
    contains "$log" "preload=/usr/lib/gpupool/libgpuslice.so user=nobody"
kill "$DPID" && wait "$DPID"
tap_is "gpupoold stops on SIGTERM with status 0" "$?" 0
DPID=
[ "${GP_TEST_VERBOSE:-}" ] && sed 's/^/# /' "$TMP/gpupoold.log"

tap_ok "dpkg --purge" sh -c "dpkg --purge gpupool >>'$TMP/dpkg.log' 2>&1"
INSTALLED=
left=$(while read -r f; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done <"$TMP/new")
tap_is "nothing the package or its daemon made is left" "$left" ""
find /etc /usr /lib /var/lib -xdev -name '*gpupool*' 2>/dev/null | sort >"$TMP/named-after"
tap_is "no new path named gpupool" "$(comm -13 "$TMP/named-before" "$TMP/named-after")" ""
forgotten() { ! dpkg-query -W -f='${Status}' gpupool 2>/dev/null | grep -qv not-installed; }
tap_ok "dpkg knows no gpupool any more" forgotten
tap_done
