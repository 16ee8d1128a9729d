#!/bin/sh
# Sessions' clients attached to tasks that print a few lines and wait: one
# that never reads is cut off, one that reads is
# served on — tests/daemon/sessions_quiet.py holds the cases.
. tests/lib/tap.sh
. tests/daemon/lib.sh
trap 'cleanup' EXIT
sessions_pool || exit 1
python3 tests/daemon/sessions_quiet.py
