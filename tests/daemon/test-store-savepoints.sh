#!/bin/sh
# The store's writer commits a batch of writes in one transaction, each write
# in its own savepoint so that one that fails is rolled back alone. The
# SAVEPOINT, ROLLBACK TO and RELEASE statements once had their results
# ignored: a SAVEPOINT or a ROLLBACK TO that failed left a failing write's
# partial changes in the transaction, and the batch committed them, so a
# submission answered 500 was stored (a workload without its "submitted"
# event, scheduled after the next start). Now a savepoint statement that
# fails rolls the whole transaction back and fails every write of the batch
# with the store's error: what a caller is told is what the store holds.
#
# failstep.so makes the named statements fail (SQLITE_NOMEM) without running:
# the submission's event (its second statement, after the workload's row)
# and the savepoint statement around it.
. tests/lib/tap.sh
. tests/daemon/lib.sh
skip_if_sanitized

D=$TMP/d
mkdir -p "$D"
tap_ok "gpupoold starts" gpd_start "$D"
$GP queue create p >/dev/null
gpd_stop
body='{"project":"p","command":["true"]}'
stored() { api GET '/api/v1/workloads?limit=100' | grep -o '"id":' | wc -l; }

# failing SQL WHAT MESSAGE: a submission, the statements SQL failing (WHAT),
# answers 500 with MESSAGE and stores nothing, then and after a restart.
failing() {
    GPD_TEST_FAIL_STEP=$1 LD_PRELOAD=$B/tests/daemon/failstep.so \
        tap_ok "gpupoold starts, $2 failing" gpd_start "$D"
    before=$(stored)
    out=$(api POST /api/v1/workloads "$body")
    tap_is "a submission answers 500" "${out##* }" 500
    tap_ok "with the store's error" contains "$out" "$3"
    tap_is "nothing is stored" "$(stored)" "$before"
    gpd_stop
    tap_ok "gpupoold starts again" gpd_start "$D"
    tap_is "and nothing was stored" "$(stored)" "$before"
    gpd_stop
}

failing 'SAVEPOINT op|INSERT INTO events' "the savepoints and the events" \
    "setting a write's savepoint: out of memory"
failing 'INSERT INTO events|ROLLBACK TO op' "the events and their rollback" \
    "recording an event: out of memory"
failing 'RELEASE op' "the savepoints' release" "releasing a write's savepoint: out of memory"
# The rollback of the whole transaction fails too: it is left open, never
# committed, and ended before the next batch or when gpupoold stops.
failing 'INSERT INTO events|ROLLBACK' "the events and every rollback" \
    "recording an event: out of memory"

# Concurrent submissions, so that the writer takes several in one batch: the
# first seven event insertions (the submissions' and their launches') run,
# the later ones fail and so do their rollbacks.
# A write told it succeeded may have been in a batch that another's failure
# rolled back; every answer must still be what the store holds.
GPD_TEST_FAIL_STEP='INSERT INTO events|ROLLBACK TO op' GPD_TEST_FAIL_STEP_NTH=8 \
    LD_PRELOAD=$B/tests/daemon/failstep.so \
    tap_ok "gpupoold starts, the events from the eighth on failing" gpd_start "$D"
before=$(stored)
pids=
for i in $(seq 1 20); do
    { api POST /api/v1/workloads "$body" && echo; } >"$TMP/sub.$i" &
    pids="$pids $!"
done
for p in $pids; do wait "$p"; done
created=$(cat "$TMP"/sub.* | grep -c ' 201$')
echo "# $created of 20 answered 201"
tap_is "every submission answers 201 or 500" "$(cat "$TMP"/sub.* | grep -vc ' 201$\| 500$')" 0
tap_is "those answered 201 are the ones stored" "$(($(stored) - before))" "$created"
gpd_stop
tap_ok "gpupoold starts again" gpd_start "$D"
tap_is "and they are all that was stored" "$(($(stored) - before))" "$created"
gpd_stop
total=$((before + created))

tap_ok "gpupoold starts with a store that works" gpd_start "$D"
out=$(api POST /api/v1/workloads "$body")
tap_is "a submission is created" "${out##* }" 201
tap_is "and stored beside the others" "$(stored)" $((total + 1))
tap_done
