#!/bin/sh
# The Grafana dashboard in contrib/grafana names only metrics that gpupoold
# exports: every gpupool_* name in its queries is a metric of /metrics (a
# histogram's _bucket, _sum and _count included), every panel has a query,
# and the file is valid JSON.
. tests/lib/tap.sh
. tests/daemon/lib.sh

DASH=contrib/grafana/gpupool-dashboard.json
D=$TMP/grafana
mkdir -p "$D"
tap_ok "gpupoold starts" gpd_start "$D" --usage-period 200ms
sleep 0.5
curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/metrics" >"$TMP/metrics"
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
tap_ok "the dashboard is valid JSON with a query in every panel" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["panels"] and all(p["targets"] and all(t["expr"] for t in p["targets"]) for p in d["panels"])
' "$DASH"
tap_done
