#!/bin/sh
# Sessions' clients with the default receive buffer and a task that prints
# without end: one that reads slowly but steadily is served on, one that
# stops reading is cut off — tests/daemon/sessions_pace.py holds the cases.
. tests/lib/tap.sh
. tests/daemon/lib.sh
trap 'cleanup' EXIT
sessions_pool || exit 1
python3 tests/daemon/sessions_pace.py
