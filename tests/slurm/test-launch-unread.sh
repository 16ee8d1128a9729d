#!/bin/sh
# A gang whose launch was deferred, and whose launch tried again then fails
# for good: task 0's job was submitted, task 1's sbatch could not reach the
# controller (tried again), and when it is tried again gpupoold cannot read
# the workload's request back from the store (failstep.so fails that read
# with SQLITE_IOERR, which will not pass). The workload is failed and task
# 0's Slurm job is cancelled, so that nothing of it is left in Slurm; the
# job was left there once, with nothing in gpupool to find it.
. tests/lib/tap.sh
. tests/daemon/lib.sh
. tests/slurm/lib.sh
skip_if_sanitized

D=$TMP/pool
BIN=$TMP/bin
mkdir -p "$D" "$BIN"
for c in sinfo squeue scancel scontrol srun sacct; do
    p=$(command -v "$c") && ln -s "$p" "$BIN/$c"
done
real=$(command -v sbatch)
# $BIN/fail: one word a line, each the way one call fails: "timeout"
# (nothing submitted); an empty line or none left: the real sbatch.
cat >"$BIN/sbatch" <<SH
#!/bin/sh
how=\$(head -1 "$BIN/fail" 2>/dev/null)
[ -s "$BIN/fail" ] && sed -i 1d "$BIN/fail"
echo "\$how" >>"$BIN/calls"
case \$how in
timeout) echo "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)" >&2
    exit 1 ;;
esac
exec "$real" "\$@"
SH
chmod +x "$BIN/sbatch"
printf '\ntimeout\n' >"$BIN/fail"

# The read of one workload by its id: the scheduler's first two reads, to
# hand the submission to the engine and to launch it, pass; the third, to
# try its launch again, fails (and every one after it: the test asks about
# the workload through the list, which reads the store otherwise).
WL_GET='SELECT id, name, project, user, state, attempt, submitted_ms, updated_ms, request, spec, reason, exit_code, stop_kind, stop_deadline_ms FROM workloads WHERE id='
SX_CONFIG_EXTRA="bin_dir=$BIN"
GPD_TEST_FAIL_STEP=$WL_GET GPD_TEST_FAIL_STEP_NTH=3 GPD_TEST_FAIL_STEP_RC=10 \
    LD_PRELOAD=$B/tests/daemon/failstep.so \
    tap_ok "gpupoold starts, its reads of a workload failing from the third on" sx_start "$D"
$GP queue create G --deserved 8 >/dev/null && $GP queue create g1 --parent G --deserved 8 >/dev/null
tap_is "queues created" "$?" 0

$GP submit --project g1 --gang 2 --gpu 1 -- sleep 600 >/dev/null
tap_ok "the gang's launch, tried again, fails the workload" wait_until 60 has_count 1 failed g1
tap_is "sbatch was called twice: task 0's job, task 1's failed try" "$(wc -l <"$BIN/calls")" 2
reason=$(api GET '/api/v1/workloads?state=failed')
tap_ok "the reason: its request could not be read back" \
    contains "$reason" "could not be launched: cannot read its request back"
tap_is "Slurm had task 0's job" "$(sx_jobs all | grep -c '\.w1\.t0\.')" 1
tap_is "and never one of task 1's" "$(sx_jobs all | grep -c '\.w1\.t1\.')" 0
w1_gone() { [ "$(sx_jobs PENDING,RUNNING,SUSPENDED | grep -c '\.w1\.')" = 0 ]; }
tap_ok "task 0's job is cancelled in Slurm" wait_until 30 w1_gone
gpus_back() { ! sinfo -h -p gpu -O GresUsed:60 | grep -v ':0(IDX:N/A)' | grep -q .; }
tap_ok "and every GPU is Slurm's again" wait_until 30 gpus_back

sx_cleanup
tap_done
