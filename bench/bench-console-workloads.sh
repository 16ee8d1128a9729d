#!/bin/sh
# bench-console-workloads.sh — the console's Workloads page with 1,000 rows in
# Chromium (tests/console/workloads-bench.mjs): a daemon on emulated GPUs with 1,000
# workloads waiting behind a project's limit, their reason the same.
# GPD=path/to/gpupoold measures another build; RUNS (default 5).
B=${GP_BUILD:-build}
GPD=${GPD:-$B/gpupoold}
GP=$B/gpupool
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ] || [ ! -d tests/console/node_modules/playwright-core ]; then
    echo "bench-console-workloads: skipped: chromium or playwright-core missing (scripts/install-deps.sh)"
    exit 0
fi
D=$(mktemp -d /tmp/gpupool-bench-console.XXXXXX)
trap 'GPUPOOL_SERVER=$GPUPOOL_SERVER GPUPOOL_TOKEN=$GPUPOOL_TOKEN $GP delete 1 >/dev/null 2>&1; kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$D"' EXIT
printf 'node = n1\ndomain = local\ngpu = H100 80G 1\n' >"$D/inv.conf"
"$GPD" --data-dir "$D/data" --listen 127.0.0.1:0 --allow-root-workloads \
    --executor-config "state_dir=$D/data/tasks,inventory=$D/inv.conf,interposer=$D/none.so,cgroup=off" >"$D/log" 2>&1 &
PID=$!
n=0
while [ ! -s "$D/data/gpupoold.addr" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
export GPUPOOL_SERVER=$(cat "$D/data/gpupoold.addr") GPUPOOL_TOKEN=$(cat "$D/data/admin.token")
$GP queue create d >/dev/null && $GP queue create p --parent d --limit 1 >/dev/null
$GP submit --project p --gpu 1 --name holder -- sleep 600 >/dev/null
node -e '
const [s, t] = [process.env.GPUPOOL_SERVER, process.env.GPUPOOL_TOKEN];
const h = { Authorization: "Bearer " + t, "Content-Type": "application/json" };
(async () => { for (let i = 0; i < 1000; i += 10) await Promise.all(Array.from({ length: 10 }, (_, j) =>
  fetch(s + "/api/v1/workloads", { method: "POST", headers: h, body: JSON.stringify({ project: "p", gpu: "1", name: "bulk-" + (i + j), command: ["true"] }) }))); })();
'
SERVER=$GPUPOOL_SERVER TOKEN=$GPUPOOL_TOKEN node tests/console/workloads-bench.mjs
