#!/bin/sh
# The gpupool command's sessions on a real pseudo-terminal against a real
# gpupoold (tests/daemon/cli_sessions.py holds the cases): run -it, detach
# and attach, Ctrl-C, exit status, exec, port-forward to a real HTTP server in
# the task, another user's token refused, and gpupool notebook's Jupyter.
. tests/lib/tap.sh
. tests/daemon/lib.sh
# A sanitizer build's interposer cannot be preloaded into the tasks' programs:
# there the sessions run on whole GPUs, which get no interposer.
case $B in
*asan* | *tsan*) GP_SESS_GPU=1 ;;
*) GP_SESS_GPU=0.25 ;;
esac
export GP_SESS_GPU
trap 'cleanup' EXIT
sessions_pool || exit 1
TB=$($GP token create --user other --role researcher --scope proj | head -1)
GP=$GP GP_TOKEN_B=$TB python3 tests/daemon/cli_sessions.py
