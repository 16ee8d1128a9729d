#!/bin/sh
# tests/sim/test-cli.sh — gpupool-sim end to end on the small fixtures in
# tests/sim/fixtures: the fgd table and JSON, the grid against hand-made
# published results (means, differences, noise), replay and plan (table, JSON,
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
"$sim" plan --quiet --p95-target 60 --price-per-gpu 25000 --currency EUR --out "$tmp/money" $rp >/dev/null
tap_ok "plan puts a price on the GPUs pooling saves" grep -Eq "fewer GPUs than static ownership for the same wait: EUR [0-9,]+ not spent" "$tmp/money.html"
tap_ok "plan says what each mode means" sh -c "grep -q 'Each project owns a fixed set of GPUs' '$tmp/money.html' && grep -q 'several workloads share one GPU' '$tmp/money.html'"
tap_ok "plan draws the waiting times when jobs wait" grep -q 'How long jobs wait to start' "$tmp/money.html"
# A pool of one node and two projects (what `gpupool export` gives on a
# one-node pool): static ownership cannot be by whole node, so each project
# owns GPUs of the shared node, and no project's jobs are all rejected.
printf 'sn,cpu_milli,memory_mib,gpu,model\nnode-a,64000,262144,8,A100\n' >"$tmp/one-n.csv"
printf 'name,parent,deserved_gpus,weight,limit_gpus,priority\nresearch,,,,,\nnlp,research,4,1,,\ncv,research,4,1,,\n' >"$tmp/one-pr.csv"
{
    echo 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,project,kind,tasks'
    for i in 0 1 2 3 4 5 6 7 8 9; do
        echo "n$i,4000,16384,2,1000,$((i * 600)),$((i * 600 + 3600)),nlp,train,1"
        echo "c$i,4000,16384,1,1000,$((i * 600)),$((i * 600 + 3600)),cv,train,1"
    done
} >"$tmp/one-p.csv"
one="--nodes $tmp/one-n.csv --pods $tmp/one-p.csv --projects $tmp/one-pr.csv"
"$sim" replay --quiet --mode static $one >"$tmp/one-r"
tap_ok "one node, two projects: static rejects no project's jobs" sh -c "awk '/^static / { exit !(\$11 == 0) }' '$tmp/one-r' && grep -q '^static ' '$tmp/one-r'"
tap_ok "and says that the projects own GPUs of a shared node" grep -q 'each project owns GPUs of shared nodes' "$tmp/one-r"
tap_ok "each project holds GPUs" sh -c "awk '/^  (nlp|cv) / { if (\$3 + 0 == 0) bad = 1; n++ } END { exit bad || n != 2 }' '$tmp/one-r'"
"$sim" plan --quiet $one >"$tmp/one-plan"
tap_ok "plan on one node says \"1 node\"" grep -q 'on 1 node (8 GPUs)' "$tmp/one-plan"
tap_ok "and never \"1 nodes\"" sh -c "! grep -q '[^0-9]1 nodes' '$tmp/one-plan'"
# Two one-GPU jobs one after the other on eight GPUs: nobody waits, and
# the pool needs one GPU.
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,project\nq0,1000,1024,1,1000,0,100,nlp\nq1,1000,1024,1,1000,200,300,nlp\n' >"$tmp/calm.csv"
"$sim" plan --quiet --out "$tmp/calm" --nodes $fx/replay-nodes.csv --pods "$tmp/calm.csv" --projects $fx/replay-projects.csv >/dev/null
tap_ok "no chart of waiting times when nobody waits, a sentence instead" sh -c "! grep -q 'How long jobs wait' '$tmp/calm.html' && grep -q 'started as soon as they arrived' '$tmp/calm.html'"
tap_ok "the allocation axis fits what work held, not the hardware" python3 -c '
import re, sys
h = open(sys.argv[1]).read()
sec = h.split("GPUs held by work over time")[1].split("</svg>")[0]
ticks = [float(t) for t in re.findall(r"text-anchor=.end. class=.t.>([0-9.e+]+)<", sec)]
assert ticks and max(ticks) <= 1, ticks
' "$tmp/calm.html"
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

