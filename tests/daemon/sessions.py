#!/usr/bin/env python3
"""tests/daemon/sessions.py — the cases of test-sessions.sh, printed as TAP.
Waits on conditions (a prompt, a state), never on fixed sleeps."""
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import taplib  # noqa: E402
from taplib import ok  # noqa: E402
from wsclient import WS  # noqa: E402

SERVER = os.environ["GPUPOOL_SERVER"]
TA, TB, ADMIN = os.environ["GP_TOKEN_A"], os.environ["GP_TOKEN_B"], os.environ["GP_ADMIN"]


def api(method, path, token, body=None):
    return taplib.api(SERVER, method, path, token, body)


def wait_state(wid, want, limit=60):
    end = time.time() + limit
    st = None
    while time.time() < end:
        _, w = api("GET", f"/api/v1/workloads/{wid}", TA)
        st = w.get("state")
        if st == want or (want != "running" and st in ("succeeded", "failed")):
            return st
        time.sleep(0.1)
    return st


def submit(command, tty=True, **kw):
    body = {"project": "proj", "command": command, "gpu": os.environ.get("GP_SESS_GPU", "0.25")}
    if tty:
        body["tty"] = True
    body.update(kw)
    code, j = api("POST", "/api/v1/workloads", TA, body)
    return j.get("id"), code, j


def attach(wid, token=TA, header=False, **hello):
    ws = WS(SERVER, f"/api/v1/workloads/{wid}/attach", token if header else None)
    if ws.status == 101:
        if not header:
            hello["token"] = token
        ws.hello(**hello)
    return ws


def prompt_seen(t, p, out):
    return out.rstrip().endswith(b"$") or out.rstrip().endswith(b"#")


# ---- A terminal: type, read, resize, Ctrl-C, detach, attach again, exit ----
wid, code, j = submit(["/bin/bash", "--norc", "-i"], env={"PS1": "gp$ "})
ok(code == 201, "an interactive workload with a terminal is submitted", j)
ok(wait_state(wid, "running") == "running", "it runs")
ws = attach(wid, rows=30, cols=100)
ok(ws.status == 101, "attach (token in the first message, as a browser) upgrades to WebSocket",
   ws.body)
t, p, out = ws.until(lambda t, p, o: t == "READY")
ok(t == "READY", "READY comes first")
ws.send("STDIN", "echo hi-$((6*7)); GPVAR=kept-$((1+1))\n")
t, p, out = ws.until(lambda t, p, o: b"hi-42" in o and o.rstrip().endswith(b"gp$"))
ok(b"hi-42" in out, "typed a command and read its answer", out)
ws.send("STDIN", "whoami\n")
t, p, out = ws.until(lambda t, p, o: os.environ["GP_USER_A"].encode() in o)
ok(True, "the shell runs as the workload's own user")
ws.send("RESIZE", struct.pack(">HH", 40, 132))
ws.send("STDIN", "stty size\n")
t, p, out = ws.until(lambda t, p, o: b"40 132" in o)
ok(b"40 132" in out, "a RESIZE reaches the terminal (stty size)")
ws.send("STDIN", "sleep 300\n")
# One Ctrl-C, once sleep runs (exec'd, so it holds the terminal): an
# interrupt typed while bash is still forking the job can end bash itself
# (it then reads the terminal from outside the foreground group and takes
# the error for an end of input). That race is bash's, shown on a plain
# pseudo-terminal with no gpupool in between, so the test does not type
# ahead of it.
end = time.time() + 60
while time.time() < end:
    ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", TA)
    ex.hello(command=["sh", "-c", "pgrep -u \"$(id -u)\" -f -x 'sleep 300'"])
    running = struct.unpack(">ii", ex.until(lambda t, p, o: t == "EXIT")[1])[0] == 0
    ex.close()
    if running:
        break
    time.sleep(0.1)
