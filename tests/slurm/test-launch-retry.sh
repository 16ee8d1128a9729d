#!/bin/sh
# A Slurm controller that cannot answer for a while: sbatch fails with
# Slurm's words for a busy or unreachable controller. Such a launch is
# tried again, with the same key, and the workload succeeds, never failed.
# The worst case first: the controller took the job and then sbatch timed
# out, so gpupool does not know the job exists; the next try finds it by its
# name and adopts it, and Slurm runs it once. A failure that will not pass
# (a partition Slurm does not have) still fails the workload at once, with
# Slurm's reason.
#
# The flaky sbatch is a wrapper in the executor's bin_dir (bin_dir=), the
# other commands the real ones; a file says how its next calls fail.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh

D=$TMP/pool
BIN=$TMP/bin
mkdir -p "$D" "$BIN"
for c in sinfo scancel scontrol srun sacct; do
    p=$(command -v "$c") && ln -s "$p" "$BIN/$c"
done
real=$(command -v sbatch)
# squeue fails a lookup by name (a launch tried again asks Slurm for its job
# by its name) while $BIN/noname exists.
cat >"$BIN/squeue" <<EOF
#!/bin/sh
case "\$*" in *--name=*) [ -e "$BIN/noname" ] && {
    echo "squeue: error: Socket timed out on send/recv operation" >&2; exit 1; } ;; esac
exec $(command -v squeue) "\$@"
EOF
chmod +x "$BIN/squeue"
# $BIN/fail: one word a line, each the way one call fails: "taken" (the job
# is submitted, then the answer times out), "timeout" (nothing submitted),
# "refused" (a partition Slurm does not know); no line left: the real sbatch.
cat >"$BIN/sbatch" <<EOF
#!/bin/sh
if [ -e "$BIN/down" ]; then
    date +%s.%N >>"$BIN/down-calls"
    echo "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)" >&2
    exit 1
fi
how=\$(head -1 "$BIN/fail" 2>/dev/null)
[ -n "\$how" ] && sed -i 1d "$BIN/fail"
echo "\$how" >>"$BIN/calls"
case \$how in
taken) "$real" "\$@" >/dev/null
    echo "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation" >&2
    exit 1 ;;
timeout) echo "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)" >&2
    exit 1 ;;
refused) echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2
    exit 1 ;;
esac
exec "$real" "\$@"
EOF
chmod +x "$BIN/sbatch"
SX_CONFIG_EXTRA="bin_dir=$BIN"
tap_ok "gpupoold starts with the flaky sbatch" sx_start "$D"
$GP queue create R --deserved 8 >/dev/null && $GP queue create r1 --parent R --deserved 8 >/dev/null
tap_is "queues created" "$?" 0

printf 'taken\n' >"$BIN/fail"
$GP submit --project r1 --gpu 1 -- sh -c 'echo ran once' >/dev/null
tap_ok "a launch whose answer timed out succeeds in the end" wait_until 90 has_count 1 succeeded r1
tap_ok "its events say the launch had to wait, and why" \
    sh -c "$GP describe 1 | grep -q 'not launched yet (sbatch failed: .*Socket timed out.*); trying again in'"
tap_is "the next try found the job by its name: sbatch was called once" "$(wc -l <"$BIN/calls")" 1
headers=$(grep -c '^=== gpupool: workload 1 task 0 attempt 1 started' "$D"/logs/1/task-0.log)
tap_is "that job ran, and no other (one job header)" "$headers" 1
tap_is "its command ran once" "$(grep -c '^ran once$' "$D"/logs/1/task-0.log)" 1
tap_is "Slurm has one job of it" "$(sx_jobs all | grep -c "\\.w1\\.")" 1

printf 'timeout\ntimeout\n' >"$BIN/fail"
$GP submit --project r1 --gpu 1 -- true >/dev/null
tap_ok "a controller out of reach for two tries: the third launches it" \
    wait_until 90 has_count 2 succeeded r1
