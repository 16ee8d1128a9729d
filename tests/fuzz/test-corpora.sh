#!/bin/sh
# Every fuzz target replays its whole corpus (fuzz/corpus/<name>/: the seeds
# and every input that once found a bug) without a crash: a regression run of
# seconds. In the SAN=1 pass the targets are built with ASan and UBSan, so a
# memory error or undefined behaviour fails here too. A target without a
# corpus, or a corpus without a target, fails: each parser of outside input
# keeps both.
. tests/lib/tap.sh
B=${GP_BUILD:-build}
for src in fuzz/*.c; do
    name=$(basename "$src" .c)
    [ "$name" = driver ] && continue
    if [ ! -d "fuzz/corpus/$name" ] || [ -z "$(ls "fuzz/corpus/$name")" ]; then
        tap_ok "fuzz/$name has a seed corpus in fuzz/corpus/$name" false
        continue
    fi
    out=$("$B/fuzz/$name" "fuzz/corpus/$name" 2>&1)
    rc=$?
    tap_ok "fuzz/$name replays its corpus ($(echo "$out" | tail -1))" [ "$rc" = 0 ]
    [ "$rc" = 0 ] || echo "$out" | tail -20 | sed 's/^/#   /'
done
for dir in fuzz/corpus/*/; do
    name=$(basename "$dir")
    [ -f "fuzz/$name.c" ] || tap_ok "fuzz/corpus/$name belongs to a target" false
done
tap_done
