#!/bin/sh
# kill -9 of the daemon at random moments under a stream of submissions:
# after restart, every acknowledged submission is present exactly once, and
# every workload ran exactly once. Submissions carry an idempotency key and
# are retried with it until acknowledged, as a careful client does.
. tests/lib/tap.sh
. tests/daemon/lib.sh

N=${GP_CRASH_SUBMISSIONS:-120}
D=$TMP/crash
mkdir -p "$D"
tap_ok "gpupoold starts" gpd_start "$D" --period 200ms --poll 200ms
# Restarts keep the address, which the submitter was started with.
GPD_LISTEN=${GPUPOOL_SERVER#http://}
$GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null
RUNS=$TMP/runs.txt
: >"$RUNS"

# The submitter: one submission at a time, retried until acknowledged.
(
    i=1
    while [ $i -le $N ]; do
        if id=$($GP --json submit --project proj --key "k$i" -- sh -c 'echo $GPUPOOL_WORKLOAD_ID >> '"$RUNS" 2>/dev/null |
            sed -n 's/.*"id": *\([0-9]*\).*/\1/p') && [ -n "$id" ]; then
            echo "k$i $id" >>"$TMP/acked.txt"
            i=$((i + 1))
        else
            sleep 0.1
        fi
    done
) &
SUBMITTER=$!

# The crashes: three kill -9 at random moments, each followed by a restart.
kills=0
for k in 1 2 3; do
    sleep "0.$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')" 2>/dev/null || sleep 0.5
    sleep 1
    gpd_kill9 && kills=$((kills + 1))
    gpd_start "$D" --period 200ms --poll 200ms || break
done
tap_is "the daemon was killed with SIGKILL 3 times and restarted" "$kills" 3
wait_until 120 sh -c "! kill -0 $SUBMITTER 2>/dev/null"
tap_is "every submission was acknowledged in the end" "$(wc -l <"$TMP/acked.txt" | tr -d ' ')" "$N"
tap_ok "every workload finishes" wait_until 120 has_count "$N" succeeded proj

total=$(sqlite3 "$D/gpupool.db" 'SELECT count(*) FROM workloads')
tap_is "the store holds exactly one workload per submission" "$total" "$N"
dups=$(cut -d' ' -f2 "$TMP/acked.txt" | sort | uniq -d | wc -l | tr -d ' ')
tap_is "no two submissions were given the same workload" "$dups" 0
missing=0
for id in $(cut -d' ' -f2 "$TMP/acked.txt"); do
    [ "$(sqlite3 "$D/gpupool.db" "SELECT count(*) FROM workloads WHERE id=$id")" = 1 ] || missing=$((missing + 1))
done
tap_is "every acknowledged workload is in the store" "$missing" 0
tap_is "every workload ran exactly once" "$(sort "$RUNS" | uniq -c | awk '$1 != 1' | wc -l | tr -d ' ') $(sort -u "$RUNS" | wc -l | tr -d ' ')" "0 $N"
tap_done
