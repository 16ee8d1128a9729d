#!/bin/sh
# A workload deleted after its submission is stored and before it is handed
# to the engine stays deleted and never runs. failstep.so holds the commit
# of the submission's insert for 3 s after it is written: the workload can
# be read (pending) and deleted while its submission is not yet answered.
# The delete once found nothing to cancel in the engine and stored the
# workload deleted; the submission then handed it to the engine, which
# bound it, and it was launched. The hand-off now goes through the loop,
# after the delete, and hands over only a workload still pending.
. tests/lib/tap.sh
. tests/daemon/lib.sh
skip_if_sanitized

D=$TMP/d
mkdir -p "$D"
printf 'node = local\ndomain = local\ngpu = T4 1G 2\n' >"$TMP/inv.conf"
GPD_TEST_SLOW_COMMIT_AFTER='INSERT INTO workloads' GPD_TEST_SLOW_COMMIT_MS=3000 \
    LD_PRELOAD=$B/tests/daemon/failstep.so \
    tap_ok "gpupoold starts, the commits of submissions slow" gpd_start "$D" --period 200ms \
    --poll 200ms --executor-config "state_dir=$D/tasks,inventory=$TMP/inv.conf"
$GP queue create p >/dev/null
$GP submit --project p -- sleep 600 >"$TMP/submit.out" 2>&1 &
sub=$!
tap_ok "the workload is stored, pending" wait_until 30 is_state 1 pending
tap_ok "and deleted before its submission is answered" sh -c "kill -0 $sub && $GP delete 1"
wait "$sub"
tap_is "the submission is answered" "$?" 0
$GP submit --project p -- sleep 600 >/dev/null
tap_ok "a workload submitted after it runs" wait_until 30 is_state 2 running
tap_ok "the deleted one is still deleted" is_state 1 deleted
tap_is "and never started" "$(api GET /api/v1/workloads/1/events | grep -c '"started"')" 0
tap_is "one task runs" "$(count_state running)" 1
gpd_stop
tap_done
