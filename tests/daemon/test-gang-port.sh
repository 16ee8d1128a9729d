#!/bin/sh
# Two gangs whose ids are equal mod 1000 (1 and 1001), their tasks 0 on the
# one node of the local executor, run at once with MASTER_PORTs of their
# own: the first its preferred port (29500 + id mod 1000), the second the
# next one free. Each task 0 binds its port and holds it. After a restart
# of gpupoold, a third gang (1002) whose preferred port the second holds
# gets another: the recovery knows the port each running gang was given.
# Waits on conditions only.
. tests/lib/tap.sh
. tests/daemon/lib.sh

D=$TMP/port
emulated_proj "$D" 6

# Task 0 binds MASTER_PORT (and fails if it cannot); every task says it.
cat >"$TMP/rank.py" <<'EOF'
import os, socket, time
port = int(os.environ["MASTER_PORT"])
if os.environ["RANK"] == "0":
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.listen()
print("rank %s port %d" % (os.environ["RANK"], port), flush=True)
time.sleep(600)
EOF
gang() { $GP submit --project proj --gang 2 --gpu 1 -- /usr/bin/python3 "$TMP/rank.py" | grep -o '[0-9][0-9]*' | head -1; }
says() { grep -q "rank $2 port" "$D/logs/$1/task-$2.log" 2>/dev/null; }
port_of() { sed -n "s/^rank $2 port //p" "$D/logs/$1/task-$2.log"; }
# gang_up ID: running, both tasks past their rendezvous port.
gang_up() { is_state "$1" running && says "$1" 0 && says "$1" 1; }
# up ID: the gang comes up; else what it came to.
up() {
    wait_until 60 gang_up "$1" && return 0
    $GP describe "$1" | sed 's/^/#   /'
    for t in 0 1; do sed "s/^/#   task $t: /" "$D/logs/$1/task-$t.log"; done
    return 1
}

a=$(gang)
tap_is "the first gang is workload 1" "$a" 1
tap_ok "it runs" up "$a"
tap_is "its MASTER_PORT is the preferred one" "$(port_of "$a" 0)" 29501
tap_is "both its tasks have it" "$(port_of "$a" 1)" 29501

# Workloads 2 to 1000, submitted and deleted at once (they ask for more
# GPUs than are free, so none starts), over one connection.
tap_ok "workloads 2 to 1000 are submitted and deleted" python3 - "$GPUPOOL_SERVER" "$GPUPOOL_TOKEN" <<'EOF'
import http.client, json, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port)
h = {"Authorization": "Bearer " + sys.argv[2], "Content-Type": "application/json"}
body = json.dumps({"project": "proj", "command": ["true"], "gpu": 5})
for want in range(2, 1001):
    c.request("POST", "/api/v1/workloads", body, h)
    r = c.getresponse()
    got = json.loads(r.read())["id"]
    if got != want:
        sys.exit("workload %s, not %d" % (got, want))
    c.request("DELETE", "/api/v1/workloads/%d" % got, None, h)
    r = c.getresponse()
    r.read()
    if r.status >= 300:
        sys.exit("DELETE %d: %d" % (got, r.status))
EOF

b=$(gang)
tap_is "the second gang is workload 1001" "$b" 1001
tap_ok "it runs beside the first" up "$b"
tap_is "its MASTER_PORT is the next one free" "$(port_of "$b" 0)" 29502
tap_is "both its tasks have it" "$(port_of "$b" 1)" 29502
tap_ok "the first still runs" gang_up "$a"
tap_ok "describe shows the port" contains "$($GP --json describe "$b")" '"master_port": *29502'

gpd_stop
tap_ok "gpupoold starts again" emulated_start "$D" 6
c=$(gang)
tap_is "the third gang is workload 1002" "$c" 1002
tap_ok "it runs beside the two" up "$c"
tap_is "its MASTER_PORT is neither's (1001 holds its preferred one)" "$(port_of "$c" 0)" 29503
tap_ok "the first still runs" gang_up "$a"
tap_ok "the second still runs" gang_up "$b"
tap_done
