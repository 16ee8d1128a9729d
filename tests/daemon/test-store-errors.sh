#!/bin/sh
# A store query that fails is an error, never "nothing found". failstep.so
# makes SQLite's steps of one statement fail (SQLITE_NOMEM) without running.
#
# The lookup of a submission's client_key: it once took any failed step for
# "key not used" and went on to insert, so the error was lost: a retry was
# answered 409 "UNIQUE constraint failed", and a new key was stored although
# the store had failed. Now the submission fails with the store's error and
# stores nothing; the same keys once the store works again give the first
# workload back, and a new one.
#
# The schema version read at start: a failed read was version 0, and the
# start failed re-running the first migration ("table queues already
# exists"). Now the start fails saying the version could not be read.
#
# A delete of a pending workload whose write the store refuses (once):
# it was handed back to the engine through the owner's resume, which
# stored the event "resumed" and its reason "resumed: back in the queue"
# for a workload never suspended. Now it is handed back and nothing is
# stored: it stays pending, without the event, and runs when a GPU is free.
. tests/lib/tap.sh
. tests/daemon/lib.sh
skip_if_sanitized

D=$TMP/d
mkdir -p "$D"
body() { echo "{\"project\":\"p\",\"command\":[\"true\"],\"client_key\":\"$1\"}"; }
GPD_TEST_FAIL_STEP='SELECT id FROM workloads WHERE client_key' GPD_TEST_FAIL_STEP_NTH=2 \
    LD_PRELOAD=$B/tests/daemon/failstep.so \
    tap_ok "gpupoold starts, its client-key lookups failing from the second on" gpd_start "$D"
$GP queue create p >/dev/null
out=$(api POST /api/v1/workloads "$(body k1)")
tap_is "a first submission with key k1 is created" "${out##* }" 201
id=$(echo "$out" | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
out=$(api POST /api/v1/workloads "$(body k1)")
tap_is "its retry, the lookup failing, answers 500" "${out##* }" 500
tap_ok "with the store's error" contains "$out" "looking up the client key: out of memory"
out=$(api POST /api/v1/workloads "$(body k2)")
tap_is "a new key k2, the lookup failing, answers 500" "${out##* }" 500
tap_ok "with the store's error" contains "$out" "looking up the client key: out of memory"
tap_is "one workload is stored" "$(api GET '/api/v1/workloads?limit=100' | grep -o '"id":' | wc -l)" 1
gpd_stop

tap_ok "gpupoold starts again" gpd_start "$D"
out=$(api POST /api/v1/workloads "$(body k1)")
tap_is "k1 again answers 200" "${out##* }" 200
tap_ok "with the first workload" contains "$out" "\"id\": *$id[,}]"
out=$(api POST /api/v1/workloads "$(body k2)")
tap_is "k2 again is created: the failed one stored nothing" "${out##* }" 201
gpd_stop

msg=$(GPD_TEST_FAIL_STEP='SELECT version FROM schema_version' \
    LD_PRELOAD="$B/tests/daemon/failstep.so" "$GPD" --data-dir "$D" --listen 127.0.0.1:0 2>&1)
tap_ok "a start whose schema version cannot be read fails" test $? != 0
tap_ok "saying so" contains "$msg" "reading the schema version: out of memory"
tap_ok "the next start comes up" gpd_start "$D"
tap_is "with both workloads" "$(api GET '/api/v1/workloads?limit=100' | grep -o '"id":' | wc -l)" 2
gpd_stop

P=$TMP/pending
GPD_TEST_FAIL_STEP='UPDATE workloads SET reason' GPD_TEST_FAIL_STEP_COUNT=1 \
    tap_ok "gpupoold starts on 1 emulated GPU, its first write of a reason failing" \
    failstep_start "$P" 1
$GP queue create p >/dev/null
submit() { $GP submit --project p --gpu 1 -- sleep 600 | grep -o '[0-9][0-9]*' | head -1; }
R=$(submit)
tap_ok "a workload runs on the GPU" wait_until 60 is_state "$R" running
W=$(submit)
tap_is "another is pending" "$(state_of "$W")" pending
out=$(api DELETE "/api/v1/workloads/$W")
tap_is "its delete, the store failing, answers 500" "${out##* }" 500
tap_is "it is still pending" "$(state_of "$W")" pending
ev=$(api GET "/api/v1/workloads/$W/events")
tap_ok "with no event of the failed delete" sh -c "! printf '%s' '$ev' | grep -q resumed"
tap_ok "the first workload deleted" sh -c "$GP delete $R >/dev/null"
tap_ok "the pending one runs: the engine has it" wait_until 60 is_state "$W" running
tap_ok "its delete now succeeds" sh -c "$GP delete $W >/dev/null"
tap_ok "it is deleted" wait_until 30 is_state "$W" deleted
tap_done
