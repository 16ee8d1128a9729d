#!/bin/sh
# The copies of gpupoold's metric names: the Grafana dashboard in
# contrib/grafana names only metrics that gpupoold exports (every gpupool_*
# name in its queries is a metric of /metrics, a histogram's _bucket, _sum
# and _count included; every panel has a query; the file is valid JSON), and
# docs/api.md's Metrics section names every metric exported and no other (it
# lacked gpupool_start_wait_seconds).
. tests/lib/tap.sh
. tests/daemon/lib.sh

DASH=contrib/grafana/gpupool-dashboard.json
D=$TMP/grafana
mkdir -p "$D"
tap_ok "gpupoold starts" gpd_start "$D" --usage-period 200ms
# The families of the last usage sample are there once one was taken.
scrape() {
    curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/metrics" >"$TMP/metrics" &&
        grep -q '^# TYPE gpupool_gpu_busy_ratio ' "$TMP/metrics"
}
tap_ok "a usage sample is taken" wait_until 30 scrape
sed -n 's/^# TYPE \([a-z_0-9]*\) histogram$/\1_bucket\n\1_sum\n\1_count/p; s/^# TYPE \([a-z_0-9]*\) .*/\1/p' \
    "$TMP/metrics" | sort -u >"$TMP/exported"
tap_ok "gpupoold exports metrics" test -s "$TMP/exported"

# missing NAMES_FILE: prints the names not exported.
missing() {
    sort -u "$1" | comm -23 - "$TMP/exported"
}
grep -o '"expr": "[^"]*"' "$DASH" | grep -o 'gpupool_[a-z0-9_]*' >"$TMP/named"
tap_ok "the dashboard queries gpupool metrics" test -s "$TMP/named"
tap_is "every metric the dashboard names is exported" "$(missing "$TMP/named" | tr '\n' ' ')" ""
echo gpupool_no_such_metric >"$TMP/bogus"
tap_is "a name gpupoold does not export would be caught" "$(missing "$TMP/bogus")" gpupool_no_such_metric
# The doc writes families in brace form, gpupool_queue_{deserved,used}_gpus{queue}:
# a trailing {...} is the labels, one inside a name its alternatives.
doc=$(sed -n '/^## Metrics$/,/^## /p' docs/api.md | python3 -c '
import re, sys
names = set()
for m in re.finditer(r"`(gpupool_[a-z0-9_{},]*)`", sys.stdin.read()):
    n = re.sub(r"\{[a-z_,]*\}$", "", m.group(1))
    parts = [n]
    while any("{" in p for p in parts):
        out = []
        for p in parts:
            g = re.search(r"\{([a-z0-9_,]*)\}", p)
            out += [p[:g.start()] + alt + p[g.end():] for alt in g.group(1).split(",")] if g else [p]
        parts = out
    names.update(parts)
print("\n".join(sorted(names)))
')
families=$(sed -n 's/^# TYPE \([a-z_0-9]*\) .*/\1/p' "$TMP/metrics" | sort -u)
tap_ok "docs/api.md names every metric gpupoold exports, and no other" same_lines "$doc" "$families"
tap_ok "the dashboard is valid JSON with a query in every panel" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["panels"] and all(p["targets"] and all(t["expr"] for t in p["targets"]) for p in d["panels"])
' "$DASH"
tap_done
