#!/usr/bin/env python3
"""tests/daemon/sessions_pace.py — the cases of test-sessions-pace.sh,
printed as TAP: clients with the default receive buffer attach to
interactive tasks that print without end. One reads 2 KB a second for 50 s:
it is not cut off, however slowly its socket drains; one reads as fast, then
stops: it is cut off within the grace period (30 s) and a little more. The
first was cut off about 30 s after its queue in gpupoold filled before. A
session cut off shows only once the client has read what the kernel still
held for it: each client then reads as fast as it can. Waits on conditions;
the pace is the client's behaviour under test."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import taplib  # noqa: E402
from taplib import ok  # noqa: E402
from wsclient import Paced, attached  # noqa: E402

SERVER, TOKEN = os.environ["GPUPOOL_SERVER"], os.environ["GPUPOOL_TOKEN"]
LIMIT = 120
READ_S = 50      # how long the steady client reads at its pace
STOP_AT = 10     # when the other stops reading
GRACE = 30       # gpupoold's grace period for a client that takes nothing


def api(method, path, body=None):
    return taplib.api(SERVER, method, path, TOKEN, body)


def paced(ws, seconds, res):
    """Reads 512 bytes every 0.25 s (2 KB/s) for seconds; res gets how many
    bytes of output and, if the session ended meanwhile, how."""
    ws.sock = Paced(ws.sock, 512, 0.25)
    ws.read_output(time.time() + seconds, res)
    ws.sock = ws.sock.sock


flood = ["/bin/sh", "-c", "read go; yes 0123456789"]
wids, steady, stops = attached(SERVER, TOKEN, flood, "two interactive tasks that print without end run",
                               LIMIT)
res = [{}, {}]
th = [threading.Thread(target=paced, args=(steady, READ_S, res[0])),
      threading.Thread(target=paced, args=(stops, STOP_AT, res[1]))]
start = time.time()
for t in th:
    t.start()
th[1].join()
# Stopped: gpupoold cuts it off once the grace period has gone by after its
# socket's buffers filled (moments at the task's pace). Read before that,
# the session would be served on; so it is read (fast) only after, and its
# end shows once what the kernel still held for it is read.
time.sleep(max(0, start + STOP_AT + GRACE + 10 - time.time()))
how = stops.ended(20)
th[0].join()
took = round(time.time() - start, 1)
why = res[0].get("why") or steady.ended(10)
ok(why == "served", f"a client reading 2 KB/s for {READ_S} s, its receive buffer the default, "
   "is not cut off", (took, res[0], why))
ok(how in ("EOFError", "ConnectionResetError",
           ("ERROR", b"the session ended (the task's side closed it)")),
   f"a client that stops reading is cut off within {GRACE} s and a little", (res[1], how))
for w in wids:
    api("DELETE", f"/api/v1/workloads/{w}")
taplib.done()
