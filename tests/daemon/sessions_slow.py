#!/usr/bin/env python3
"""tests/daemon/sessions_slow.py — the cases of test-sessions-slow.sh,
printed as TAP: a client with a small receive window attaches to an
interactive task that prints 300 KB and exits with status 7. The client
takes nothing until the task has written its last byte (the task then makes
a file), then reads 16 KB a second and types a key each second, as a user
does while output scrolls. Every line and the exit status must reach it,
then the close: gpupoold closed the session 5 s after it queued its close
frame, while most of the output still waited in its socket for the client,
and the next key typed reset the connection (the rest was lost). Waits on
conditions; the pace is the client's behaviour under test."""
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import taplib  # noqa: E402
from taplib import ok  # noqa: E402
from wsclient import WS, Paced, attached  # noqa: E402

SERVER, TOKEN = os.environ["GPUPOOL_SERVER"], os.environ["GPUPOOL_TOKEN"]
FLAG = os.path.join(os.environ["GP_FLAG_DIR"], "written")
LINES = 25000
LINE = b"0123456789\r\n"  # as the terminal writes "0123456789\n"
LIMIT = 120


def api(method, path, body=None):
    return taplib.api(SERVER, method, path, TOKEN, body)


code, j = api("POST", "/api/v1/workloads",
              {"project": "proj", "tty": True,
               "command": ["/bin/sh", "-c",
                           f"read go; yes 0123456789 | head -n {LINES}; touch {FLAG}; exit 7"]})
wid = j.get("id")
end = time.time() + LIMIT
st = None
while time.time() < end and st != "running":
    st = api("GET", f"/api/v1/workloads/{wid}")[1].get("state")
    time.sleep(0.1)
ok(code == 201 and st == "running", "an interactive task that prints 300 KB runs", (code, j, st))

ws = WS(SERVER, f"/api/v1/workloads/{wid}/attach", TOKEN, rcvbuf=4096)
ws.hello()
t = ws.until(lambda t, p, o: t == "READY")[0]
ws.send("STDIN", b"go\n")
end = time.time() + LIMIT
while time.time() < end and not os.path.exists(FLAG):
    time.sleep(0.1)
ok(os.path.exists(FLAG), "the task prints everything while the client takes nothing")
start = time.time()
ws.sock = Paced(ws.sock, 4096, 0.25)
out, msgs, typed = b"", [], time.time()
while time.time() < end:
    if time.time() - typed >= 1:
        # A key typed now and then, as a user does while output scrolls.
        ws.send("STDIN", b"k")
        typed = time.time()
    try:
        t, p = ws.recv()
    except (EOFError, OSError) as e:
        msgs.append((type(e).__name__, b""))
        break
    if t == "STDOUT":
        out += p
    else:
        msgs.append((t, p))
    if t in ("CLOSE", "ERROR"):
        break
took = round(time.time() - start, 1)
n = out.count(LINE)
exits = [struct.unpack(">ii", p) for t, p in msgs if t == "EXIT"]
ok(n == LINES, f"a client reading 16 KB/s and typing gets all {LINES} lines",
   (took, n, msgs, out[-200:]))
ok(exits == [(7, 0)] and msgs[-1][0] == "CLOSE", "then the exit status, then the close",
   (took, msgs))
api("DELETE", f"/api/v1/workloads/{wid}")

# While a session is open: a client with a small window that reads slowly
# but steadily (2 KB a second) is not cut off as stalled, however long its
# socket's buffer in gpupoold (as large as the kernel makes it: megabytes)
# takes to drain far enough for the next write to go out (about a third of
# it: far more than 30 s at this pace); one that never reads still is. The
# first was cut off 30 s after its queue in gpupoold filled before. Each
# task prints without end. A session cut off shows only once the client has
# read what the kernel still held for it: each client then reads as fast as
# it can, and a session still served never ends. The one that takes
# nothing is cut off by gpupoold (it just ends) or, its queue in gpupoold
# taking nothing from the task's side either, by the task's supervisor (a
# client a whole ring behind for 3 minutes), which gpupoold passes on.
flood = ["/bin/sh", "-c", "read go; yes 0123456789"]
wids, steady, still = attached(SERVER, TOKEN, flood, "two interactive tasks that print without end run",
                               LIMIT, rcvbuf=4096)
paced = Paced(steady.sock, 512, 0.25)
steady.sock = paced
start, got, why = time.time(), 0, None
while time.time() - start < 50:
    try:
        t, p = steady.recv()
    except (EOFError, OSError) as e:
        why = type(e).__name__
        break
    if t != "STDOUT":
        why = (t, p)
        break
    got += len(p)
steady.sock = paced.sock


took = round(time.time() - start, 1)
why = steady.ended() if why is None else why
ok(why == "served", "a client reading 2 KB/s for 50 s is not cut off", (took, got, why))
why = still.ended()
ok(why in ("EOFError", "ConnectionResetError",
           ("ERROR", b"the session ended (the task's side closed it)")),
   "a client that reads nothing is cut off", why)
for w in wids:
    api("DELETE", f"/api/v1/workloads/{w}")
taplib.done()
