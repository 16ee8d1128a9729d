#!/bin/sh
# scripts/fuzz.sh — runs libFuzzer targets one after the other (never two at
# once, so as not to starve a shared machine), each for SECONDS.
#
#   scripts/fuzz.sh BUILD_DIR SECONDS NAME...
#
# Each target starts from its seed corpus, fuzz/corpus/NAME, and a working
# corpus in BUILD_DIR/corpus/NAME that keeps what earlier runs found; new
# inputs go to the working corpus only (copy the interesting ones into
# fuzz/corpus/NAME by hand, with a name that says why). A crash leaves its
# input in BUILD_DIR/crashes/NAME/ and fails the run. The last line of each
# target's log (BUILD_DIR/logs/NAME.log) gives its executions.
set -u
build=$1
secs=$2
shift 2
status=0
mkdir -p "$build/logs"
for name in "$@"; do
    mkdir -p "$build/corpus/$name" "$build/crashes/$name"
    log="$build/logs/$name.log"
    start=$(date +%s)
    "$build/fuzz/$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$build/crashes/$name/" \
        "$build/corpus/$name" "fuzz/corpus/$name" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    printf '%-18s %5ss  rc=%d  %s executions  (log: %s)\n' "$name" "$(($(date +%s) - start))" \
        "$rc" "${runs:-?}" "$log"
    if [ "$rc" != 0 ]; then
        status=1
        grep -E '^==[0-9]+==ERROR|SUMMARY|^artifact_prefix|Test unit written' "$log" | head -5 |
            sed 's/^/    /'
    fi
done
exit $status
