#!/usr/bin/env python3
"""tests/daemon/sessions_quiet.py — the cases of test-sessions-quiet.sh,
printed as TAP: two clients attach to interactive tasks that print a few
lines, far less than a socket's buffers hold, then wait. One never reads
(a hostile client, or one whose peer is gone): gpupoold cuts it off within
its ping's period and grace (10 s and 30 s); it was never cut off before,
nothing it was sent being held up, and held its session and its socket for
as long as the task ran. The other reads, and answers pings as a browser
does: it is served on. The first one's end shows in its socket's state
(gpupoold's FIN follows the bytes its kernel already holds), which is
looked at without reading."""
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import taplib  # noqa: E402
from taplib import ok  # noqa: E402
from wsclient import attached  # noqa: E402

SERVER, TOKEN = os.environ["GPUPOOL_SERVER"], os.environ["GPUPOOL_TOKEN"]
LIMIT = 120
CUT = 10 + 30 + 15  # the ping's period, the grace, and a margin for a loaded machine
ESTABLISHED = 1


def api(method, path, body=None):
    return taplib.api(SERVER, method, path, TOKEN, body)


def tcp_state(sock):
    return struct.unpack("B", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[:1])[0]


quiet = ["/bin/sh", "-c", "read go; seq 1 200; exec sleep 3600"]
wids, still, reads = attached(SERVER, TOKEN, quiet, "two interactive tasks that print a little run", LIMIT)
res = {}


def reader():
    """Reads (and answers pings) until the session ends or CUT + 5 s."""
    reads.sock.settimeout(1)
    reads.read_output(time.time() + CUT + 5, res)
    res.setdefault("why", "served")


th = threading.Thread(target=reader)
th.start()
start = time.time()
while time.time() - start < CUT and tcp_state(still.sock) == ESTABLISHED:
    time.sleep(0.5)
took = round(time.time() - start, 1)
state = tcp_state(still.sock)
ok(state != ESTABLISHED, f"a client that never reads is cut off within {CUT} s", (took, state))
th.join()
ok(res.get("why") == "served", "a client that reads is served on", res)
for w in wids:
    api("DELETE", f"/api/v1/workloads/{w}")
taplib.done()
