#!/bin/sh
# tests/sim/test-api-only.sh — the simulator reaches the engine through its
# public API only: no source under src/sim includes an engine-internal header,
# and no simulator object file refers to an internal gp__ symbol.
. tests/lib/tap.sh
build=${GP_BUILD:-build}

internal=$(grep -lE '#include +"engine/(internal|placement|map)\.h"' src/sim/*.c src/sim/*.h 2>/dev/null)
tap_is "src/sim includes no engine-internal header" "$internal" ""

calls=$(grep -n 'gp__' src/sim/*.c src/sim/*.h 2>/dev/null)
tap_is "src/sim source names no gp__ symbol" "$calls" ""

objs=$(ls "$build"/obj/src/sim/*.o 2>/dev/null)
if [ -z "$objs" ]; then
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - simulator objects refer to no gp__ symbol # SKIP not built"
else
    undef=$(nm -u $objs | grep -E ' gp__' | sort -u)
    tap_is "simulator objects refer to no gp__ symbol" "$undef" ""
fi
tap_done
