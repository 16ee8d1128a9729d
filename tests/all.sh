#!/bin/sh
# tests/all.sh — every test pass of `make test`, and their grand total.
#
#   1. every test, normal build (build/)
#   2. every test again under AddressSanitizer + UndefinedBehaviorSanitizer
#      (build/asan)
#   3. the threaded parts under ThreadSanitizer (build/tsan): the interposer's
#      tests, and gpupoold built with TSan under its black-box tests
#   4. the Slurm tier: gpupoold on a real Slurm cluster started on this host
#      (tests/slurm; it reports SKIP with the reason where Slurm cannot run)
#   5. the Slurm tier again with gpupoold and the CLI built with
#      AddressSanitizer + UndefinedBehaviorSanitizer (build/asan): the slurm
#      executor runs only there, so pass 2 never exercises it
#
# Each pass prints its own results; the last line is the sum over all passes,
# "N passed, N failed, N skipped". The exit status is non-zero if any pass
# failed.
set -u
MAKE=${MAKE:-make}
jobs=${GP_JOBS:-2}
passed=0
failed=0
skipped=0
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pass in "check" "check SAN=1" "test-tsan" "test-slurm" "test-slurm SAN=1"; do
    echo "== make $pass"
    # shellcheck disable=SC2086 # pass holds a goal and its variables
    $MAKE --no-print-directory -j"$jobs" $pass >"$log" 2>&1
    rc=$?
    cat "$log"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -1)
    if [ -z "$line" ]; then
        echo "make $pass: no test results (build failed?)"
        failed=$((failed + 1))
        status=1
        continue
    fi
    p=${line%% passed*}
    f=${line#*, }
    f=${f%% failed*}
    s=0
    case $line in *skipped) s=${line##*failed, } s=${s%% skipped} ;; esac
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
    [ "$rc" = 0 ] || status=1
done
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