ws.send("STDIN", "\x03")
ws.until(lambda t, p, o: o.rstrip().endswith(b"gp$"))
ws.send("STDIN", "echo after-$((2+3))\n")
t, p, out = ws.until(lambda t, p, o: b"after-5" in o)
ok(b"after-5" in out, "Ctrl-C interrupts the foreground command, the shell goes on")
ws.send("STDIN", "echo marker-$((7*11))\n")
ws.until(lambda t, p, o: b"marker-77" in o)
ws.sock.close()  # a dropped connection: the session keeps running
ok(wait_state(wid, "running") == "running", "a dropped connection leaves the workload running")
ws = attach(wid, header=True, rows=30, cols=100)
ok(ws.status == 101, "attach again (the CLI's way, the header)", ws.body)
t, p, out = ws.until(lambda t, p, o: b"marker-77" in o)
ok(b"marker-77" in out, "attach replays the recent output first")
ws.send("STDIN", "echo var=$GPVAR\n")
t, p, out = ws.until(lambda t, p, o: b"var=kept-2" in o)
ok(True, "a shell variable set before the detach is still there")

# exec in the same task: same user, environment, mount namespace
ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", TA)
ex.hello(command=["sh", "-c", "echo exec-$(id -un)-$GPUPOOL_WORKLOAD_ID; exit 7"])
t, p, out = ex.until(lambda t, p, o: t == "EXIT")
code_, sig_ = struct.unpack(">ii", p)
ok(f"exec-{os.environ['GP_USER_A']}".encode() in out and code_ == 7,
   "exec runs a command in the task as its user, with its exit status", (out, code_))
ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", TA)
ex.hello(command=["no-such-program-gp"])
t, p, out = ex.until(lambda t, p, o: t == "EXIT")
ok(struct.unpack(">ii", p)[0] == 127 and b"no-such-program-gp" in out,
   "exec of a missing program: status 127 and the reason", out)

# The console's way: its console session (never the token) in the first
# message; once signed out, the same session is refused there.
code, cs = api("POST", "/api/v1/console/session", TA)
secret = cs.get("session", "")
ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", None)
ex.hello(token=secret, command=["sh", "-c", "echo console-$((3*5))"])
t, p, out = ex.until(lambda t, p, o: t in ("EXIT", "ERROR"))
ok(code == 201 and t == "EXIT" and b"console-15" in out,
   "a console session in the first message opens an exec session", (code, t, p, out))
code, _ = api("DELETE", "/api/v1/console/session", secret)
ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", None)
ex.hello(token=secret, command=["true"])
t, p, _ = ex.until(lambda t, p, o: t == "ERROR") if ex.status == 101 else ("HTTP", b"", b"")
ok(code == 200 and t == "ERROR" and b"revoked" in p,
   "after sign-out, that console session in the first message is refused", (code, t, p))

# ---- Refusals ----
code, _ = api("GET", f"/api/v1/workloads/{wid}/attach", TB)
ok(code in (403, 404), "another user's token: attach refused", code)
ws_b = attach(wid, token=TB, rows=10, cols=10)
t, p, _ = ws_b.until(lambda t, p, o: t == "ERROR") if ws_b.status == 101 else ("HTTP", b"", b"")
ok(t == "ERROR" and (b"belongs to" in p or b"no workload" in p),
   "another user's token in the first message: refused with the reason", p)
for route in ("exec", "port-forward?port=80"):
    code, body = api("GET", f"/api/v1/workloads/{wid}/{route}", TB)
    ok(code in (403, 404), f"another user's token: {route.split('?')[0]} refused", (code, body))
code, body = api("GET", f"/api/v1/workloads/{wid}/attach", ADMIN)
ok(code == 403 and "only its own user" in json.dumps(body),
   "an admin may not type into someone's session: 403 with the reason", body)
code, body = api("GET", "/api/v1/workloads/999999/attach", TA)
ok(code == 404, "unknown workload: 404", body)
code, body = api("GET", f"/api/v1/workloads/{wid}/port-forward?port=70000", TA)
ok(code == 400 and body.get("error", {}).get("field") == "port", "port out of range: 400 naming port",
   body)
bid, _, _ = submit(["sleep", "300"], tty=False)
wait_state(bid, "running")
code, body = api("GET", f"/api/v1/workloads/{bid}/attach", TA)
ok(code == 409 and "not interactive" in json.dumps(body), "a batch workload: not interactive, 409",
   body)
