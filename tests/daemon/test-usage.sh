#!/bin/sh
# Usage accounting end to end: a daemon on a fake NVML whose GPU is 50 % busy
# runs a one-GPU task; the usage API, `gpupool usage` (table and CSV), the
# USED column of `gpupool queue list` and /metrics all say that half of what
# was allocated was used, and the figures survive a restart. Then the same on
# emulated GPUs, which say that nothing can be measured.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/usage
mkdir -p "$D"
GPUPOOL_FAKE_GPUS=2 GPUPOOL_FAKE_BUSY=50 GPUPOOL_FAKE_OTHER_MEMORY=1073741824
export GPUPOOL_FAKE_GPUS GPUPOOL_FAKE_BUSY GPUPOOL_FAKE_OTHER_MEMORY
CFG="state_dir=$D/tasks,nvml=$B/fake/libnvidia-ml.so.1,interposer=$TMP/none.so,cgroup=off"
tap_ok "gpupoold starts on the fake NVML" gpd_start "$D" --period 300ms --poll 200ms \
    --usage-period 200ms --executor-config "$CFG"
$GP queue create research --deserved 2 >/dev/null && $GP queue create nlp --parent research --deserved 1 >/dev/null &&
    $GP queue create cv --parent research --deserved 1 >/dev/null
$GP submit --project nlp --gpu 1 -- sleep 120 >/dev/null
$GP submit --project cv --gpu 1 -- sleep 120 >/dev/null
tap_ok "the tasks run" wait_until 30 has_count 2 running

