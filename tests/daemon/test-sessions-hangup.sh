#!/bin/sh
# A session's client that resets its connection while gpupoold does not read
# it (the task's side takes no more of its input): the relay thread does not
# spin on the hang-up, which epoll reports whatever it watches, and the
# session ends, its user's session given back —
# tests/daemon/sessions_hangup.py holds the cases.
. tests/lib/tap.sh
. tests/daemon/lib.sh
trap 'cleanup' EXIT
sessions_pool --max-user-sessions 2 || exit 1
GP_DAEMON_PID=$GPD_PID python3 tests/daemon/sessions_hangup.py
