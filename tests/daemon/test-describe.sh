#!/bin/sh
# What describe and list say after an eviction, end to end with a real daemon
# and real processes: the eviction event gives the real time the workload
# took to stop (not the grace period it was allowed); while it waits again,
# it shows no task of its old attempt; once it runs again, no reason of the
# old attempt; and the repeat of an idempotent submit answers with the real
# state.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts with 8 emulated GPUs" gpd_start "$D" --period 300ms --poll 200ms

tap_ok "queues created" two_departments

# Stops at once on the checkpoint signal, although it may take 20 s.
cat >"$TMP/quick.sh" <<'SH'
trap 'exit 0' TERM
sleep 120 &
wait $!
SH
for i in 1 2 3 4 5 6 7 8; do
    $GP submit --project b1 --gpu 1 --grace 20s --name b$i -- sh "$TMP/quick.sh" >/dev/null
done
tap_ok "B's 8 workloads run" wait_until 30 has_count 8 running b1
# Long enough that the evicted one still waits when it is looked at below
# (a workload is running once its executor says so, a poll after launch).
$GP submit --project a1 --gpu 1 --name a1 -- sleep 10 >/dev/null
tap_ok "A's workload runs" wait_until 30 has_count 1 running a1

ev=
for id in 1 2 3 4 5 6 7 8; do
    api GET "/api/v1/workloads/$id/events" | grep -q '"kind":"requeued"' && ev=$id
done
tap_ok "one of B's workloads was evicted and requeued" test -n "$ev"
msg=$(api GET "/api/v1/workloads/$ev/events" | grep -o '"message":"attempt 1 stopped[^"]*"')
tap_ok "the requeue event says how long it really took to stop" contains "$msg" "stopped [0-9.]*m\?s after the checkpoint signal"
tap_ok "... which is not the 20 s it was allowed" sh -c "! printf '%s' '$msg' | grep -q 'stopped 20s'"
tap_ok "while it waits, it shows no task of its old attempt" \
    sh -c "$GP describe $ev --json | tr -d ' \n' | grep -q '\"tasks\":\[\]'"
tap_ok "it runs again when A's workload ends" wait_until 40 sh -c "$GP describe $ev --json | grep -q '\"state\": \"running\"'"
tap_ok "running again, it shows no reason of its old attempt" \
    sh -c "! $GP list --json | tr -d ' \n' | grep -o '{\"id\":$ev,[^}]*}' | grep -q '\"reason\"'"

first=$($GP submit --project a1 --gpu 1 --key k1 --json -- sleep 60 | tr -d ' \n')
tap_ok "an idempotent submit answers pending" contains "$first" '"state":"pending"'
id=$(printf '%s' "$first" | grep -o '"id":[0-9]*' | grep -o '[0-9]*')
wait_until 30 sh -c "$GP describe $id --json | grep -q '\"state\": \"running\"'"
again=$($GP submit --project a1 --gpu 1 --key k1 --json -- sleep 60 | tr -d ' \n')
tap_ok "its repeat answers with the real state" contains "$again" '"state":"running","existed":true'
# Every "Label: value" line of describe puts its value in the same column
# (a task's line began one column short of the others); a misplaced line is
# printed.
aligned() {
    $GP describe "$1" | awk '/^[A-Z][^:]*: +[^ ]/ { match($0, /: +/); if (RSTART + RLENGTH != 17) { print "# " $0; bad = 1 } } END { exit bad }'
}
tap_ok "describe's values, the task's line included, start in one column" aligned "$id"
tap_ok "describe shows each task's GPU" contains "$($GP describe "$id")" '^Task 0: *node [^,]*, GPU [0-9], handle '
tap_done
