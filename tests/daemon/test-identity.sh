#!/bin/sh
# Workloads run as their token's Unix user. As root (CI runs the tests as
# root), the daemon starts each task as that user, in its own session, with
# no new privileges and a clean environment; root workloads are refused
# unless the daemon allows them. Two test users, made here and removed at the
# end, check what one tenant's task can and cannot reach: the store, the
# tokens, another user's logs and checkpoints, another user's processes, its
# own cgroup and supervisor. Deleting a task that tried to escape leaves
# nothing of it running.
. tests/lib/tap.sh
. tests/daemon/lib.sh

skip_unless_root_useradd
UA=gpta$$
UB=gptb$$
useradd -m -d "$TMP/home-$UA" "$UA" && useradd -m -d "$TMP/home-$UB" "$UB" || exit 1
chmod 711 "$TMP"
trap 'cleanup_all' EXIT
cleanup_all() {
    pkill -9 -u "$UA" 2>/dev/null
    pkill -9 -u "$UB" 2>/dev/null
    cleanup
    userdel "$UA" 2>/dev/null
    userdel "$UB" 2>/dev/null
}

D=$TMP/pool
mkdir -p "$D"
export GPD_SECRET=daemon-only
GPD_ROOT=no
tap_ok "gpupoold starts as root, without --allow-root-workloads" gpd_start "$D" --period 300ms --poll 200ms
ADMIN=$GPUPOOL_TOKEN
$GP queue create dept >/dev/null && $GP queue create proj --parent dept >/dev/null

out=$($GP submit --project proj -- true 2>&1)
tap_ok "the admin token's workloads would run as root: refused" contains "$out" "root"
tap_ok "the refusal suggests a token of a real user" contains "$out" "token create --user"
out=$($GP token create --user r --role researcher --scope proj --unix-user root 2>&1)
tap_ok "a token for the Unix user root is refused" contains "$out" "unix_user.*root"
TA=$($GP token create --user "$UA" --role researcher --scope proj | head -1)
TB=$($GP token create --user "$UB" --role researcher --scope proj | head -1)
TX=$($GP token create --user nobody$$ --role researcher --scope proj | head -1)
tap_ok "tokens for the two users" test -n "$TA" -a -n "$TB"
tap_ok "token list shows the Unix user" sh -c "$GP token list | grep -q '$UA *$UA'"

as() { # as TOKEN COMMAND...
    t=$1
    shift
    GPUPOOL_TOKEN=$t "$@"
}
state_of() {
    $GP --json describe "$1" 2>/dev/null | grep -o '"state": *"[a-z]*"' | head -1 | sed 's/.*"\([a-z]*\)"$/\1/'
}
is_state() { [ "$(state_of "$1")" = "$2" ]; }
id_of() { grep -o '[0-9][0-9]*' | head -1; }

# Bob's task: holds a checkpoint and runs until deleted.
B=$(as "$TB" $GP submit --project proj --workdir "$TMP/home-$UB" -- sh -c 'echo bob-secret > "$GPUPOOL_CHECKPOINT_DIR/ckpt"; echo ready; exec sleep 3000' | id_of)
tap_ok "bob's workload runs" wait_until 30 is_state "$B" running
tap_ok "bob's log is written" wait_until 10 sh -c "$GP logs $B | grep -q ready"

cat >"$TMP/probe.sh" <<SH
echo "uid=\$(id -u) user=\$USER home=\$HOME secret=\${GPD_SECRET:-none}"
grep NoNewPrivs /proc/self/status | tr -d ' \t'
echo "session=\$(ps -o sid= -p \$\$ | tr -d ' ') pid=\$\$"
cat $D/admin.token >/dev/null 2>&1 && echo "read:token" || echo "denied:token"
cat $D/gpupool.db >/dev/null 2>&1 && echo "read:store" || echo "denied:store"
cat $D/logs/$B/task-0.log >/dev/null 2>&1 && echo "read:log" || echo "denied:log"
cat $D/checkpoints/$B/ckpt >/dev/null 2>&1 && echo "read:ckpt" || echo "denied:ckpt"
ls $D >/dev/null 2>&1 && echo "read:datadir" || echo "denied:datadir"
for p in \$(pgrep -u $UB sleep); do kill -TERM \$p 2>/dev/null && echo "signalled:bob" || echo "denied:bob"; done
sleep 300 & child=\$!
for f in /sys/fs/cgroup/cpu/cgroup.procs /sys/fs/cgroup/memory/cgroup.procs /sys/fs/cgroup/cgroup.procs; do
    [ -e \$f ] && { echo \$child > \$f 2>/dev/null && echo "left:cgroup" || echo "denied:cgroup"; }
done
kill -9 \$PPID 2>/dev/null && echo "killed:supervisor" || echo "denied:supervisor"
echo probe-done
wait
SH
chmod 644 "$TMP/probe.sh"
A=$(as "$TA" $GP submit --project proj --workdir "$TMP/home-$UA" -- sh "$TMP/probe.sh" | id_of)
tap_ok "alice's probe runs" wait_until 30 sh -c "$GP logs $A | grep -q probe-done"
log=$($GP logs "$A")
uid_a=$(id -u "$UA")
tap_ok "it runs as alice, with her HOME and none of the daemon's environment" \
    contains "$log" "uid=$uid_a user=$UA home=$TMP/home-$UA secret=none"
