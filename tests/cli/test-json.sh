#!/bin/sh
# gpupool --json, against a real gpupoold: every command that takes --json
# prints one valid JSON document on standard output, holding the fields
# docs/api.md documents for its answer, and nothing else; an error under
# --json is the server's JSON error (with its exit code). `token delete
# --json` printed a sentence instead.
. tests/cli/lib.sh

# json WANT_RC FIELDS CMD...: runs gpupool CMD; succeeds if it exits WANT_RC
# and its standard output is one JSON document with every field of FIELDS
# (space-separated paths, "workloads.0.id"; a number indexes an array).
json() {
    want=$1
    fields=$2
    shift 2
    code "$want" "$@" || return 1
    # shellcheck disable=SC2086 # fields is a list
    python3 - "$TMP/out" $fields <<'PY'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit("# not one JSON document: %s: %r" % (e, open(sys.argv[1]).read()[:300]))
for path in sys.argv[2:]:
    v = doc
    for k in path.split("."):
        try:
            v = v[int(k)] if isinstance(v, list) else v[k]
        except (KeyError, IndexError, TypeError, ValueError):
            sys.exit("# no field %s in %s" % (path, json.dumps(doc)[:300]))
PY
}

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts" cli_gpd_start "$D"

W="id name project user state attempt request submitted_ms"
Q="name parent depth leaf priority deserved limit fair_share allocated requested pending running"
tap_ok "queue create --json" json 0 "$Q" queue create A --deserved 2 --json
tap_ok "queue create --json (a project)" json 0 "name parent" queue create a1 --parent A --json
tap_ok "queue set --json" json 0 "name deserved.gpu" queue set a1 --deserved 1 --json
tap_ok "queue list --json" json 0 "queues.0.name queues.1.parent warnings" queue list --json
tap_ok "whoami --json" json 0 "user role scope unix_user" whoami --json
tap_ok "global --json before the command" json 0 "user role" --json whoami
tap_ok "token create --json" json 0 "id token user role scope unix_user" \
    token create --user alice --role researcher --scope a1 --json
tap_ok "token list --json" json 0 "tokens.0.id tokens.0.user tokens.0.role" token list --json
id=$(sed -n 's/.*"id": \([0-9]*\).*/\1/p' "$TMP/out" | tail -1)
tap_ok "token delete --json" json 0 "deleted" token delete "$id" --json
tap_ok "submit --json" json 0 "id state" submit --project a1 --gpu 0.5 --json -- sleep 600
"$GP" submit --project a1 --gpu 0.5 -- sleep 600 >/dev/null
tap_ok "--json after -- is the workload's" json 0 "id state" --json submit --project a1 -- echo --json
"$GP" submit --project a1 --gpu 0.5 -- sleep 600 >/dev/null
tap_ok "list --json" json 0 "workloads.0.id workloads.0.state workloads.0.project" list --json
tap_ok "list --json's rows" json 0 "$(echo "$W" | sed 's/[a-z_]*/workloads.0.&/g')" list --json
tap_ok "describe --json" json 0 "$W events" describe 1 --json
tap_ok "node list --json" json 0 "nodes.0.name nodes.0.gpus.0.model emulated" node list --json
tap_ok "usage --json" json 0 "from to step by keys" usage --json
tap_ok "suspend --json" json 0 "id state" suspend 1 --json
wait_until 60 has_count 1 suspended
tap_ok "resume --json" json 0 "id state" resume 1 --json
tap_ok "delete --json" json 0 "id state" delete 1 --json
"$GP" queue create a2 --parent A >/dev/null
tap_ok "queue delete --json" json 0 "deleted" queue delete a2 --json
tap_ok "delete --json of several: one document" json 0 "workloads.0.id workloads.1.state" \
    delete 2 4 --json
tap_ok "an error under --json is the server's JSON (describe 999)" \
    json 5 "error.message error.code" describe 999 --json
tap_ok "and its message is on standard error" contains "$(cat "$TMP/err")" "999"
tap_ok "an invalid request under --json (400)" json 6 "error.message error.field" \
    queue create x --parent nosuch --json
tap_done
