#!/bin/sh
# A workload's attempts are bounded as its events are (GPD__HISTORY_KEPT,
# 1,000): its first and its latest are kept, an older one going as each new
# one starts. Suspending and resuming a running workload in a loop added
# about 2.5 attempts a second for ever, to the store and to every answer of
# GET /api/v1/workloads/ID. The store is given 1,100 attempts of a pending
# workload while gpupoold is stopped; its next start must prune them.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
emulated_pool "$D" 1
submit() { $GP submit "$@" | grep -o '[0-9][0-9]*' | head -1; }
H=$(submit --project a1 --gpu 1 -- sleep 600)
tap_ok "a workload holds the GPU" wait_until 60 is_state "$H" running
W=$(submit --project a1 --gpu 1 -- sleep 600)
tap_ok "another waits" is_state "$W" pending
gpd_stop
sqlite3 "$D/gpupool.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1100)
    INSERT INTO attempts(workload, attempt, outcome) SELECT $W, i, 'evicted' FROM n;
    UPDATE workloads SET attempt = 1100 WHERE id = $W;"
tap_ok "gpupoold starts again" emulated_start "$D" 1
$GP delete "$H" >/dev/null
tap_ok "the waiting workload starts its 1,101st attempt" wait_until 60 is_state "$W" running
attempts() { # the numbers of W's attempts, one a line
    curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/api/v1/workloads/$W" |
        python3 -c 'import json, sys; [print(a["attempt"]) for a in json.load(sys.stdin)["attempts"]]'
}
a=$(attempts)
tap_ok "at most 1,000 attempts are kept" [ "$(printf '%s\n' "$a" | wc -l)" -le 1000 ]
tap_is "the first is kept" "$(printf '%s\n' "$a" | head -1)" 1
tap_is "and the latest" "$(printf '%s\n' "$a" | tail -1)" 1101
$GP delete "$W" >/dev/null
tap_done
