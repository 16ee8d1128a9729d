#!/bin/sh
# tests/style/test-architecture.sh — the architecture of shared/DESIGN.md and
# CONTRIBUTING.md, checked on the sources and on the object files so that it
# stays as written:
#
#   - include rules: each part includes only its own headers, src/common/ and
#     the public headers it is allowed (the daemon: the engine's gp_engine.h
#     and the executor interface executor.h, never a particular executor's;
#     the engine: nothing outside itself and common; the simulator: the
#     engine's public API only);
#   - names: no part's source names another part's internal prefix (engine
#     gp__, daemon gpd__, executors gpx__, interposer gps__), nor another
#     part's internal macro prefix (GP__, GPD__, GPX__, GPS__): a part's own
#     macros and enumerators carry its own prefix in capitals;
#   - objects: every global a part defines carries its own prefix or a public
#     gp_ name; no global is defined by two parts; no part's objects refer to
#     another part's internal names; and no global is defined and used in one
#     object only (a single-file helper is static);
#   - the headers one part may include from another (engine/gp_engine.h,
#     executors/executor.h, interpose/ledger.h) are that part's public face:
#     outside comments they name no internal name (the interposer's
#     gps__ledger_* functions live in ledger-int.h);
#   - the daemon's messages go through its log function (gpd__log), never
#     a bare fprintf to stderr;
#   - the daemon calls gp_exec_* only in the scheduling loop's files
#     (executor.h: one thread at a time), but for the one method declared
#     thread-safe (gp_exec_session, from the sessions' threads), and the
#     pause worker's one call of GP_EXEC_CTL_PAUSE / RESUME (executor.h);
#   - the engine names no front end's controls: no string literal in
#     src/engine holds a command-line flag (--name) or a gpupool command
#     (the daemon words remedies from gp_engine_pending_figures);
#   - one error space (src/common/gp_error.h): no source but that header
#     writes -errno or -E<NAME>, nor reads a code back with strerror(-rc):
#     errno becomes a code through gp_syserr() only, and gp_strerror() words
#     every code.
#
# The object checks read $GP_BUILD/obj (tests/run.sh sets it to the build
# being checked) and report a skip where the objects have not been built.
. tests/lib/tap.sh
build=${GP_BUILD:-build}

# part  directory  internal prefix  what it may include besides itself and common
parts="engine:src/engine:gp__:
daemon:src/daemon:gpd__:engine/gp_engine.h executors/executor.h
executors:src/executors:gpx__:engine/gp_engine.h interpose/ledger.h
interpose:src/interpose:gps__:
sim:src/sim:sim_:engine/gp_engine.h
cli:src/cli:cli_:
common:src/common::"

# The names each part may define as globals (an extended regular expression
# over the whole name): its prefix, the public names it owns, main.
globals_of() {
    case $1 in
    engine) echo '^(gp__|gp_)' ;;
    daemon) echo '^(gpd__|main$)' ;;
    # main: gpupool-slurm-session, the program the slurm executor runs in
    # its jobs (src/executors/slurm/prog).
    executors) echo '^(gpx__|gp_exec_|gp_executor_|main$)' ;;
    # The interposer exports the CUDA and NVML entry points it wraps, dlsym,
    # dlvsym, dlopen, dlmopen and the ledger reader's public gp_ledger_*
    # functions.
    interpose) echo '^(gps__|gp_ledger_|cu[A-Z]|nvml[A-Z]|dl(v?sym|m?open)$)' ;;
    sim) echo '^(sim_|main$)' ;;
    cli) echo '^(cli_|cmd_|main$)' ;;
    common) echo '^gp_[a-z]' ;;
    esac
}

internal_prefixes="gp__ gpd__ gpx__ gps__"

# ---- Sources ---------------------------------------------------------------

