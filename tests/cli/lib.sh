# tests/cli/lib.sh — what the CLI's tests against a real gpupoold share
# (source it from a test): TAP, the daemon's helpers (tests/daemon/lib.sh),
# a home of their own so that no configuration of the machine's user is read,
# and one way to run gpupool and check its exit code.
. tests/lib/tap.sh
. tests/daemon/lib.sh
unset GPUPOOL_TOKEN_FILE
export HOME=$TMP/home XDG_CONFIG_HOME=$TMP/home/.config
mkdir -p "$HOME"

# code WANT CMD...: runs gpupool CMD, its output in $TMP/out and $TMP/err;
# succeeds if it exits with WANT, and says what it got otherwise.
code() {
    want=$1
    shift
    "$GP" "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    [ "$got" = "$want" ] && return 0
    echo "# gpupool $*: exit $got, expected $want; it said: $(head -c 300 "$TMP/err")"
    return 1
}

# cli_gpd_start DIR: starts gpupoold on DIR as gpd_start does. A sanitizer
# build's interposer cannot be preloaded into uninstrumented workloads
# (sleep would die at once): there, the same emulated GPUs without it.
cli_gpd_start() {
    case $B in
    *asan*)
        printf 'node = local\ndomain = local\ngpu = H100 80G 8\n' >"$TMP/inv.conf"
        gpd_start "$1" --period 300ms \
            --executor-config "state_dir=$1/tasks,inventory=$TMP/inv.conf,interposer=$TMP/none.so"
        ;;
    *) gpd_start "$1" --period 300ms ;;
    esac
}
