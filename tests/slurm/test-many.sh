#!/bin/sh
# 1,000 short workloads through the pool on a real Slurm cluster, nothing
# lost: every one succeeds, each ran as exactly one Slurm job (by the job
# headers in the logs, and by Slurm's accounting where the cluster has it),
# and each left its own output in its log.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh

N=${GP_SLURM_MANY:-1000}
D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts on the slurm executor" sx_start "$D"
$GP queue create M --deserved 16 >/dev/null && $GP queue create m1 --parent M --deserved 16 >/dev/null
tap_is "queues created" "$?" 0

i=0
bad=0
while [ $i -lt "$N" ]; do
    i=$((i + 1))
    if [ $((i % 4)) = 0 ]; then
        req='"gpu":"1"'
    else
        req='"cpu":"1"'
    fi
    out=$(api POST /api/v1/workloads "{\"project\":\"m1\",$req,\"command\":[\"sh\",\"-c\",\"echo done $i\"]}")
    case "$out" in *" 201" | *" 200") ;; *) bad=$((bad + 1)) ;; esac
done
tap_is "$N workloads submitted (a quarter with a GPU each)" "$bad" 0
all_done() { [ "$(count_state succeeded m1)" -ge "$N" ] || [ "$(count_state active m1)" = 0 ]; }
tap_ok "all of them end" wait_until 400 all_done
tap_is "every one succeeded" "$(count_state succeeded m1)" "$N"
tap_is "none failed" "$(count_state failed m1)" 0
# Why, if any did: the last events of the first failed ones.
curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/api/v1/workloads?state=failed&project=m1&limit=3" |
    grep -o '"id": *[0-9]*' | grep -o '[0-9]*$' | while read -r id; do
    $GP describe "$id" | tail -2 | sed "s/^/# $id: /"
done
# Which Slurm jobs ran, from a source complete once the jobs have ended:
# each job writes gpupool's header, with its job id, into its workload's log
# before the command runs (squeue forgets ended jobs after MinJobAge, and
# under load the first have gone before the last end).
ran=$(cat "$D"/logs/*/task-*.log | sed -n 's/^=== gpupool: workload \([0-9]*\) task 0 attempt \([0-9]*\) started .* as Slurm job \([0-9]*\).*/\1 \2 \3/p')
tap_is "Slurm ran exactly one job per workload" "$(echo "$ran" | cut -d' ' -f1 | sort -u | wc -l) $(echo "$ran" | cut -d' ' -f3 | sort -u | wc -l)" "$N $N"
missing=$(seq 1 "$N" | grep -vxF "$(echo "$ran" | cut -d' ' -f1 | sort -u)" | head -5 | tr '\n' ' ')
[ -n "$missing" ] && echo "# workloads with no job header in their log: $missing"
# A second attempt is right only where Slurm could not launch the first
# (JobLaunchFailure: its script never ran, so it wrote no header); a
# workload's command never runs twice.
tap_is "and none ran twice" "$(echo "$ran" | wc -l)" "$N"
again=$(echo "$ran" | grep -v ' 1 [0-9]*$' | head -3 | tr '\n' ' ')
[ -n "$again" ] && echo "# a later attempt ran (workload attempt job): $again"
if [ "$GP_SLURM_ACCOUNTING" = 1 ]; then
    # Slurm's accounting agrees once slurmdbd has every record: a job run
    # twice would be one record too many.
    acct() { sacct -X -n -a -S now-1days -o JobName%80 | grep -c " *gp-$SX_TAG\.w"; }
    all_recorded() { [ "$(acct)" -ge "$N" ]; }
    tap_ok "slurmdbd records every job" wait_until 120 all_recorded
    tap_is "and one job per workload" "$(acct)" "$N"
fi
ok_logs=0
for id in 1 250 500 750 $N; do
    $GP logs "$id" | grep -q "^done $id$" && ok_logs=$((ok_logs + 1))
done
tap_is "sampled logs hold their own workload's output" "$ok_logs" 5
tap_done
