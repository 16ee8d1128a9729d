#!/usr/bin/env python3
"""tests/daemon/sessions_pings.py — the cases of test-sessions-pings.sh,
printed as TAP: a client that sends WebSocket pings and never reads. libwslay
answers each ping with a pong, queued for the client whatever the queue
already holds, and the client's socket was read on while the queue grew: one
connection without a token, before its HELLO, took gpupoold from 11 MB to
1.9 GB in 8 s. The client is not read while its queue is full, so what it
sends waits in its own socket, and the daemon holds at most that queue.

Each case has a daemon of its own (the first argument names it: open, or
hello): memory the daemon freed stays in its size (malloc keeps it), which
would hide a second flood's growth.

The flood ends when 256 MB are sent or nothing more is taken for 3 s (the
daemon no longer reads): a condition, never a fixed sleep."""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import taplib  # noqa: E402
from taplib import ok  # noqa: E402
from wsclient import WS  # noqa: E402

SERVER, TOKEN = os.environ["GPUPOOL_SERVER"], os.environ["GPUPOOL_TOKEN"]
PID = int(os.environ["GP_DAEMON_PID"])
LIMIT = 60
FLOOD = 256 << 20
TAKEN_MAX = 64 << 20
# 256 MB of pings took 440 MB; under AddressSanitizer, which keeps what is
# freed a while, the few MB taken now leave about 40 MB.
BOUND_KIB = 128 << 10


def flood(ws):
    """Sends pings of 125 bytes, reading nothing; the bytes sent."""
    batch = WS.encode(9, b"p" * 125) * 512
    ws.sock.settimeout(3)
    sent = 0
    try:
        while sent < FLOOD:
            ws.sock.sendall(batch)
            sent += len(batch)
    except (socket.timeout, OSError):
        pass
    return sent


def grew_by_flood(ws, what):
    before = taplib.rss_kib(PID)
    sent = flood(ws)
    grew = taplib.rss_kib(PID) - before
    ok(sent < TAKEN_MAX, f"{what}: gpupoold stops taking pings from a client that reads nothing "
       f"({sent >> 20} MB taken)")
    ok(grew < BOUND_KIB, f"{what}: and is less than {BOUND_KIB >> 10} MiB larger ({grew} KiB)")
    ws.sock.close()


def wait_state(wid, want):
    end = time.time() + LIMIT
    st = None
    while time.time() < end:
        st = taplib.api(SERVER, "GET", f"/api/v1/workloads/{wid}", TOKEN)[1].get("state")
        if st == want:
            break
        time.sleep(0.1)
    return st


CASE = sys.argv[1]

# ---- An open session, its user's own terminal ----
if CASE == "open":
    code, j = taplib.api(SERVER, "POST", "/api/v1/workloads", TOKEN,
                         {"project": "proj", "command": ["sleep", "600"], "tty": True})
    wid = j.get("id")
    ok(code == 201 and wait_state(wid, "running") == "running", "an interactive workload runs", j)
    ws = WS(SERVER, f"/api/v1/workloads/{wid}/attach", TOKEN)
    t = ws.status
    if ws.status == 101:
        ws.hello()
        t = ws.until(lambda t, p, o: t == "READY")[0]
    ok(t == "READY", "its terminal is attached", t)
    grew_by_flood(ws, "an open session")

    taplib.api(SERVER, "DELETE", f"/api/v1/workloads/{wid}", TOKEN)

# ---- Before HELLO, without a token: anyone who reaches the port ----
if CASE == "hello":
    ws = WS(SERVER, "/api/v1/workloads/1/attach")
    ok(ws.status == 101,
       "a WebSocket without a token is upgraded (its token would come in HELLO)", ws.status)
    grew_by_flood(ws, "before HELLO")

code, j = taplib.api(SERVER, "GET", "/api/v1/health", TOKEN)
ok(code == 200, "gpupoold still answers", j)
taplib.done()
