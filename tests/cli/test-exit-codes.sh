#!/bin/sh
# The exit codes of gpupool (src/cli/cli.h, `gpupool help exit-codes`,
# docs/cli.md): each one the table documents, produced by a real case, against
# a real gpupoold where a daemon produces it (tests/daemon/lib.sh) and against
# the stand-in server tests/cli/fake-server.pl where it cannot (a server
# error, an answer that is not JSON, a status no code names). The help, the
# header and the document list the same codes.
. tests/cli/lib.sh

# ---- The table: help, cli.h and docs/cli.md agree ---------------------------

help=$("$GP" help exit-codes)
doc=$(sed -n '/^## Exit codes/,/^$/p;/^| [0-9] |/p' docs/cli.md)
man=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH/p' contrib/gpupool.1 | tr '\n' ' ')
for n in 0 1 2 3 4 5 6 7 8 9; do
    tap_ok "code $n is in gpupool help exit-codes" contains "$help" "^  $n  "
    # The doc's meaning is the help's, with the HTTP status or the commands
    # it comes from (code 9 had been "reserved" in the doc while in use).
    said=$(printf '%s\n' "$help" | sed -n "s/^  $n  //p")
    tap_ok "code $n is in docs/cli.md, as the help says it" contains "$doc" "^| $n | $said"
    tap_ok "code $n is in the man page" contains "$man" "[;S] $n [a-z]"
    tap_ok "code $n is in src/cli/cli.h" grep -q "XX([A-Z]*, $n, " src/cli/cli.h
done
tap_is "help lists exactly ten codes" "$(printf '%s\n' "$help" | grep -c '^  [0-9]  ')" 10

# ---- Against gpupoold ------------------------------------------------------

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts" cli_gpd_start "$D"
ADMIN=$GPUPOOL_TOKEN
"$GP" queue create A --deserved 2 >/dev/null
"$GP" queue create a1 --parent A --deserved 2 >/dev/null
ALICE=$("$GP" token create --user alice --role researcher --scope a1 | head -1)

tap_ok "0: success (whoami)" code 0 whoami
tap_ok "0: success (submit)" code 0 submit --project a1 --gpu 0.5 -- sleep 600
tap_ok "2: help of no such command" code 2 help frobnicate
tap_ok "2: no command at all" code 2
tap_ok "2: an unknown command" code 2 frobnicate
tap_ok "2: an unknown option" code 2 --frobnicate list
tap_ok "2: a bad number" code 2 list --limit 0
tap_ok "2: a bad duration" code 2 usage --step soon
tap_ok "2: a step under a minute" code 2 usage --step 30s
tap_ok "2: describe without an id" code 2 describe
tap_ok "3: nothing listens" code 3 --server http://127.0.0.1:1 whoami
tap_ok "3: no such host" code 3 --server http://nonexistent.invalid:8642 whoami
tap_ok "4: an unknown token" code 4 --token gp_wrong whoami
tap_ok "4: no token at all" env -u GPUPOOL_TOKEN sh -c '"$0" whoami >/dev/null 2>&1; [ $? = 4 ]' "$GP"
tap_ok "4: a researcher lists tokens" code 4 --token "$ALICE" token list
tap_ok "4: a researcher creates a queue" code 4 --token "$ALICE" queue create x --parent A
tap_ok "5: no such workload" code 5 describe 999
tap_ok "5: delete no such workload" code 5 delete 999
tap_ok "5: no such queue" code 5 queue delete nosuch
tap_ok "5: no such token" code 5 token delete 999
tap_ok "6: a queue under no such parent" code 6 queue create x --parent nosuch
tap_ok "6: a submission to no such project" code 6 submit --project nosuch --gpu 1 -- true
tap_ok "6: a usage period that ends before it starts" code 6 usage --from 1d --to 2d
id=$("$GP" submit --project a1 --gpu 1 -- sleep 600 | sed -n 's/^workload \([0-9]*\) .*/\1/p')
tap_ok "7: resume what is not suspended" code 7 resume "$id"
tap_ok "0: delete" code 0 delete "$id"
tap_ok "7: delete what is deleted" code 7 delete "$id"
tap_ok "7: a department over a project with workloads" code 7 queue create sub --parent a1
gpd_stop
tap_ok "3: the daemon has stopped" code 3 whoami

# ---- Against the stand-in server: what a daemon does not say on demand --------

SRV_PID=
# answer STATUS BODY: the stand-in's answers from now on.
answer() {
    printf 'HTTP/1.1 %s X\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
        "$1" "$(printf '%s' "$2" | wc -c)" "$2" >"$TMP/answer"
}
answer 200 '{}'
perl tests/cli/fake-server.pl "$TMP/answer" "$TMP/port" "$TMP/requests" &
SRV_PID=$!
GPD_OTHERS=$SRV_PID
n=0
while [ ! -s "$TMP/port" ] && [ $n -lt 100 ]; do
    sleep 0.1
    n=$((n + 1))
done
export GPUPOOL_SERVER=http://127.0.0.1:$(cat "$TMP/port") GPUPOOL_TOKEN=t
answer 200 'not json'
tap_ok "1: an answer that is not JSON" code 1 whoami
answer 418 '{"error":{"message":"a teapot"}}'
tap_ok "1: a status no code names (418)" code 1 whoami
answer 405 '{"error":{"message":"method not allowed"}}'
tap_ok "2: a method the route does not take (405)" code 2 whoami
answer 413 '{"error":{"message":"body too large"}}'
tap_ok "6: a body too large (413)" code 6 whoami
answer 500 '{"error":{"message":"internal error"}}'
tap_ok "8: an internal error (500)" code 8 whoami
answer 507 '{"error":{"message":"the store is full"}}'
tap_ok "8: the store is full (507)" code 8 submit --project p -- true
answer 503 '{"error":{"message":"busy"}}'
tap_ok "8: unavailable (503)" code 8 list
tap_ok "the server's message is shown" contains "$(cat "$TMP/err")" "busy"
answer 200 '{"workloads":[]}'
tap_ok "0: an empty list" code 0 list
tap_done
