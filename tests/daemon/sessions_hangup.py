#!/usr/bin/env python3
"""tests/daemon/sessions_hangup.py — the cases of test-sessions-hangup.sh,
printed as TAP: a client that resets its connection while its input waits
for a command that does not read it (the daemon's buffer toward the task is
full, so the client's socket is no longer read). epoll reports a hang-up
whatever it watches, so one left unanswered comes back at once, for ever:
the relay thread spun at 100% of a CPU and the session was held until the
task ended. The session ends and its user's session is given back.

The daemon's CPU time is read from /proc over 3 s (a spinning thread takes
about a second each second). Waits on conditions, never on fixed sleeps."""
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import taplib  # noqa: E402
from taplib import ok  # noqa: E402
from wsclient import WS  # noqa: E402

SERVER, TOKEN = os.environ["GPUPOOL_SERVER"], os.environ["GPUPOOL_TOKEN"]
PID = int(os.environ["GP_DAEMON_PID"])
TICK = os.sysconf("SC_CLK_TCK")
LIMIT = 60


def api(method, path, body=None):
    return taplib.api(SERVER, method, path, TOKEN, body)


def wait_state(wid, done):
    """The workload's state once done(state) holds, or the last one seen."""
    end = time.time() + LIMIT
    st = None
    while time.time() < end:
        st = api("GET", f"/api/v1/workloads/{wid}")[1].get("state")
        if done(st):
            break
        time.sleep(0.1)
    return st


def cpu_s():
    """gpupoold's user and system time so far, in seconds."""
    with open(f"/proc/{PID}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def cpu_over(seconds=3):
    t0 = cpu_s()
    time.sleep(seconds)  # the measure itself: no condition to wait for
    return round(cpu_s() - t0, 2)


def exec_session(wid, argv):
    ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", TOKEN)
    if ex.status == 101:
        ex.hello(command=argv)
    return ex


def interactive(argv):
    code, j = api("POST", "/api/v1/workloads",
                  {"project": "proj", "command": argv, "tty": True})
    wid = j.get("id")
    ok(code == 201 and wait_state(wid, lambda s: s == "running") == "running",
       f"an interactive workload runs {argv}", j)
    return wid


# ---- The client resets while its input waits (the client's side unread) ----
wid = interactive(["sleep", "600"])
ex = exec_session(wid, ["sleep", "600"])
t = ex.until(lambda t, p, o: t == "READY")[0] if ex.status == 101 else ex.status
# Input for a command that never reads it, until none is taken for 2 s: the
# pipe, the task's side, the socket between and the daemon's buffer toward
# the task are full, and the daemon no longer reads the client.
ex.sock.setblocking(False)
pending, sent = b"", 0
while True:
    if not pending:
        pending = WS.message("STDIN", b"i" * 65536)
    if not select.select([], [ex.sock], [], 2)[1]:
        break
    try:
        n = ex.sock.send(pending)
    except BlockingIOError:
        continue
    pending, sent = pending[n:], sent + n
ok(t == "READY" and sent > 1 << 20, "input no command reads fills every buffer on the way",
   (t, sent))
ex.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
ex.sock.close()  # a reset
used = cpu_over()
ok(used < 0.5, "a client reset while its input waits: gpupoold does not spin",
   f"{used} s of CPU in 3 s")
# The cap is two sessions: two open at once (one after the other, well
# within the 10 s a session has for its HELLO) once the reset one was given
# back.
end = time.time() + LIMIT
while True:
    pair = [WS(SERVER, f"/api/v1/workloads/{wid}/exec", TOKEN) for _ in range(2)]
    opened = [w.status for w in pair]
    for w in pair:
        w.sock.close()
    if opened == [101, 101] or time.time() > end:
        break
    time.sleep(0.2)
ok(opened == [101, 101], "and the user's session is given back (two open under a cap of two)",
   (opened, pair[1].body))
api("DELETE", f"/api/v1/workloads/{wid}")

taplib.done()
