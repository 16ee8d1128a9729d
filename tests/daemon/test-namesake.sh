#!/bin/sh
# A project's workloads, as its researchers see them, are those submitted
# after its queue was made, told by workload ids (WL_CURRENT): a deleted
# namesake's are not its own, and a clock set back after the queue was made
# hides none of its own (told by times, it hid them). A store from before
# the rule (schema version 11) is migrated once by the creation time.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
emulated_pool "$D" 1
submit() { GPUPOOL_TOKEN=$1 && shift && $GP submit "$@" | grep -o '[0-9][0-9]*' | head -1; }
RT=$($GP token create --user rita --role researcher --scope a1 --unix-user "$(id -un)" | head -1)
W=$(submit "$RT" --project a1 --gpu 1 -- true)
tap_ok "a researcher's workload ends" wait_until 60 is_state "$W" succeeded
lists() { # TOKEN ID: the token's list of workloads holds ID
    GPUPOOL_TOKEN=$1 $GP --json list --all 2>/dev/null | grep -q "\"id\": *$2[,}]"
}
tap_ok "its researcher lists it" lists "$RT" "$W"
gpd_stop
# The clock was ahead when the queue was made, then set back.
sqlite3 "$D/gpupool.db" "UPDATE queues SET created_ms = created_ms + 86400000 WHERE name = 'a1'"
tap_ok "gpupoold starts again" emulated_start "$D" 1
tap_ok "a clock set back hides none of the project's own workloads" lists "$RT" "$W"

# A store from before: a1 deleted and made again after W (its created_ms
# later than W's submission), the column of the rule not there yet.
gpd_stop
sqlite3 "$D/gpupool.db" "UPDATE schema_version SET version = 11;
    ALTER TABLE queues DROP COLUMN workloads_after;
    ALTER TABLE tasks DROP COLUMN master_port;
    UPDATE queues SET created_ms = (SELECT submitted_ms + 1 FROM workloads WHERE id = $W)
        WHERE name = 'a1'"
tap_ok "gpupoold migrates a store of schema version 11" emulated_start "$D" 1
unlisted() { ! lists "$@"; }
tap_ok "the old namesake's workload is not the new project's" unlisted "$RT" "$W"
tap_ok "the admin still lists it" lists "$GPUPOOL_TOKEN" "$W"
W2=$(submit "$RT" --project a1 --gpu 1 -- true)
tap_ok "a new workload of the project" wait_until 60 is_state "$W2" succeeded
tap_ok "is listed by its researcher" lists "$RT" "$W2"
tap_done
