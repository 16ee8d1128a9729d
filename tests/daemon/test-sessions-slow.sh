#!/bin/sh
# A session's client that reads slowly, and types, while the task prints a
# lot and ends: it gets every byte and the task's exit status, however long
# the end takes to reach it, as long as it keeps reading —
# tests/daemon/sessions_slow.py holds the cases.
. tests/lib/tap.sh
. tests/daemon/lib.sh
trap 'cleanup' EXIT
sessions_pool || exit 1
GP_FLAG_DIR=$TMP python3 tests/daemon/sessions_slow.py
