#!/bin/sh
# What a person types into gpupool, checked end to end against a real daemon:
# every number goes through one strict parser whose message repeats what was
# typed; gpupool without a command fails with its usage; whoami --json prints
# JSON; gpupool-sim CMD --help works; a project with workloads cannot become
# a department; the over-commit warning speaks in GPUs; a queue's
# min_runtime_max is set on create and update and survives a restart; its
# --default-cpu is bounded as the daemon bounds it; what
# no state of the pool could run is refused at submit; the
# daemon takes usage_half_life from its flags and configuration.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts with a usage half-life" gpd_start "$D" --period 300ms --usage-half-life 1h

# typed CMD... EXPECTED_RC PATTERN: runs gpupool, checks its exit code and
# that stderr matches PATTERN.
typed() {
    want_rc=$1
    pattern=$2
    shift 2
    err=$($GP "$@" 2>&1 >/dev/null)
    rc=$?
    [ "$rc" = "$want_rc" ] && contains "$err" "$pattern"
}

tap_ok "--priority abc is refused, repeating it" \
    typed 2 '\-\-priority: "abc" is not a whole number' submit --project p --priority abc -- true
tap_ok "--gang abc is refused, repeating it" \
    typed 2 '\-\-gang: "abc" is not a whole number' submit --project p --gang abc -- true
tap_ok "--gpu -1 is refused, repeating it" \
    typed 2 '\-\-gpu: "-1" is not a number of GPUs' submit --project p --gpu -1 -- true
tap_ok "--gpu 1.5 is refused" typed 2 'neither a fraction' submit --project p --gpu 1.5 -- true
# A range is refused in the daemon's words (gp_field_out_of_range): the CLI
# said "0 GPUs is outside 0.001 to 16" where the daemon says "must be above 0".
tap_ok "--gpu 0 is refused as the daemon refuses it" \
    typed 2 '\-\-gpu: must be above 0$' submit --project p --gpu 0 -- true
tap_ok "--gang 0 too" typed 2 '\-\-gang: must be above 0$' submit --project p --gang 0 -- true
tap_ok "--memory 12Q is refused" typed 2 '"12Q" is not a size' submit --project p --memory 12Q -- true
tap_ok "--grace soon is refused" typed 2 '"soon" is not a duration' submit --project p --grace soon -- true
# A size's and a duration's range are checked before sending, as a number's.
tap_ok "--grace 25h is refused, naming the range" \
    typed 2 '\-\-grace: 1d1h is outside 0s to 1d' submit --project p --grace 25h -- true
tap_ok "--gpu-memory 0 is refused" typed 2 '\-\-gpu-memory: must be above 0' submit --project p --gpu-memory 0 -- true
tap_ok "queue --weight 1.5 is refused" typed 2 '\-\-weight: "1.5"' queue create x --weight 1.5
tap_ok "queue --deserved two is refused" typed 2 '\-\-deserved: "two"' queue create x --deserved two
tap_ok "describe abc is refused" typed 2 'workload id: "abc"' describe abc
tap_ok "list --limit 0 is refused" typed 2 '\-\-limit: 0 is outside' list --limit 0
tap_ok "gpupool without a command fails with its usage" typed 2 'usage: gpupool'
tap_ok "whoami --json prints JSON" sh -c "$GP whoami --json | grep -q '\"role\": *\"admin\"'"
tap_ok "gpupool-sim plan --help works" sh -c "$B/gpupool-sim plan --help | grep -q 'gpupool-sim plan'"

$GP queue create dep --deserved 4 >/dev/null && $GP queue create p1 --parent dep --deserved 4 >/dev/null
tap_is "queues created" "$?" 0
$GP submit --project p1 --gpu 1 -- sleep 60 >/dev/null
tap_ok "a project with workloads cannot become a department" \
    typed 7 'p1 is a project with workloads' queue create sub --parent p1
tap_ok "the project is still a project" sh -c "$GP queue list --json | grep -q '\"name\": \"sub\"' && exit 1 || exit 0"

tap_ok "a gang of 9 GPUs on the 8-GPU pool is refused: it could never run" \
    typed 6 'cannot run on this pool: even with every node empty, only 8 of its 9 tasks' \
    submit --project p1 --gpu 1 --gang 9 -- true
$GP queue create small --parent dep --limit 1 >/dev/null
tap_ok "2 GPUs in a project limited to 1 is refused, naming the limit" \
    typed 6 'cannot run on this pool: it needs 2 GPUs at once, more than the limit of 1 GPU of project small' \
    submit --project small --gpu 2 -- true

$GP queue create big --deserved 100 >/dev/null
tap_ok "the over-commit warning speaks in GPUs (after the next cycle)" \
    wait_until 20 sh -c "$GP queue list | grep -q 'warning: deserved gpu quotas of the queues under the pool add up to 104 GPUs, more than the 8 GPUs'"

$GP queue create q2 --min-runtime-max 1m >/dev/null
tap_ok "min_runtime_max set on create" sh -c "$GP queue list --json | grep -A50 '\"name\": \"q2\"' | grep -q '\"min_runtime_max\": 60'"
$GP queue set q2 --min-runtime-max 2m >/dev/null
tap_ok "min_runtime_max set on update" sh -c "$GP queue list --json | grep -A50 '\"name\": \"q2\"' | grep -q '\"min_runtime_max\": 120'"
# The CLI's bound on --default-cpu is the daemon's, 1000000 cores per task as
# a submission's --cpu: it was 1000 (a count of milli-CPUs taken for cores).
tap_ok "queue --default-cpu 2000 is taken" $GP queue set q2 --default-cpu 2000
tap_ok "and stored" sh -c "$GP queue list --json | grep -A50 '\"name\": \"q2\"' | grep -q '\"default_cpu\": 2000'"
tap_ok "queue --default-cpu 1000001 is refused by the CLI, naming the bound" \
    typed 2 '\-\-default-cpu: 1000001 CPUs is outside 0 to 1000000' queue set q2 --default-cpu 1000001
tap_ok "min_runtime_max defaults to ten minutes" sh -c "$GP queue list --json | grep -A50 '\"name\": \"big\"' | grep -q '\"min_runtime_max\": 600'"
gpd_stop
tap_ok "gpupoold restarts" gpd_start "$D" --period 300ms
tap_ok "min_runtime_max survives a restart" sh -c "$GP queue list --json | grep -A50 '\"name\": \"q2\"' | grep -q '\"min_runtime_max\": 120'"
gpd_stop

echo "usage_half_life = 2h" >"$TMP/conf"
tap_ok "usage_half_life from the configuration file" gpd_start "$D" --config "$TMP/conf"
gpd_stop
echo "usage_half_life = soon" >"$TMP/bad.conf"
tap_ok "a bad usage_half_life is refused, naming it" \
    sh -c "$GPD --data-dir '$D' --listen 127.0.0.1:0 --config '$TMP/bad.conf' 2>&1 | grep -q 'usage_half_life: \"soon\"'"
tap_done