tap_is "sbatch was called three more times" "$(wc -l <"$BIN/calls")" 4
tap_is "Slurm has one job of it" "$(sx_jobs all | grep -c "\\.w2\\.")" 1

# The controller out of reach for a while, four workloads to launch: one
# try per hold of the whole pool's launches (1 s, 2 s, 4 s ...), not one
# per workload and per second.
touch "$BIN/down"
for i in 1 2 3 4; do $GP submit --project r1 --gpu 1 -- true >/dev/null; done
down_calls() { [ "$(wc -l <"$BIN/down-calls")" -ge 3 ]; }
tap_ok "while it is down, sbatch is tried again" wait_until 60 down_calls
rm -f "$BIN/down"
tap_ok "once it is back, all four launch and succeed" wait_until 90 has_count 6 succeeded r1
tap_ok "the tries were spread out: 2 s or more from the first to the third" \
    awk 'NR == 1 { t = $1 } NR == 3 { exit !($1 - t >= 2) }' "$BIN/down-calls"
tap_is "Slurm has one job of each" "$(sx_jobs all | grep -c '\.w[3-6]\.')" 4

printf 'refused\n' >"$BIN/fail"
$GP submit --project r1 --gpu 1 -- true >/dev/null
tap_ok "a launch Slurm refuses fails the workload" wait_until 30 has_count 1 failed r1
tap_ok "with Slurm's reason" sh -c "$GP describe 7 | grep -q 'could not be launched: sbatch failed: .*Invalid partition'"
tap_is "and was not tried again" "$(wc -l <"$BIN/calls")" 9

# Deleted while its launch waits to be tried again, when Slurm had taken
# the job before its answer was lost: the job is cancelled by its name, so
# that a deleted workload's command never runs on.
touch "$BIN/noname"
printf 'taken\n' >"$BIN/fail"
$GP submit --project r1 --gpu 1 -- sleep 600 >/dev/null
deferred_twice() { [ "$($GP describe 8 | grep -c 'not launched yet')" -ge 2 ]; }
tap_ok "its launch is tried again and cannot find the job" wait_until 60 deferred_twice
tap_is "Slurm has its job" "$(sx_jobs all | grep -c '\.w8\.')" 1
$GP delete 8 >/dev/null
tap_ok "deleted" wait_until 30 has_count 1 deleted r1
w8_gone() { [ "$(sx_jobs PENDING,RUNNING | grep -c '\.w8\.')" = 0 ]; }
tap_ok "its job is cancelled in Slurm" wait_until 60 w8_gone
rm -f "$BIN/noname"

# gpupoold killed while a launch waits to be tried again, its job taken by
# Slurm before the answer was lost: the restart keeps the workload starting
# (its attempt was never known to run, so it is not lost) and tries the same
# key again, which finds the job by its name and adopts it: one job, one
# run of its command.
touch "$BIN/noname"
printf 'taken\n' >"$BIN/fail"
$GP submit --project r1 --gpu 1 -- sh -c 'echo ran once; sleep 3' >/dev/null
deferred9() { $GP describe 9 | grep -q 'not launched yet'; }
tap_ok "a launch waits to be tried again" wait_until 60 deferred9
gpd_kill9
rm -f "$BIN/noname"
tap_ok "gpupoold starts again" sx_start "$D"
tap_ok "the workload succeeds" wait_until 90 has_count 7 succeeded r1
tap_is "it is still attempt 1: the restart did not count it lost" \
    "$($GP describe 9 | grep -c 'attempt 2')" 0
tap_is "sbatch was called once for it (the taken job), not again" "$(wc -l <"$BIN/calls")" 11
tap_is "Slurm has one job of it" "$(sx_jobs all | grep -c '\.w9\.')" 1
tap_is "its command ran once" "$(grep -c '^ran once$' "$D"/logs/9/task-0.log)" 1

sx_cleanup
tap_done