usage() { curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/api/v1/usage?$1"; }
not_contains() { ! contains "$@"; }
nlp_counted() { usage "by=queue&from=1h" | grep -q '"key":"nlp"'; }
tap_ok "its GPU-hours are recorded" wait_until 30 nlp_counted
# More samples, so that the figures are not all from one, and enough
# GPU-hours that the CSV's three decimals hold them (on a loaded machine the
# samples come late: a fixed pause let a department's line print 0.000).
research_hours() { # AT_LEAST: research's allocated GPU-hours in the CSV
    $GP usage --by queue --from 1h --csv | awk -F, -v m="$1" '$3 == "research" && $5 >= m { ok = 1 }
        END { exit !ok }'
}
tap_ok "research has been allocated a few GPU-seconds" wait_until 60 research_hours 0.002
u=$(usage "by=queue&from=1h")
tap_ok "half of what nlp was allocated was used" contains "$u" '"key":"nlp"[^}]*"used_percent":50\.0'
tap_ok "research, its department, the same" contains "$u" '"key":"research"[^}]*"used_percent":50\.0'
tap_ok "queues name their parent" contains "$u" '"key":"nlp"[^}]*"parent":"research"'
tap_ok "the answer says where figures come from" contains "$u" '"note":"NVML from'
tap_ok "by node" contains "$(usage 'by=node&from=1h')" '"used_percent":50\.0'
tap_ok "by user" contains "$(usage 'by=user&from=1h')" '"used_percent":50\.0'

q=$($GP queue list)
tap_ok "queue list shows USED beside ALLOCATED" contains "$q" 'ALLOCATED *USED'
tap_ok "nlp keeps half a GPU busy" contains "$q" '^ *nlp .* 1 *0\.50 '
csv=$($GP usage --by queue --from 1h --csv)
tap_ok "usage --csv has a header for spreadsheets" contains "$csv" '^from,to,queue,parent,allocated_gpu_hours,used_gpu_hours,idle_gpu_hours,used_percent'
tap_ok "usage --csv has nlp at 50 %, in research" contains "$csv" ',nlp,research,[0-9.]*,[0-9.]*,[0-9.]*,50\.000,'
# A department's line includes its projects': the lines without a parent add
# up to what the projects (lines no other line names as parent) add up to.
sums() { # COLUMN: the sum of the top-level lines and of the projects'
    printf '%s\n' "$csv" | awk -F, -v c="$1" 'NR > 1 { v[$3] = $c; p[$3] = $4; isp[$4] = 1 }
        END { for (k in v) { if (p[k] == "") top += v[k]; if (!(k in isp)) leaf += v[k] }
              printf "%.6f %.6f\n", top, leaf }'
}
same_sum() { # TOLERANCE
    set -- "$1" $(sums "$2")
    awk -v t="$1" -v a="$2" -v b="$3" 'BEGIN { d = a - b; exit !(a > 0 && d < t && -d < t) }'
}
tap_ok "allocated GPU-hours: the departments' lines add up to the projects'" same_sum 0.0021 5
# A price high enough for a few seconds of two GPUs to cost more than a cent.
csv=$($GP usage --by queue --from 1h --csv --price 1000)
tap_ok "--price adds a cost column" contains "$csv" '^from,to,queue,parent,.*,lent_gpu_hours,returned_gpu_hours,cost$'
# (allocated is printed to 3 decimals, the cost from the exact figure)
cost_ok() { printf '%s\n' "$csv" | awk -F, '$3 == "nlp" { c = $12; d = $12 - $5 * 1000; found = 1 } END { exit !(found && c > 0 && d < 0.51 && -d < 0.51) }'; }
tap_ok "the cost is the allocated GPU-hours at the price" cost_ok
tap_ok "costs: the departments' lines add up to the projects'" same_sum 0.021 12
out=$($GP usage --price cheap 2>&1)
tap_is "a bad price is refused, naming --price" "$?:$(printf '%s' "$out" | grep -c -- '--price: "cheap"')" "2:1"
tap_ok "the table shows the parent and the cost" contains "$($GP usage --from 1h --price 1000)" '^nlp  *research .* [0-9]*\.[0-9][0-9]$'
tap_ok "usage prints a table" contains "$($GP usage --from 1h)" '^nlp '

m=$(curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/metrics")
tap_ok "metrics: the GPU's busy ratio" contains "$m" '^gpupool_gpu_busy_ratio{node="[^"]*",gpu="0".*} 0\.5$'
tap_ok "metrics: the queue's busy ratio" contains "$m" '^gpupool_queue_busy_ratio{queue="nlp"} 0\.5$'

tap_is "by=project is refused, naming the field" "$(api GET '/api/v1/usage?by=project' | grep -o '"field":"by"')" '"field":"by"'
tap_is "a malformed time is refused" "$(api GET '/api/v1/usage?from=yesterday' | grep -o '"field":"from".* 400$' | cut -c1-14)" '"field":"from"'
tap_is "steps below a minute are refused" "$(api GET '/api/v1/usage?step=5s' | grep -o ' 400$')" ' 400'

before=$(usage "by=queue&from=1h&step=1h" | grep -o '"key":"nlp"[^}]*"allocated_gpu_hours":[0-9.e-]*' | sed 's/.*://')
gpd_stop
tap_ok "gpupoold restarts" gpd_start "$D" --period 300ms --poll 200ms --usage-period 1h --executor-config "$CFG"
after=$(usage "by=queue&from=1h&step=1h" | grep -o '"key":"nlp"[^}]*"allocated_gpu_hours":[0-9.e-]*' | sed 's/.*://')
tap_ok "the recorded hours survive a restart" [ -n "$after" ] && awk "BEGIN{exit !($after >= $before && $before > 0)}"
gpd_stop

E=$TMP/emulated
mkdir -p "$E"
printf 'node = local\ndomain = local\ngpu = H100 80G 2\n' >"$TMP/inv.conf"
tap_ok "gpupoold starts on emulated GPUs" gpd_start "$E" --period 300ms --poll 200ms \
    --usage-period 200ms --executor-config "state_dir=$E/tasks,inventory=$TMP/inv.conf,interposer=$TMP/none.so,cgroup=off"
$GP queue create research --deserved 1 >/dev/null && $GP queue create nlp --parent research >/dev/null
$GP submit --project nlp --gpu 1 -- sleep 120 >/dev/null
tap_ok "the task runs" wait_until 30 has_count 1 running nlp
tap_ok "its GPU-hours are recorded" wait_until 30 nlp_counted
u=$(usage "by=queue&from=1h")
tap_ok "used is unknown, not zero" contains "$u" '"key":"nlp"[^}]*"used_gpu_hours":null'
tap_ok "and the answer says why" contains "$u" '"note":"EMULATED'
tap_ok "queue list shows - for used" contains "$($GP queue list)" '^ *nlp .* 1 *- '

# A department admin sees by user only the users of its department's
# projects (it once saw every user of the pool).
$GP queue create ops >/dev/null && $GP queue create infra --parent ops >/dev/null
OT=$($GP token create --user oscar --role researcher --scope infra --unix-user "$(id -un)" | head -1)
CT=$($GP token create --user carol --role dept-admin --scope research | head -1)
out=$(GPUPOOL_TOKEN=$OT $GP submit --project infra --gpu 1 -- sleep 120 2>&1) || echo "# $out"
oscar_counted() { usage "by=user&from=1h" | grep -q '"key":"oscar"'; }
tap_ok "another department's user's GPU-hours are recorded" wait_until 30 oscar_counted
u=$(GPUPOOL_TOKEN=$CT && usage "by=user&from=1h")
tap_ok "a department admin sees its projects' users by user" contains "$u" '"key":"'
tap_ok "and not another department's" not_contains "$u" '"key":"oscar"'
tap_done
