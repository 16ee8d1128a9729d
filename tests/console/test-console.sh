#!/bin/sh
# The web console in a real headless Chromium (tests/console/console.mjs):
# a daemon on a fake NVML with three GPUs, running and pending workloads, a
# workload named like HTML, and a researcher's token; the browser signs in,
# submits, deletes, and checks what each role is offered, and that its
# console session (never the token) is revoked by sign-out and by the idle
# timeout (a third daemon's, 5 s); it types into an interactive workload's
# terminal, and starts a notebook (Debian's jupyter-notebook) that it reaches
# through gpupool port-forward; on a fourth daemon, whose node can pause, a
# borrower paused for its owner shows paused, with Resume and Delete, and
# its events paused, then resumed. With SHOTS=DIR it
# also saves a screenshot of each page there (make console-screenshots).
. tests/lib/tap.sh
. tests/daemon/lib.sh

if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ] || [ ! -d tests/console/node_modules/playwright-core ]; then
    echo "1..0 # SKIP chromium or playwright-core missing: run scripts/install-deps.sh"
    exit 0
fi

D=$TMP/console
mkdir -p "$D"
GPUPOOL_FAKE_GPUS=3 GPUPOOL_FAKE_BUSY=60,20,0
export GPUPOOL_FAKE_GPUS GPUPOOL_FAKE_BUSY
CFG="node=gpu-node-1,state_dir=$D/tasks,nvml=$B/fake/libnvidia-ml.so.1,interposer=$TMP/none.so,cgroup=off"
# A first start makes the store; a week of history goes in while it is down.
gpd_start "$D" --executor-config "$CFG" && gpd_stop
tap_ok "a week of usage history is written" sh bench/seed-history.sh "$D/gpupool.db" 7 \
    "nlp:research:0.5:1.5:0.3 vision:research:0.2:0.8:0.45 infra:ops:0.3:0.7:0.6"
tap_ok "gpupoold starts" gpd_start "$D" --period 300ms --poll 200ms --usage-period 200ms --executor-config "$CFG"
$GP queue create research --deserved 1 >/dev/null && $GP queue create nlp --parent research --deserved 1 >/dev/null &&
    $GP queue create vision --parent research >/dev/null &&
    $GP queue create ops --deserved 1 >/dev/null && $GP queue create infra --parent ops --deserved 1 --limit 1 >/dev/null &&
    $GP queue create lab --deserved 1 >/dev/null && $GP queue create notebooks --parent lab --deserved 1 >/dev/null