api("DELETE", f"/api/v1/workloads/{bid}", TA)

# malformed and oversized messages, and a client that never reads
bad = attach(wid, header=True, rows=10, cols=10)
bad.until(lambda t, p, o: t == "READY")
bad.send("RESIZE", b"\x00")
t, p, _ = bad.until(lambda t, p, o: t == "ERROR")
ok(b"RESIZE" in p, "a malformed RESIZE is refused with the reason", p)
big = attach(wid, header=True, rows=10, cols=10)
big.until(lambda t, p, o: t == "READY")
big.frame(2, bytes([1]) + b"x" * (65536 + 10))
try:
    t, p, _ = big.until(lambda t, p, o: t == "CLOSE")
    closed = True
except (RuntimeError, EOFError, OSError):
    closed = True
ok(closed, "an oversized message closes the connection")
slow = attach(wid, header=True, rows=10, cols=10)
slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
still = attach(wid, header=True, rows=10, cols=10)
still.until(lambda t, p, o: t == "READY")
still.send("STDIN", "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo flood-$((3*3))\n")
t, p, out = still.until(lambda t, p, o: b"flood-9" in o, limit=1 << 23)
ok(b"flood-9" in out, "a client that never reads holds up no other session")

# port-forward to a real HTTP server in the task
ws.send("STDIN", "cd /tmp && python3 -m http.server 18642 --bind 127.0.0.1 >/dev/null 2>&1 &\n")
fwd_ok = False
end = time.time() + 30
while time.time() < end and not fwd_ok:
    f = WS(SERVER, f"/api/v1/workloads/{wid}/port-forward?port=18642", TA)
    f.hello()
    t, p = f.recv()
    if t == "READY":
        f.send("DATA", b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        try:
            t, p, out = f.until(lambda t, p, o: t == "EOF", limit=1 << 22)
            fwd_ok = b"200" in out.split(b"\r\n")[0]
        except RuntimeError:
            pass
    f.close()
    if not fwd_ok:
        time.sleep(0.2)
ok(fwd_ok, "port-forward reaches a real HTTP server in the task")

# A client's EOF (a half-close) reaches the task's side only after every byte
# sent before it: a sink that starts reading late, when the daemon still
# holds bytes for it (its receive buffer is small), counts them all and its
# answer comes back.
ws.send("STDIN", "python3 -c 'import socket,time\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,"
        "socket.SO_REUSEADDR,1);s.setsockopt(socket.SOL_SOCKET,socket.SO_RCVBUF,4096);"
        "s.bind((\"127.0.0.1\",18643));s.listen(1)\nwhile True:\n"
        " c,_=s.accept();time.sleep(1);n=0\n while True:\n  d=c.recv(1<<20)\n  if not d: break\n"
        "  n+=len(d)\n c.sendall(b\"count=%d\" % n);c.close()' >/dev/null 2>&1 &\n")
total = 8 << 20
answer = b""
end = time.time() + 60
while time.time() < end and b"count=" not in answer:
    f = WS(SERVER, f"/api/v1/workloads/{wid}/port-forward?port=18643", TA)
    f.hello()
    t, p = f.recv()
    if t == "READY":
        try:
            chunk = b"y" * 65535
            for _ in range(total // len(chunk)):
                f.send("DATA", chunk)
            f.send("DATA", b"y" * (total % len(chunk)))
            f.send("EOF")
            answer = f.until(lambda t, p, o: t == "EOF", limit=1 << 20)[2]
        except (RuntimeError, OSError) as ex:
            answer = repr(ex).encode()
    f.close()
    if b"count=" not in answer:
        time.sleep(0.2)
ok(answer == b"count=%d" % total, "a half-closed forward delivers every byte before the EOF, "
   "and the answer after it", answer)

# the command's exit status ends the session
ws.send("STDIN", "exit 3\n")
t, p, out = ws.until(lambda t, p, o: t == "EXIT", limit=1 << 24)
ok(struct.unpack(">ii", p)[0] == 3, "the shell's exit status comes as EXIT", p)
ok(wait_state(wid, "failed") == "failed", "the workload ends with it")

taplib.done()
