#!/bin/sh
# tests/sim/test-cli.sh — gpupool-sim end to end on the small fixtures in
# tests/sim/fixtures: the fgd table and JSON, replay and plan (table, JSON,
# the three report files), bad input (a clear error naming the file, line and
# field, a non-zero exit, nothing on standard output and no report written),
# and, when ../shared/traces is present, runs on the published default pod
# list.
. tests/lib/tap.sh
build=${GP_BUILD:-build}
sim=$build/gpupool-sim
fx=tests/sim/fixtures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tap_ok "fgd prints a table" sh -c "'$sim' fgd --nodes $fx/nodes.csv --pods $fx/pods.csv --policy bestfit --seed 1 > '$tmp/t' && grep -q '^ *130 ' '$tmp/t'"
tap_ok "fgd --json writes one object with 131 rows" sh -c "'$sim' fgd --nodes $fx/nodes.csv --pods $fx/pods.csv --policy fgd --seed 1 --json > '$tmp/j' && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d[\"rows\"])==131 and d[\"policy\"]==\"fgd\" and \"seconds\" in d' '$tmp/j'"
tap_ok "same seed, same output" sh -c "'$sim' fgd --nodes $fx/nodes.csv --pods $fx/pods.csv --policy random --seed 7 | tail -n +2 > '$tmp/a'; '$sim' fgd --nodes $fx/nodes.csv --pods $fx/pods.csv --policy random --seed 7 | tail -n +2 > '$tmp/b'; cmp -s '$tmp/a' '$tmp/b'"

printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,10,2,500\n' > "$tmp/bad.csv"
"$sim" fgd --nodes $fx/nodes.csv --pods "$tmp/bad.csv" > "$tmp/out" 2> "$tmp/err"
rc=$?
tap_ok "bad pod row exits non-zero" test "$rc" != 0
tap_ok "error names file, line and field" grep -q "bad.csv:2: field gpu_milli" "$tmp/err"
tap_ok "nothing half-written on stdout" test ! -s "$tmp/out"

printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour\np0,1,1,0,0,red\n' > "$tmp/col.csv"
tap_ok "unknown column is rejected" sh -c "'$sim' fgd --nodes $fx/nodes.csv --pods '$tmp/col.csv' 2>&1 | grep -q \"col.csv:1: unknown column 'colour'\""
tap_ok "missing file is an error" sh -c "! '$sim' fgd --nodes $tmp/none.csv --pods $fx/pods.csv 2>/dev/null"

rp="--nodes $fx/replay-nodes.csv --pods $fx/replay-pods.csv --projects $fx/replay-projects.csv"
tap_ok "replay prints the three modes" sh -c "'$sim' replay --quiet $rp > '$tmp/r' && grep -q '^static ' '$tmp/r' && grep -q '^pooled ' '$tmp/r' && grep -q '^pooled-fractional ' '$tmp/r'"
tap_ok "replay --json: per-mode delays, preemptions and project shares" sh -c "'$sim' replay --quiet --mode pooled --json $rp > '$tmp/rj' && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); m=d[\"modes\"]; assert len(m)==1 and m[0][\"mode\"]==\"pooled\"; assert m[0][\"preemptions\"][\"reclaim\"]>0; assert [p[\"project\"] for p in m[0][\"projects\"]]==[\"nlp\",\"vision\"]' '$tmp/rj'"
tap_ok "plan writes text, JSON and HTML" sh -c "'$sim' plan --quiet --p95-target 60 --out '$tmp/plan' $rp > '$tmp/p' && grep -q 'static needs [0-9]* GPUs, pooled needs' '$tmp/plan.txt' && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert all(m[\"found\"] for m in d[\"modes\"])' '$tmp/plan.json' && grep -q '<svg' '$tmp/plan.html'"
tap_ok "plan's HTML needs no network" sh -c "! grep -Eq 'http|<script|src=' '$tmp/plan.html'"
tap_ok "plan shows progress on stderr" sh -c "'$sim' plan --p95-target 60 $rp 2>&1 >/dev/null | grep -q 'plan pooled: .* nodes'"

printf 'name,parent,deserved_gpus\nnlp,,2\nvision,org,1\n' > "$tmp/proj.csv"
"$sim" plan --nodes $fx/replay-nodes.csv --pods $fx/replay-pods.csv --projects "$tmp/proj.csv" --out "$tmp/badplan" > "$tmp/out" 2> "$tmp/err"
rc=$?
tap_ok "bad projects file exits non-zero" test "$rc" != 0
tap_ok "its error names file, line and field" grep -q "proj.csv:3: field parent" "$tmp/err"
tap_ok "no report half-written" sh -c "test ! -s '$tmp/out' && ! ls '$tmp'/badplan* 2>/dev/null"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,project\np0,1,1,0,0,5,9,nobody\n' > "$tmp/np.csv"
tap_ok "unknown project in the pod list is an error" sh -c "'$sim' replay --nodes $fx/replay-nodes.csv --pods '$tmp/np.csv' --projects $fx/replay-projects.csv 2>&1 | grep -q \"np.csv:2: field project: 'nobody'\""
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\np0,1,1,0,0,5\n' > "$tmp/nodel.csv"
tap_ok "replay needs deletion times" sh -c "'$sim' replay --nodes $fx/nodes.csv --pods '$tmp/nodel.csv' 2>&1 | grep -q 'nodel.csv:2: field deletion_time: empty'"
tap_ok "unknown mode is a usage error" sh -c "'$sim' replay $rp --mode shared 2>/dev/null; test \$? = 2"

traces=../shared/traces/alibaba-gpu-2023
if [ -f "$traces/openb_pod_list_default.csv" ]; then
    tap_ok "published default pod list runs" sh -c "'$sim' fgd --nodes $traces/openb_node_list_gpu_node.csv --pods $traces/openb_pod_list_default.csv --policy bestfit --seed 42 --json > '$tmp/d' && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); a=d[\"rows\"][130][\"allocation\"]; assert 90 < a < 97, a' '$tmp/d'"
    tap_ok "published default pod list replays in virtual time" sh -c "'$sim' replay --quiet --mode pooled --scale 0.05 --json --nodes $traces/openb_node_list_gpu_node.csv --pods $traces/openb_pod_list_default.csv > '$tmp/o' && python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))[\"modes\"][0]; assert m[\"jobs\"]==8152 and m[\"finished\"]+m[\"unserved\"]+m[\"rejected\"]==8152, m' '$tmp/o'"
else
    for t in "published default pod list runs" "published default pod list replays in virtual time"; do
        tap_n=$((tap_n + 1))
        echo "ok $tap_n - $t # SKIP ../shared/traces absent"
    done
fi
tap_done
