#!/bin/sh
# tests/slurm/run.sh — the Slurm tier (`make test-slurm`): starts a real Slurm
# cluster on this host (cluster.sh, in a directory and on ports of its own),
# runs every tests/slurm/test-*.sh against it through gpupoold and the CLI,
# and stops the cluster. Where Slurm is not installed or cannot run, the tier
# prints "SKIP" with the reason instead of passing silently.
#
# Usage: tests/slurm/run.sh BUILD_DIR [TEST...]
set -u
build=$1
shift
tests=${*:-$(ls tests/slurm/test-*.sh)}
dir=$(mktemp -d /tmp/gpupool-slurm.XXXXXX)
# Ports of this cluster: a block of seven (slurmctld, four slurmd, MariaDB,
# slurmdbd), below the kernel's ephemeral range (where other daemons' port 0
# lands), away from Slurm's own 6817-6819 and below a gang's rendezvous ports
# (MASTER_PORT, 29500-30499: a slurmd there would take a gang's rank 0's
# port), starting from one the pid picks and moving on past any block with a
# port in use.
in_use() { grep -qi ":$(printf '%04X' "$1") " /proc/net/tcp /proc/net/tcp6 2>/dev/null; }
block_in_use() {
    for k in 0 1 2 3 4 5 6; do in_use $(($1 + k)) && return 0; done
    return 1
}
if [ -z "${GP_SLURM_PORT:-}" ]; then
    GP_SLURM_PORT=$((20000 + ($$ % 1000) * 8))
    while block_in_use "$GP_SLURM_PORT"; do
        GP_SLURM_PORT=$((GP_SLURM_PORT + 8))
    done
fi
export GP_SLURM_PORT GP_SLURM_DIR="$dir"
trap 'tests/slurm/cluster.sh stop "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT INT TERM
out=$(tests/slurm/cluster.sh start "$dir" 2>&1)
rc=$?
if [ "$rc" = 77 ]; then
    echo "SKIP tests/slurm: $(echo "$out" | sed -n 's/^cluster.sh: SKIP: //p')"
    for f in "$dir"/log/*.log; do
        [ -f "$f" ] && tail -n 3 "$f" | sed "s|^|#   $(basename "$f"): |"
    done
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
elif [ "$rc" != 0 ]; then
    echo "$out"
    echo "FAIL tests/slurm: the test cluster did not start"
    for f in "$dir"/log/*.log; do echo "== $f"; tail -n 5 "$f"; done
    echo "0 passed, 1 failed"
    exit 1
fi
# shellcheck disable=SC2086 # one test script a word
tests/run.sh "$build" $tests
