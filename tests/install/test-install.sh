#!/bin/sh
# `make install` into a prefix of its own: every file where docs/install.md
# says, the systemd unit accepted by systemd-analyze verify (its man page
# found), and the installed gpupoold, started from PREFIX/sbin, injects the
# interposer installed in PREFIX/lib/gpupool into a fractional workload (not
# only a build tree's, beside the daemon). `make uninstall` takes it all away.
. tests/lib/tap.sh
. tests/daemon/lib.sh

P=$TMP/prefix
E=$TMP/etc
# The build being tested, with its own flags (a sanitizer build relinks with them).
san=
case $B in *asan*) san=SAN=1 ;; esac
inst() { MAKEFLAGS= make --no-print-directory BUILD="$B" $san PREFIX="$P" SYSCONFDIR="$E" "$@" >"$TMP/make.log" 2>&1; }
inst install
rc=$?
tap_is "make install PREFIX=... SYSCONFDIR=..." "$rc" 0
[ "$rc" = 0 ] || tail -20 "$TMP/make.log" | sed 's/^/# /'
for f in bin/gpupool bin/gpupool-sim sbin/gpupoold lib/gpupool/libgpuslice.so \
    share/man/man1/gpupool.1 share/man/man1/gpupool-sim.1 share/man/man8/gpupoold.8 \
    share/bash-completion/completions/gpupool share/gpupool/grafana/gpupool-dashboard.json \
    lib/systemd/system/gpupoold.service; do
    tap_ok "installed: $f" test -s "$P/$f"
done
tap_ok "installed: the configuration file" test -s "$E/gpupool/gpupoold.conf"
unit=$P/lib/systemd/system/gpupoold.service
tap_ok "the unit starts the installed daemon with the installed configuration" \
    grep -qx "ExecStart=$P/sbin/gpupoold --config $E/gpupool/gpupoold.conf" "$unit"
if command -v systemd-analyze >/dev/null; then
    out=$(MANPATH=$P/share/man systemd-analyze verify "$unit" 2>&1)
    rc=$?
    tap_is "systemd-analyze verify: no complaint" "$rc:$out" "0:"
else
    tap_skip "systemd-analyze is not installed (scripts/install-deps.sh)"
fi
for m in "$P/share/man/man1/gpupool-sim.1" "$P/share/man/man8/gpupoold.8"; do
    out=$(LC_ALL=C MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null)
    tap_is "man page formats without warnings: ${m##*/}" "$out" ""
done

# The installed daemon, from its installed place, on the installed
# configuration file's keys (its own data directory and a free port here).
D=$TMP/pool
mkdir -p "$D"
GPD=$P/sbin/gpupoold
GP=$P/bin/gpupool
tap_ok "the installed gpupoold starts" gpd_start "$D" --period 300ms --poll 200ms
$GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
id=$($GP submit --project proj --gpu 0.5 -- sh -c 'echo "preload=$LD_PRELOAD"' | grep -o '[0-9][0-9]*' | head -1)
# (Under a sanitizer build its interposer fails the workload: it ends, failed.)
finished() { $GP describe "$id" 2>/dev/null | grep -qE '^State: *(succeeded|failed)'; }
tap_ok "the fractional workload ran to its end" wait_until 60 finished
log=$($GP logs "$id" 2>&1)
tap_ok "its slice is enforced by the installed interposer" \
    contains "$log" "enforced by $P/lib/gpupool/libgpuslice.so"
case $B in
*asan* | *tsan*) tap_skip "the interposer of a sanitizer build is not preloadable" ;;
*) tap_ok "the workload had it preloaded" contains "$log" "preload=$P/lib/gpupool/libgpuslice.so" ;;
esac
gpd_stop

tap_ok "make uninstall" inst uninstall
left=$(find "$P" ! -type d | sort)
tap_is "uninstall leaves no file in the prefix" "$left" ""
tap_done
