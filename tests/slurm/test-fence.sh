#!/bin/sh
# Two attempts at once, on a real Slurm cluster: the slurmd of a node running
# a workload is killed (SIGKILL), so its job's processes go on unseen; Slurm
# ends the job NODE_FAIL, gpupool records the attempt lost and runs attempt 2
# on another node while attempt 1 still writes checkpoints. Attempt 1 never
# writes the checkpoint attempt 2 uses (each checks, every step, that the
# checkpoint it reads is its own), and attempt 3, after a suspend, resumes
# from attempt 2's checkpoint, not from attempt 1's later steps.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh

D=$TMP/pool
mkdir -p "$D"
tap_ok "gpupoold starts on the slurm executor" sx_start "$D"
$GP queue create F --deserved 16 >/dev/null && $GP queue create f1 --parent F --deserved 16 >/dev/null
tap_is "queues created" "$?" 0

# Every second: one step; the checkpoint ("step", and "owner": the attempt
# that wrote it) is written atomically, after checking that the checkpoint
# is still the one this attempt wrote last.
cat >"$TMP/fence.sh" <<'SH'
ck=$GPUPOOL_CHECKPOINT_DIR a=$GPUPOOL_ATTEMPT step=0
[ -f "$ck/step" ] && step=$(cat "$ck/step") && echo "attempt $a resumed from step $step"
trap 'echo $step >"$ck/step.$a" && mv "$ck/step.$a" "$ck/step"; echo "attempt $a saved step $step"; exit 0' TERM
echo "$a" >"$ck/owner.$a" && mv "$ck/owner.$a" "$ck/owner"
while [ "$step" -lt 600 ]; do
    sleep 1 &
    wait $!
    step=$((step + 1))
    o=$(cat "$ck/owner")
    [ "$o" = "$a" ] || echo "attempt $a found its checkpoint written by attempt $o"
    echo "$a" >"$ck/owner.$a" && mv "$ck/owner.$a" "$ck/owner"
    echo $step >"$ck/step.$a" && mv "$ck/step.$a" "$ck/step"
    echo "$(date +%s) $$ a$a $step" >>"$TRACE"
done
SH
cluster() { tests/slurm/cluster.sh "$@" "$GP_SLURM_DIR" >/dev/null 2>&1; }
runs_attempt() { [ "$(sx_jobs RUNNING | grep -c "\.w1\.t0\.a$1 ")" = 1 ]; }
traced() { grep -q " a$1 $2\$" "$TMP/trace"; }

$GP submit --project f1 --gpu 1 --grace 10s --env "TRACE=$TMP/trace" -- sh "$TMP/fence.sh" >/dev/null
tap_ok "the workload runs" wait_until 60 runs_attempt 1
tap_ok "and checkpoints" wait_until 30 traced 1 3
node=$(sx_jobs RUNNING | grep '\.w1\.t0\.a1 ' | cut -d' ' -f4)
cluster kill-slurmd "$node"
tap_ok "its node's slurmd is killed: attempt 1 is recorded lost" \
    wait_until 120 sh -c "$GP describe 1 | grep -q 'lost'"
tap_ok "attempt 2 runs on another node" wait_until 60 runs_attempt 2
tap_ok "and checkpoints" wait_until 30 traced 2 "[0-9]*"
first2=$(grep ' a2 ' "$TMP/trace" | head -1 | cut -d' ' -f1)
zombie_after() { [ "$(awk -v t="$first2" '$3 == "a1" && $1 > t' "$TMP/trace" | wc -l)" -ge 3 ]; }
tap_ok "while attempt 1 goes on where it was" wait_until 30 zombie_after
zombie=$(grep ' a1 ' "$TMP/trace" | tail -1 | cut -d' ' -f2)
cluster start-node "$node"
gone() { ! kill -0 "$zombie" 2>/dev/null; }
tap_ok "the node is back and Slurm ends attempt 1's processes" wait_until 60 gone

$GP suspend 1 >/dev/null
tap_ok "suspended: attempt 2 saves its checkpoint and ends" wait_until 60 has_count 1 suspended f1
$GP resume 1 >/dev/null
tap_ok "resumed: attempt 3 runs" wait_until 60 runs_attempt 3
log=$($GP logs 1)
saved=$(echo "$log" | sed -n 's/^attempt 2 saved step //p' | tail -1)
tap_ok "attempt 2 saved its step ($saved)" test -n "$saved"
tap_ok "attempt 3 resumed from attempt 2's checkpoint" wait_until 30 sh -c \
    "$GP logs 1 | grep -q '^attempt 3 resumed from step $saved\$'"
tap_is "no attempt ever found its checkpoint written by another" \
    "$($GP logs 1 | grep 'found its checkpoint written by')" ""
$GP delete 1 >/dev/null
gone_all() { [ "$(sx_jobs RUNNING | wc -l)" = 0 ]; }
tap_ok "deleted: its job ends" wait_until 60 gone_all
kill -9 "$zombie" 2>/dev/null
tap_done
