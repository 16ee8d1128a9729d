#!/bin/sh
# tests/run.sh — runs gpupool's test programs and adds their results up.
#
# Usage: tests/run.sh BUILD_DIR PROGRAM...
#
# Every program speaks TAP on standard output: C test programs through Check
# (CK_TAP_LOG_FILE_NAME=-), shell tests through tests/lib/tap.sh. A program
# that exits non-zero without reporting a failure (a crash outside any test,
# a missing binary) counts as one failed test, so nothing fails silently.
# A test that cannot run here says so with TAP's SKIP directive ("ok N - name
# # SKIP reason", a "# SKIP reason" line of a C test, or "1..0 # SKIP reason"
# for a whole program) and is counted as skipped, not passed. The last line
# is "N passed, N failed, N skipped".
set -u
build=$1
shift
log_dir="$build/test-logs"
mkdir -p "$log_dir"

passed=0
failed=0
skipped=0
failed_names=""
for prog in "$@"; do
    name=$(echo "$prog" | sed "s|^$build/||; s|/|_|g")
    log="$log_dir/$name.log"
    CK_TAP_LOG_FILE_NAME=- CK_VERBOSITY=silent GP_BUILD="$build" "$prog" >"$log" 2>&1
    rc=$?
    p=$(grep -c '^ok ' "$log")
    f=$(grep -c '^not ok ' "$log")
    s=$(grep -cE '^ok .*# SKIP|^# SKIP|^1\.\.0 # SKIP' "$log")
    # A C test's "# SKIP" line comes with its "ok" line; a TAP "ok # SKIP" is one.
    p=$((p - $(grep -cE '^ok .*# SKIP|^# SKIP' "$log")))
    [ "$p" -lt 0 ] && p=0
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
        f=1
        echo "not ok - $prog exited with status $rc outside any test" >>"$log"
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
    note=""
    [ "$s" != 0 ] && note=", $s skipped: $(grep -hoE '# SKIP.*' "$log" | head -1 | cut -c8-80)"
    if [ "$f" != 0 ]; then
        failed_names="$failed_names $prog"
        printf 'FAIL %-50s %4d passed, %d failed (log: %s)\n' "$prog" "$p" "$f" "$log"
        # Each failure with the comment lines its test printed after it (what
        # it got, what it expected, why), so that a run's summary says why.
        awk '/^not ok|:[0-9]+:[EF]:/ { print; k = 0; d = 1; next }
             d && /^#/ && k < 8 { print; k++; next } { d = 0 }' "$log" | head -40 | sed 's/^/    /'
    else
        printf 'ok   %-50s %4d passed%s\n' "$prog" "$p" "$note"
    fi
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