# The grid on a traces folder of its own: the tiny fixture as workload
# "tiny", and published results of two seeds for bestfit (hand-made:
# 100% arrived 50 and 52, mean 51; 130% 60 and 64, mean 62).
mkdir -p "$tmp/tr/alibaba-gpu-2023" "$tmp/exp"
cp $fx/nodes.csv "$tmp/tr/alibaba-gpu-2023/openb_node_list_gpu_node.csv"
cp $fx/pods.csv "$tmp/tr/alibaba-gpu-2023/openb_pod_list_tiny.csv"
printf 'workload,sc_policy,seed,100,130\nopenb_pod_list_tiny,05-BestFit,42,50,60\nopenb_pod_list_tiny,05-BestFit,43,52,64\nopenb_pod_list_other,05-BestFit,42,1,1\nopenb_pod_list_tiny,06-FGD,42,99,99\n' > "$tmp/exp/analysis_allo_discrete.csv"
grid="--grid --traces $tmp/tr --workloads tiny --policies bestfit,gpupool --seeds 1-3 --jobs 2 --expected $tmp/exp"
for s in 1 2 3; do "$sim" fgd --nodes $fx/nodes.csv --pods $fx/pods.csv --policy bestfit --seed $s --json > "$tmp/g$s.json"; done
tap_ok "grid: our mean is the mean of the single runs; published mean, difference and noise from its rows" sh -c "'$sim' fgd $grid --json > '$tmp/gj' 2>/dev/null && python3 -c '
import json,sys,statistics as st
t=sys.argv[1]
rows={r[\"policy\"]:r for r in json.load(open(t+\"/gj\"))[\"rows\"]}
runs=[json.load(open(t+\"/g%d.json\"%s))[\"rows\"] for s in (1,2,3)]
b=rows[\"bestfit\"]
for x in (100,130):
    ours=[r[x][\"allocation\"] for r in runs if r[x][\"allocation\"] is not None]
    pub=[50,52] if x==100 else [60,64]
    assert abs(b[\"published%d\"%x]-st.mean(pub))<1e-9, b
    if not ours:
        assert b[\"ours%d\"%x] is None and b[\"diff%d\"%x] is None and b[\"two_se%d\"%x] is None, b
        continue
    assert abs(b[\"ours%d\"%x]-st.mean(ours))<1e-9, (b, ours)
    assert abs(b[\"diff%d\"%x]-(st.mean(ours)-st.mean(pub)))<1e-9, b
    se=2*(st.variance(ours)/3+st.variance(pub)/2)**0.5
    assert abs(b[\"two_se%d\"%x]-se)<1e-9, (b, se)
assert b[\"seeds\"]==3 and \"published100\" not in rows[\"gpupool\"]
assert b[\"ours100\"] is not None and b[\"ours130\"] is None  # 7 pods never come near 130%
' '$tmp'"
tap_ok "grid prints a table with the comparison and the run count" sh -c "'$sim' fgd $grid 2>/dev/null > '$tmp/gt' && grep -q '^workload .*pub130 .*2se130' '$tmp/gt' && grep -q '^tiny  *bestfit .* 51.00  *62.00 ' '$tmp/gt' && grep -q '^grid: 6 runs in' '$tmp/gt'"
tap_ok "grid without a published row shows our means only, - where no run came near" sh -c "awk '\$2==\"gpupool\" && NF==4 && \$4==\"-\" {f=1} END {exit !f}' '$tmp/gt'"
tap_ok "grid: a missing pod list is an error naming it" sh -c "'$sim' fgd --grid --traces $tmp/tr --workloads nosuch --seeds 1-1 2>&1 >/dev/null | grep -q 'openb_pod_list_nosuch.csv'"

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