# Neither may be evicted (each runs within its project's deserved quota), so
# the nodes page shows both projects later and infra's limit keeps the rest
# of infra waiting: in one run under the sanitizers the nodes page showed one
# project and fewer than 1,000 of infra's workloads were left waiting, as when
# service leaves its GPU.
OTHER_ID=$($GP --json submit --project nlp --gpu 1 --no-preempt --name training -- sleep 300 | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
$GP submit --project infra --gpu 1 --no-preempt --name service -- sleep 300 >/dev/null
PENDING_ID=$($GP --json submit --project infra --gpu 1 --name second -- sleep 1 | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
# More than a page of workloads (at 10 a page), waiting behind infra's limit.
for i in 1 2 3 4 5 6 7 8 9 10; do
    $GP submit --project infra --gpu 1 --name "batch-$i" -- sleep 1 >/dev/null
done
XSS_NAME='<img src=x onerror=alert(1)>'
$GP submit --project nlp --name "$XSS_NAME" --gpu 0.001 -- true >/dev/null
RESEARCHER_TOKEN=$($GP token create --user rita --role researcher --scope nlp | head -1)
DEPT_TOKEN=$($GP token create --user dora --role dept-admin --scope research | head -1)
tap_ok "a workload runs" wait_until 30 has_count 1 running nlp
# (By node: the seeded history's node is another, so only a live sample counts.)
live_usage() { curl -s -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_SERVER/api/v1/usage?by=node&from=1m" |
    grep -q '"key":"gpu-node-1"'; }
tap_ok "its usage is recorded" wait_until 30 live_usage
# A second pool, just started: no history at all.
Y=$TMP/young
mkdir -p "$Y"
printf 'node = young\ndomain = local\ngpu = H100 80G 2\n' >"$TMP/young.conf"
"$GPD" --data-dir "$Y" --listen 127.0.0.1:0 --executor-config "state_dir=$Y/tasks,inventory=$TMP/young.conf" >"$Y.log" 2>&1 &
GPD_OTHERS=$!
young_up() { [ -s "$Y/gpupoold.addr" ]; }
wait_until 30 young_up
YOUNG_SERVER=$(cat "$Y/gpupoold.addr" 2>/dev/null)
YOUNG_TOKEN=$(cat "$Y/admin.token" 2>/dev/null)
# A third, whose console sessions end after 5 s without activity (its shell
# runs without the interposer, as on the first: a sanitizer build's cannot be
# preloaded, and the console is what is tested here).
I=$TMP/idle
mkdir -p "$I"
"$GPD" --data-dir "$I" --listen 127.0.0.1:0 --console-idle-timeout 5s --allow-root-workloads \
    --executor-config "state_dir=$I/tasks,inventory=$TMP/young.conf,interposer=$TMP/none.so" >"$I.log" 2>&1 &
GPD_OTHERS="$GPD_OTHERS $!"
idle_up() { [ -s "$I/gpupoold.addr" ] && [ -s "$I/admin.token" ]; }
wait_until 30 idle_up
IDLE_SERVER=$(cat "$I/gpupoold.addr" 2>/dev/null)
IDLE_TOKEN=$(cat "$I/admin.token" 2>/dev/null)
# A shell on it: typing into its terminal keeps the console session in use.
GPUPOOL_SERVER=$IDLE_SERVER GPUPOOL_TOKEN=$IDLE_TOKEN $GP queue create lab --deserved 1 >/dev/null &&
    GPUPOOL_SERVER=$IDLE_SERVER GPUPOOL_TOKEN=$IDLE_TOKEN $GP queue create shells --parent lab --deserved 1 >/dev/null
IDLE_SHELL=$(curl -s -H "Authorization: Bearer $IDLE_TOKEN" -H 'Content-Type: application/json' \
    -d '{"project": "shells", "gpu": "0.1", "tty": true, "kind": "interactive", "command": ["/bin/sh"]}' \
    "$IDLE_SERVER/api/v1/workloads" | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
# A fourth, whose node can pause (emulated GPUs of 1 GiB, the cgroup
# freezer): a borrower in pause mode is paused when its owner comes back.
PZ=$TMP/pausing
mkdir -p "$PZ"
printf 'node = pz\ndomain = local\ngpu = T4 1G 2\n' >"$TMP/pz.conf"
"$GPD" --data-dir "$PZ" --listen 127.0.0.1:0 --allow-root-workloads --period 300ms --poll 200ms \
    --executor-config "state_dir=$PZ/tasks,inventory=$TMP/pz.conf,interposer=$TMP/none.so" >"$PZ.log" 2>&1 &
GPD_OTHERS="$GPD_OTHERS $!"
pz_up() { [ -s "$PZ/gpupoold.addr" ] && [ -s "$PZ/admin.token" ]; }
wait_until 30 pz_up
PAUSE_SERVER=$(cat "$PZ/gpupoold.addr" 2>/dev/null)
PAUSE_TOKEN=$(cat "$PZ/admin.token" 2>/dev/null)
PAUSED_ID= PAUSE_OWNER=
pz() { GPUPOOL_SERVER=$PAUSE_SERVER GPUPOOL_TOKEN=$PAUSE_TOKEN $GP "$@"; }
pz_state() {
    curl -s -H "Authorization: Bearer $PAUSE_TOKEN" "$PAUSE_SERVER/api/v1/workloads/$1" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])' 2>/dev/null
}
pz_is() { [ "$(pz_state "$1")" = "$2" ]; }
if curl -s -H "Authorization: Bearer $PAUSE_TOKEN" "$PAUSE_SERVER/api/v1/nodes" | grep -q '"can_pause": *true'; then
    pz queue create A --deserved 1 >/dev/null && pz queue create a1 --parent A --deserved 1 >/dev/null &&
        pz queue create B --deserved 1 >/dev/null && pz queue create b1 --parent B --deserved 1 >/dev/null
    B1=$(pz --json submit --project b1 --gpu 1 --on-preempt pause --name borrower-1 -- sleep 600 | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
    B2=$(pz --json submit --project b1 --gpu 1 --on-preempt pause --name borrower-2 -- sleep 600 | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
    wait_until 60 pz_is "$B1" running && wait_until 60 pz_is "$B2" running
    PAUSE_OWNER=$(pz --json submit --project a1 --gpu 1 --name owner -- sleep 600 | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
    one_paused() { pz_is "$B1" paused || pz_is "$B2" paused; }
    tap_ok "a borrower is paused for its owner on the fourth daemon" wait_until 60 one_paused
    PAUSED_ID=$B2
    pz_is "$B1" paused && PAUSED_ID=$B1
else
    echo "# the fourth daemon cannot pause here: $(grep -o 'pause is not supported.*' "$PZ.log")"
fi
# The notebook's directory (Jupyter writes the test's notebook there).
NB_DIR=
if [ -x /usr/bin/jupyter-notebook ]; then
    NB_DIR=$TMP/notebooks
    mkdir -p "$NB_DIR"
fi
SERVER=$GPUPOOL_SERVER ADMIN_TOKEN=$GPUPOOL_TOKEN RESEARCHER_TOKEN=$RESEARCHER_TOKEN DEPT_TOKEN=$DEPT_TOKEN \
    PENDING_ID=$PENDING_ID OTHER_ID=$OTHER_ID XSS_NAME=$XSS_NAME SHOTS=${SHOTS:-} \
    HOME_DIR=$(getent passwd "$(id -un)" | cut -d: -f6) YOUNG_SERVER=$YOUNG_SERVER YOUNG_TOKEN=$YOUNG_TOKEN \
    IDLE_SERVER=$IDLE_SERVER IDLE_TOKEN=$IDLE_TOKEN IDLE_SHELL=$IDLE_SHELL GP=$GP NB_DIR=$NB_DIR \
    PAUSE_SERVER=$PAUSE_SERVER PAUSE_TOKEN=$PAUSE_TOKEN PAUSED_ID=$PAUSED_ID PAUSE_OWNER=$PAUSE_OWNER \
    node tests/console/console.mjs >"$TMP/console.tap" 2>&1
rc=$?
sed -n 's/^\(not \)\{0,1\}ok [0-9]* - /&/p; /^#/p' "$TMP/console.tap" | while IFS= read -r line; do
    case $line in
    "#"*) echo "$line" ;;
    *) echo "$line" | sed 's/^\(not \)\{0,1\}ok [0-9]* - /\1ok - /' ;;
    esac
done | {
    # Renumber the browser's results after this script's own.
    i=$tap_n
    while IFS= read -r line; do
        case $line in
        "#"*) echo "$line" ;;
        *) i=$((i + 1)); echo "$line" | sed "s/ok - /ok $i - /" ;;
        esac
    done
}
nb=$(grep -c '^\(not \)\{0,1\}ok ' "$TMP/console.tap")
tap_n=$((tap_n + nb))
[ "$rc" = 0 ] || tap_failed=$((tap_failed + 1))
[ "$nb" -gt 0 ] || { echo "# the browser test printed nothing:"; sed 's/^/#   /' "$TMP/console.tap" | tail -20; tap_n=$((tap_n + 1)); echo "not ok $tap_n - the browser test ran"; }
tap_done
