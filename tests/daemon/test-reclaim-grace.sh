#!/bin/sh
# A borrower's own grace period does not defeat a deserved quota. Department
# B's project borrows all 8 emulated GPUs with workloads that ask for a
# 24-hour grace period and ignore the checkpoint signal; department A then
# wants its 4 deserved GPUs. Before, A waited as long as B's grace periods
# (an admin had to delete B's workloads); now a reclaim keeps to the victim
# project's reclaim_grace_max (here 2 s), and A's workloads run.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts with 8 emulated GPUs" gpd_start "$D" --period 300ms --poll 200ms

out=$(api POST /api/v1/queues '{"name":"x","reclaim_grace_max":"25h"}')
tap_ok "a reclaim_grace_max above 24h is refused, naming the field" \
    contains "$out" '"field":"reclaim_grace_max".* 400$'
out=$(api POST /api/v1/queues '{"name":"x","reclaim_grace_max":-1}')
tap_ok "a negative reclaim_grace_max is refused" contains "$out" ' 400$'
tap_ok "and nothing was created" contains "$(api GET /api/v1/queues/x)" ' 404$'

$GP queue create A --deserved 4 >/dev/null && $GP queue create a1 --parent A --deserved 4 >/dev/null &&
    $GP queue create B --deserved 4 >/dev/null &&
    $GP queue create b1 --parent B --deserved 4 --reclaim-grace-max 2s >/dev/null
tap_is "queues created (b1 with --reclaim-grace-max 2s)" "$?" 0
tap_ok "the queue shows reclaim_grace_max in seconds" \
    contains "$(api GET /api/v1/queues/b1)" '"reclaim_grace_max":2[,}]'
tap_ok "a department's default is one minute" \
    contains "$(api GET /api/v1/queues/A)" '"reclaim_grace_max":60[,}]'
# A bound lowered on a department lowers its projects' where the engine
# applies it: b1 raised to an hour by the pool's admin, then B lowered to
# 2 s, holds 2 s again (it kept its hour, and A waited, before).
$GP queue set b1 --reclaim-grace-max 1h >/dev/null && $GP queue set B --reclaim-grace-max 2s >/dev/null
tap_is "b1 raised to 1h, then its department B lowered to 2s" "$?" 0
tap_ok "b1's bound is lowered with B's" \
    contains "$(api GET /api/v1/queues/b1)" '"reclaim_grace_max":2[,}]'

# Ignores the checkpoint signal (the shell and its sleeps inherit SIG_IGN).
cat >"$TMP/stubborn.sh" <<'SH'
trap '' TERM
while :; do sleep 1; done
SH
for i in 1 2 3 4 5 6 7 8; do
    $GP submit --project b1 --gpu 1 --grace 24h --name b$i -- sh "$TMP/stubborn.sh" >/dev/null
done
tap_ok "all 8 of B's workloads run while A is idle (4 on borrowed GPUs)" \
    wait_until 60 has_count 8 running b1

for i in 1 2 3 4; do
    $GP submit --project a1 --gpu 1 --name a$i -- sleep 600 >/dev/null
done
# A cycle, the 2 s bound, the kill and the next cycle: seconds, not a day.
tap_ok "A's 4 deserved GPUs are back within the bounded grace (generous bound)" \
    wait_until 60 has_count 4 running a1
evicted=$(ids_with_event reclaim_grace_max 1 8)
tap_is "4 of B's workloads were stopped after the bounded grace, and say so" \
    "$(echo "$evicted" | grep -c .)" 4
tap_done