tap_ok "with no new privileges" contains "$log" "NoNewPrivs:1"
sid=$(printf '%s\n' "$log" | sed -n 's/^session=\([0-9]*\) pid=\([0-9]*\)$/\1 \2/p')
tap_ok "in a session of its own" test -n "$sid" -a "${sid% *}" = "${sid#* }"
for what in token store log ckpt datadir bob cgroup supervisor; do
    tap_ok "alice cannot reach: $what" contains "$log" "denied:$what"
done
tap_ok "bob's workload still runs" is_state "$B" running

tap_ok "deleting alice's workload succeeds" $GP delete "$A"
tap_ok "nothing of alice's runs any more" wait_until 30 sh -c "! pgrep -u $UA >/dev/null"

out=$(as "$TA" $GP submit --project proj --workdir "$D" -- true 2>&1)
tap_ok "a workdir in the data directory is refused" contains "$out" "workdir.*data directory"
mkdir -m 700 "$TMP/root-only"
W=$(as "$TA" $GP submit --project proj --workdir "$TMP/root-only/w" -- true | id_of)
tap_ok "a workdir alice may not create fails her workload" wait_until 30 is_state "$W" failed
tap_ok "and says why" sh -c "$GP describe $W | grep -q 'workdir: cannot enter'"
# A program's name looked up in a PATH that alice may not search: the lookup
# was made as root, and its answer (cannot execute .../root-only/hidden, or
# not in the task's PATH) told her which programs exist where she cannot look.
printf '#!/bin/sh\n' >"$TMP/root-only/hidden" && chmod 755 "$TMP/root-only/hidden"
H=$(as "$TA" $GP submit --project proj --workdir /tmp --env "PATH=$TMP/root-only" -- hidden | id_of)
M=$(as "$TA" $GP submit --project proj --workdir /tmp --env "PATH=$TMP/root-only" -- missing | id_of)
tap_ok "a program where alice may not search fails her workload" wait_until 30 is_state "$H" failed
tap_ok "so does a program that is nowhere" wait_until 30 is_state "$M" failed
reason_of() { $GP describe "$1" | sed -n 's/^Reason: *//p'; }
tap_is "and both say the same: nothing tells that the first exists" \
    "$(reason_of "$H" | sed 's/hidden/PROG/g')" "$(reason_of "$M" | sed 's/missing/PROG/g')"
# A workdir through a directory alice may not search, and out of it again
# with "..": resolved as root, the answer (refused as the data directory, or
# accepted) told her whether the name she went through existed there.
mkdir "$TMP/root-only/sub"
through() {
    as "$TA" $GP submit --project proj --workdir "$TMP/root-only/$1/../../pool" -- true 2>&1 |
        sed "s/$1/NAME/g"
}
tap_is "a workdir through where alice may not search: nothing tells that a name exists there" \
    "$(through sub)" "$(through none)"
# Jupyter's --allow-root only where the task runs as root: alice's notebook
# runs as alice, and gpupool notebook passed the flag for everyone.
tap_ok "whoami says alice's tasks do not run as root" \
    sh -c "GPUPOOL_TOKEN=$TA $GP --json whoami | grep -q '\"runs_as_root\": *false'"
tap_ok "and the admin's (root's) do" sh -c "$GP --json whoami | grep -q '\"runs_as_root\": *true'"
as "$TA" $GP notebook --project proj >/dev/null 2>"$TMP/notebook.err" &
NB_PID=$!
nb_id() { sed -n 's/^gpupool: workload \([0-9]*\)$/\1/p' "$TMP/notebook.err"; }
has_nb() { [ -n "$(nb_id)" ]; }
tap_ok "gpupool notebook submits alice's notebook" wait_until 30 has_nb
N=$(nb_id)
nbspec=$($GP --json describe "$N" 2>&1)
tap_ok "its command is Jupyter's" contains "$nbspec" '"--no-browser"'
tap_ok "without --allow-root" sh -c "! printf '%s' \"\$1\" | grep -q allow-root" - "$nbspec"
# Jupyter's port in the task is named in its command, which the project's
# members and everyone on the node (ps) see: it was the token's first two
# bytes (20000 + their number modulo 40000), 15 of its bits. Drawn apart, it
# agrees with them by chance once in 40,000 runs.
nb_port=$(printf '%s' "$nbspec" | sed -n 's/.*"--port=\([0-9]*\)".*/\1/p' | head -1)
nb_token=$(printf '%s' "$nbspec" | sed -n 's/.*"JUPYTER_TOKEN": *"\([0-9a-f]*\)".*/\1/p' | head -1)
nb_of_token=none
[ -n "$nb_token" ] && nb_of_token=$((20000 + 0x$(printf '%s' "$nb_token" | cut -c1-4) % 40000))
tap_ok "its port in the task tells nothing of its token ($nb_port, $nb_of_token)" \
    test -n "$nb_port" -a "$nb_of_token" != none -a "$nb_port" != "$nb_of_token"
kill "$NB_PID" 2>/dev/null
wait "$NB_PID" 2>/dev/null
$GP delete "$N" >/dev/null 2>&1
X=$(as "$TX" $GP submit --project proj --workdir /tmp -- true | id_of)
tap_ok "a workload of a Unix user this node lacks fails" wait_until 30 is_state "$X" failed
tap_ok "and says why" sh -c "$GP describe $X | grep -q 'no Unix user'"
tap_done
