#!/bin/sh
# test-slurm-sampler.sh — the GPU use sampler of gpupool-slurm-session,
# without a cluster: `serve NAME --gpu-use FD --nvml LIB -- COMMAND` with
# the tests' fake NVML (4 GPUs, 10, 20, 30 and 40 % busy, set in a fake.env
# beside it) writes the record of the GPUs its CUDA_VISIBLE_DEVICES names
# (numbers, or a GPU's UUID), in that order, into the descriptor; a job
# without GPUs ("NoDevFiles", empty or unset) gets none, and neither does
# one whose NVML cannot be loaded, whose command runs all the same. The
# command never gets the descriptor. Then `sample FD LIB PID`, a batch task's
# sampler.
set -u
build=${GP_BUILD:-build}
. tests/lib/tap.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp "$build/fake/libcuda.so.1" "$build/fake/libnvidia-ml.so.1" "$T"/
printf 'GPUPOOL_FAKE_GPUS=4\nGPUPOOL_FAKE_BUSY=10,20,30,40\n' >"$T/fake.env"
# The fake's UUID of its GPU 2 (gpfake_uuid, tests/fake/fake_state.c).
uuid2=GPU-67706661-6b65-2d67-7075-2d3030303002

# sample NAME VISIBLE SECONDS [LIB]: serves a command that waits (at most
# SECONDS; the sampler writes every 5 s) for the record, then says whether
# it has a descriptor 8; VISIBLE "unset" leaves CUDA_VISIBLE_DEVICES out.
sample() {
    rec=$T/$1.rec
    : >"$rec"
    (
        [ "$2" = unset ] && unset CUDA_VISIBLE_DEVICES || export CUDA_VISIBLE_DEVICES="$2"
        exec "$build/gpupool-slurm-session" serve "gp-sampler-$$-$1" --gpu-use 8 \
            --nvml "${4:-$T/libnvidia-ml.so.1}" -- sh -c \
            'i=0; while [ ! -s "$0" ] && [ $i -lt $(($1 * 10)) ]; do sleep 0.1; i=$((i+1)); done
             [ -e /proc/self/fd/8 ] && echo "fd 8 leaked" || echo "no fd 8"' "$rec" "$3" \
            8<>"$rec" >"$T/$1.out" 2>&1
    ) &
}
sample two 3,1 60
sample uuid "$uuid2" 60
# Past one write period: nothing was written.
sample none NoDevFiles 7
sample unset unset 7
sample nolib 0 7 "$T/no-such-libnvidia-ml.so.1"
wait
rec() { tr -s ' ' <"$T/$1.rec" | sed 's/ $//; s/at=[0-9]* //'; }
tap_is "the GPUs CUDA_VISIBLE_DEVICES names, in its order" "$(rec two)" \
    "gpupool-gpu-use n=2 busy=400,200 mem=0,0"
tap_ok "the record is one 512-byte write, newline last" \
    sh -c "[ \$(wc -c <'$T/two.rec') = 512 ] && tail -c 1 '$T/two.rec' | od -c | grep -q '\\\\n'"
tap_ok "written now" sh -c "at=\$(sed -n 's/.*at=\\([0-9]*\\).*/\\1/p' '$T/two.rec'); [ \$((\$(date +%s) - at)) -lt 30 ]"
tap_is "a GPU named by its UUID" "$(rec uuid)" "gpupool-gpu-use n=1 busy=300 mem=0"
tap_is "NoDevFiles: no GPU, no record" "$(rec none)" ""
tap_is "CUDA_VISIBLE_DEVICES unset: no record" "$(rec unset)" ""
tap_is "NVML not loadable: no record" "$(rec nolib)" ""
tap_ok "and the session is told why" grep -q "GPU use is not sampled.*no-such-libnvidia-ml" "$T/nolib.out"
tap_ok "the command does not get the descriptor" grep -q "^no fd 8" "$T/two.out"

# `sample FD LIB PID`, a batch task's sampler: started in the background by
# a shell (its job script, PID), it writes the same record, shrugs off the
# checkpoint signal, and ends with the shell that started it.
: >"$T/batch.rec"
CUDA_VISIBLE_DEVICES=0 sh -c '"$0" sample 8 "$1" $$ 8<>"$2" & echo $! >"$3"; exec sleep 600'     "$build/gpupool-slurm-session" "$T/libnvidia-ml.so.1" "$T/batch.rec" "$T/batch.pid" &
shell=$!
i=0
while [ ! -s "$T/batch.rec" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
tap_is "a batch task's sampler writes the record" "$(rec batch)" "gpupool-gpu-use n=1 busy=100 mem=0"
sampler=$(cat "$T/batch.pid")
ign=$(awk '/^SigIgn:/ { print $2 }' "/proc/$sampler/status")
tap_ok "it ignores the checkpoint signal (SIGTERM)" test $((0x$ign & 0x4000)) -ne 0
kill -KILL "$shell"
i=0
while kill -0 "$sampler" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
tap_ok "it ends with the shell that started it" sh -c "! kill -0 $sampler 2>/dev/null"
# A sampler whose script (the PID it is given) is not its parent any more,
# the script having ended before the sampler could ask to end with it, ends
# at once rather than sample with nothing to end it.
sleep 600 &
other=$!
: >"$T/orphan.rec"
CUDA_VISIBLE_DEVICES=0 timeout 30 "$build/gpupool-slurm-session" sample 8 "$T/libnvidia-ml.so.1" \
    "$other" 8<>"$T/orphan.rec"
tap_is "a sampler whose script has ended ends at once" "$?" 0
tap_is "and writes nothing" "$(wc -c <"$T/orphan.rec")" 0
kill "$other"
tap_is "malformed: a descriptor out of range" \
    "$("$build/gpupool-slurm-session" sample 2 "$T/libnvidia-ml.so.1" 2>&1 >/dev/null | head -1)" \
    "usage: gpupool-slurm-session serve NAME [--gpu-use FD --nvml LIB] -- COMMAND [ARG...]"
tap_done
