#!/bin/sh
# A command that changes a stop under way outlives a kill -9 of gpupoold: a
# borrower that ignores the checkpoint signal is evicted by its GPU's owner
# (a grace period of 20 s), its owner suspends it meanwhile, and gpupoold
# is killed and restarted before the grace period ends: at its end the
# borrower is suspended, not put back in the queue to run again (the store
# kept the eviction). Waits on conditions only.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts with 1 emulated GPU" emulated_start "$D" 1
tap_ok "queues created" sh -c "$GP queue create A --deserved 1 >/dev/null &&
    $GP queue create a1 --parent A --deserved 1 >/dev/null &&
    $GP queue create B --deserved 0 >/dev/null && $GP queue create b1 --parent B --deserved 0 >/dev/null"

# Ignores the checkpoint signal (the shell and its sleeps inherit SIG_IGN).
cat >"$TMP/stubborn.sh" <<'SH'
trap '' TERM
while :; do sleep 1; done
SH
submit() { $GP submit "$@" | grep -o '[0-9][0-9]*' | head -1; }
W=$(submit --project b1 --gpu 1 --grace 20s --name borrower -- sh "$TMP/stubborn.sh")
tap_ok "a borrower runs" wait_until 60 is_state "$W" running
O=$(submit --project a1 --gpu 1 --name owner -- sleep 600)
stopping_for() { contains "$(api GET "/api/v1/workloads/$1")" "\"stopping_for\":\"$2\""; }
tap_ok "the owner comes back: the borrower is being evicted" wait_until 60 stopping_for "$W" evict
tap_ok "gpupool suspend of the borrower during its grace period" sh -c "$GP suspend $W >/dev/null"
tap_ok "the stop is now a suspend" stopping_for "$W" suspend
gpd_kill9
tap_ok "gpupoold killed with kill -9 starts again" emulated_start "$D" 1
tap_ok "still stopping after the restart" is_state "$W" stopping
not_stopping() { ! is_state "$1" stopping; }
tap_ok "the grace period ends" wait_until 60 not_stopping "$W"
tap_is "the borrower is suspended, not back in the queue" "$(state_of "$W")" suspended
tap_ok "the owner's workload runs" wait_until 60 is_state "$O" running
tap_done