while IFS=: read -r part dir prefix allowed; do
    bad=""
    for f in $(find "$dir" -name '*.[ch]' | sort); do
        for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
            case $inc in
            */*) ;;
            *) continue ;; # beside the file: its own part
            esac
            case $inc in
            "${dir#src/}"/* | common/*) continue ;;
            esac
            ok=0
            for a in $allowed; do
                [ "$inc" = "$a" ] && ok=1
            done
            [ $ok = 1 ] || bad="$bad $f:$inc"
        done
    done
    tap_is "$part includes only itself, common and ${allowed:-nothing else}" "$bad" ""
done <<EOF
$parts
EOF

# Functions, variables and types by the lowercase prefixes; macros and
# enumerators by the same prefixes in capitals. A part without an internal
# prefix of its own (simulator, CLI, common) uses none of them.
while IFS=: read -r part dir prefix allowed; do
    bad=""
    for p in $internal_prefixes; do
        [ "$p" = "$prefix" ] && continue
        P=$(echo "$p" | tr a-z A-Z)
        hits=$(grep -rnE "(^|[^A-Za-z0-9_])($p[a-z]|$P[A-Z0-9])" "$dir" | head -3)
        [ -n "$hits" ] && bad="$bad
$hits"
    done
    tap_is "$part source names no other part's internal prefix (nor its macros')" "$bad" ""
done <<EOF
$parts
EOF

# The public headers another part may include declare no internals.
bad=""
for h in src/engine/gp_engine.h src/executors/executor.h src/interpose/ledger.h; do
    hits=$(grep -vE '^[[:space:]]*(/\*|\*)' "$h" |
        grep -E '(^|[^A-Za-z0-9_])(gp__|gpd__|gpx__|gps__|GP__|GPD__|GPX__|GPS__)[A-Za-z0-9]' | head -3)
    [ -n "$hits" ] && bad="$bad
$h: $hits"
done
tap_is "the headers other parts include name no internals" "$bad" ""

# The daemon writes its messages through its log (gpd__log in util.c): one
# format, a time on every line.
bad=$(grep -rn 'stderr' src/daemon --include='*.c' | grep -v '^src/daemon/util\.c:' | head -5)
tap_is "the daemon writes to stderr only through gpd__log" "$bad" ""

# The executor is called from the scheduling loop only (executor.h's threading
# rule): gp_exec_* calls appear only in the loop's files.
bad=$(grep -rn 'gp_exec_[a-z_]*(' src/daemon --include='*.c' |
    grep -vE '^src/daemon/sched-(tasks|recover|usage)\.c:' | grep -v 'gp_exec_session(' |
    grep -vE '^src/daemon/sched-pause\.c:[0-9]+: *j->rc = gp_exec_control\(s->ex, j->op, &j->p\);$' |
    head -5)
tap_is "the daemon calls executor methods only from its loop's files" "$bad" ""

# The engine says what holds; the remedies in a front end's words (a CLI flag,
# a command) are the daemon's to write.
bad=$(grep -rnE '"([^"\\]|\\.)*(--[a-z]|gpupool [a-z])' src/engine | head -5)
tap_is "the engine's strings name no CLI flag or command" "$bad" ""

# One error space: errno is turned into a code in gp_error.h's gp_syserr()
# alone, so a GP_E* code is never mistaken for a negated errno.
bad=$(grep -rnE '(^|[^A-Za-z0-9_])-(errno|E[A-Z0-9]{2,})([^A-Za-z0-9_]|$)|strerror\((\(int\) *)?-' \
    src --include='*.c' --include='*.h' | grep -v '^src/common/gp_error\.h:' | head -5)
tap_is "no source but gp_error.h negates errno (gp_syserr is the one mapping)" "$bad" ""

# ---- Objects -----------------------------------------------------------------

objs=$(find "$build/obj/src" -name '*.o' 2>/dev/null | sort)
if [ -z "$objs" ]; then
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - object checks # SKIP $build/obj/src not built"
    tap_done
    exit 0
fi
table=$(mktemp)
trap 'rm -f "$table"' EXIT
# One line per symbol: object part kind name (kind D: defined global, U: used).
# Names the compiler or a sanitizer makes (__odr_asan.x, __tsan_*) are not
# the program's own.
part_of() {
    echo "$1" | sed -n "s|^$build/obj/src/\([a-z]*\)/.*|\1|p"
}
for o in $objs $(find "$build/obj/tests" "$build/obj/bench" "$build/obj/fuzz" -name '*.o' 2>/dev/null | sort); do
    part=$(part_of "$o")
    nm "$o" 2>/dev/null | awk -v o="$o" -v p="${part:-test}" '
        $NF ~ /^__/ || $NF ~ /\./ { next }
        NF == 3 && $2 ~ /^[TDBRVWGS]$/ { print o, p, "D", $3 }
        NF == 2 && $1 == "U" { print o, p, "U", $2 }
        NF == 2 && $1 == "w" { print o, p, "U", $2 }'
done >"$table"

while IFS=: read -r part dir prefix allowed; do
    re=$(globals_of "$part")
    bad=$(awk -v p="$part" '$2 == p && $3 == "D" { print $4 }' "$table" | grep -vE "$re" |
        sort -u | tr '\n' ' ')
    tap_is "every global $part defines carries its prefix or a public name" "$bad" ""
done <<EOF
$parts
EOF

twice=$(awk '$3 == "D" && $2 != "test" && $4 != "main" { print $2, $4 }' "$table" | sort -u |
    awk '{ n[$2]++; w[$2] = w[$2] " " $1 } END { for (s in n) if (n[s] > 1) print s ":" w[s] }' |
    sort)
tap_is "no global symbol is defined by two parts" "$twice" ""

while IFS=: read -r part dir prefix allowed; do
    bad=""
    for p in $internal_prefixes; do
        [ "$p" = "$prefix" ] && continue
        hits=$(awk -v p="$part" '$2 == p && $3 == "U" { print $4 }' "$table" | grep "^$p" |
            sort -u | tr '\n' ' ')
        bad="$bad$hits"
    done
    tap_is "$part objects refer to no other part's internal names" "$bad" ""
done <<EOF
$parts
EOF

# A global that no other object (of the sources, tests, benchmarks or fuzz targets)
# refers to is a helper of one file: it should be static. Public names and
# the entry points the interposer exports are meant for programs outside.
lonely=$(awk '
    $3 == "D" && $2 != "test" { def[$4] = def[$4] " " $1; defobj[$4] = $1 }
    $3 == "U" { use[$4] = use[$4] " " $1 }
    END {
        for (s in def) {
            if (s ~ /^(main|gp_[a-z]|cu[A-Z]|nvml[A-Z]|dl(v?sym|m?open)$)/) continue
            other = 0
            n = split(use[s], u, " ")
            for (i = 1; i <= n; i++) if (u[i] != defobj[s]) other = 1
            if (!other) print defobj[s] ": " s
        }
    }' "$table" | sort)
tap_is "no global is defined and used in one object only (make it static)" "$lonely" ""
tap_done
