#!/bin/sh
# The sample trace a clone carries (examples/traces/openb-sample): its source
# and licence are beside it, the first gpupool-sim command of docs/simulator.md
# runs on it as written, and replay and plan give every job a place on it.
. tests/lib/tap.sh
B=${GP_BUILD:-build}
S=examples/traces/openb-sample
TMP=$(mktemp -d /tmp/gpupool-sample.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

for f in README.md LICENSE nodes.csv pods.csv; do tap_ok "the sample has $f" test -s "$S/$f"; done
tap_ok "its README names its source" grep -q 'github.com/alibaba/clusterdata' "$S/README.md"
tap_ok "its LICENSE is the Apache License 2.0" grep -q 'Apache License' "$S/LICENSE"
tap_is "500 pods" "$(($(wc -l <"$S/pods.csv") - 1))" 500

# The first command of the document, its continuation lines joined.
cmd=$(awk '/^    build\/gpupool-sim / { on = 1 } on { sub(/^    /, ""); line = line $0; if ($0 !~ /\\$/) { print line; exit } sub(/\\$/, "", line) }' docs/simulator.md)
echo "# first command: $cmd"
tap_ok "docs/simulator.md's first command reads the sample" sh -c "case '$cmd' in *'$S/'*) exit 0 ;; esac; exit 1"
sh -c "$(echo "$cmd" | sed "s|^build/|$B/|")" >"$TMP/out" 2>"$TMP/err"
tap_is "and runs as written" "$?" 0
tap_ok "printing the experiment's rows" grep -q '^ *130 ' "$TMP/out"

"$B/gpupool-sim" replay --nodes "$S/nodes.csv" --pods "$S/pods.csv" --mode all --quiet >"$TMP/replay"
tap_is "replay on the sample" "$?" 0
tap_ok "serves every job in every mode" sh -c "awk '/^(static|pooled|pooled-fractional) / { if (\$10 != 0 || \$11 != 0) bad = 1; n++ } END { exit bad || n != 3 }' '$TMP/replay'"
tap_done
