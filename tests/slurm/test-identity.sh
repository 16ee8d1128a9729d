#!/bin/sh
# Jobs run as their workload's Unix user. gpupoold, as root, submits each
# task's job with `sbatch --uid --gid` of its token's Unix user, so that the
# job's processes run as that user and squeue shows the job as theirs; root
# workloads are refused unless the daemon allows them. The job reaches its
# checkpoint directory and its log, and none of the daemon's data: the
# store, the token, the task directory that holds its job id. Once it has
# ended, Slurm's accounting (sacct) lists its job with the user, the
# workload's name and its project. A test user is made here (and in Slurm's
# accounting) and removed at the end.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh

UA=gpsx$$
sx_test_user "$UA"
trap 'cleanup_all' EXIT
cleanup_all() {
    pkill -9 -u "$UA" 2>/dev/null
    [ "$GP_SLURM_ACCOUNTING" = 1 ] && sacctmgr -i delete user "$UA" >/dev/null 2>&1
    userdel "$UA" 2>/dev/null
    sx_cleanup
}
UID_A=$(id -u "$UA")
[ "$GP_SLURM_ACCOUNTING" = 1 ] && sacctmgr -i add user "$UA" account=gpupool >/dev/null

D=$TMP/pool
mkdir -p "$D"
GPD_ROOT=no
export GPD_SECRET=daemon-only
tap_ok "gpupoold starts as root, without --allow-root-workloads" sx_start "$D"
$GP queue create U --deserved 8 >/dev/null && $GP queue create u1 --parent U --deserved 8 >/dev/null
out=$($GP submit --project u1 --cpu 1 -- true 2>&1)
tap_ok "the admin token's workloads would run as root: refused" contains "$out" "root"
TA=$($GP token create --user "$UA" --role researcher --scope u1 | head -1)
tap_ok "a token for the test user" test -n "$TA"

cat >"$TMP/home-$UA/probe.sh" <<SH
echo "uid=\$(id -u) user=\$USER home=\$HOME logname=\$LOGNAME"
echo "ckpt=\$GPUPOOL_CHECKPOINT_DIR pwd=\$(pwd)"
echo probe > "\$GPUPOOL_CHECKPOINT_DIR/mine" && echo "wrote:ckpt"
cat $D/admin.token >/dev/null 2>&1 && echo "read:token" || echo "denied:token"
cat $D/gpupool.db >/dev/null 2>&1 && echo "read:store" || echo "denied:store"
ls $D >/dev/null 2>&1 && echo "read:datadir" || echo "denied:datadir"
ls $D/slurm-state >/dev/null 2>&1 && echo "read:statedir" || echo "denied:statedir"
echo 1 > $D/slurm-state/w\$GPUPOOL_WORKLOAD_ID.t0.a1/jobid 2>/dev/null && echo "wrote:jobid" || echo "denied:jobid"
tr '\\0' '\\n' </proc/\$PPID/environ | grep -q GPD_SECRET && echo "read:daemon-env" || echo "clean:env"
echo ready
sleep 6
SH
chmod 644 "$TMP/home-$UA/probe.sh"
W=$(GPUPOOL_TOKEN=$TA $GP submit --project u1 --cpu 1 --workdir "$TMP/home-$UA/work" -- sh "$TMP/home-$UA/probe.sh" | grep -o '[0-9][0-9]*' | head -1)
tap_ok "the user's workload runs" wait_until 30 has_count 1 running u1
tap_ok "squeue shows the job as the user's" \
    wait_until 20 sh -c "squeue -h -o '%j %u %T' | grep -q '^gp-$SX_TAG\.w$W\.t0\.a1 $UA RUNNING$'"
pid_as() { pgrep -u "$UID_A" -f "probe.sh" >/dev/null; }
tap_ok "the job's process runs with the user's uid" wait_until 20 pid_as
tap_ok "it succeeds" wait_until 40 has_count 1 succeeded u1
log=$($GP logs "$W")
tap_ok "logs: uid and environment are the user's" contains "$log" \
    "uid=$UID_A user=$UA home=$TMP/home-$UA logname=$UA"
tap_ok "logs: it starts in its working directory" contains "$log" "ckpt=$D/ckpt/$W/a1 pwd=$TMP/home-$UA/work"
tap_ok "which it made as the user" test "$(stat -c %U "$TMP/home-$UA/work")" = "$UA"
tap_ok "it writes its checkpoint directory" contains "$log" "wrote:ckpt"
tap_ok "the checkpoint directory is the user's alone" \
    test "$(stat -c '%U %a' "$D/ckpt/$W")" = "$UA 700"
tap_ok "it cannot read the token" contains "$log" "denied:token"
tap_ok "it cannot read the store" contains "$log" "denied:store"
tap_ok "it cannot list the data directory" contains "$log" "denied:datadir"
tap_ok "it cannot list the state directory" contains "$log" "denied:statedir"
tap_ok "it cannot write a job id the daemon reads" contains "$log" "denied:jobid"
tap_ok "its job never had the daemon's environment" contains "$log" "clean:env"
tap_ok "its log is its own, not others'" test "$(stat -c '%U %a' "$D/logs/$W/task-0.log")" = "$UA 600"
# Accounting: the ended job as slurmdbd recorded it, one line
# "name|user|state|comment".
acct() {
    sacct -n -P -X --starttime=now-1hour --name="gp-$SX_TAG.w$W.t0.a1" -o JobName,User,State,Comment
}
acct_done() { acct | grep -q "|COMPLETED|"; }
if [ "$GP_SLURM_ACCOUNTING" = 1 ]; then
    tap_ok "sacct lists the ended job" wait_until 30 acct_done
    tap_is "sacct: its name, user, state, workload and project" "$(acct)" \
        "gp-$SX_TAG.w$W.t0.a1|$UA|COMPLETED|gpupool workload=$W task=0 attempt=1 user=$UA project=u1"
else
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - sacct # SKIP the test cluster runs without accounting (no slurmdbd or MariaDB)"
fi

# A slice runs as a step of gpupool's holder job of its GPU; its command
# becomes the user (setpriv) before it starts.
S=$(GPUPOOL_TOKEN=$TA $GP submit --project u1 --gpu 0.5 --workdir "$TMP/home-$UA" -- \
    sh -c 'echo "slice uid=$(id -u) user=$USER pwd=$(pwd)"' | grep -o '[0-9][0-9]*' | head -1)
tap_ok "a slice of the user's succeeds" wait_until 40 has_count 2 succeeded u1
tap_ok "and its command ran as the user" contains "$($GP logs "$S")" \
    "slice uid=$UID_A user=$UA pwd=$TMP/home-$UA"

out=$(GPUPOOL_TOKEN=$TA $GP submit --project u1 --cpu 1 -- sh -c 'exit 4' | grep -o '[0-9][0-9]*' | head -1)
tap_ok "its exit status reaches gpupool" wait_until 40 has_count 1 failed u1
tap_ok "describe says status 4" contains "$($GP describe "$out")" "exited with status 4"
tap_ok "no workload job of root's was started (holders are gpupool's)" \
    sh -c "! squeue -h --states=all -o '%j %u' | grep '^gp-$SX_TAG\.w' | grep -q ' root$'"
tap_done
