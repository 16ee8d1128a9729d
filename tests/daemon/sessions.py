#!/usr/bin/env python3
"""tests/daemon/sessions.py — the cases of test-sessions.sh, printed as TAP.
Waits on conditions (a prompt, a state), never on fixed sleeps."""
import json
import os
import pwd
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import taplib  # noqa: E402
from taplib import ok  # noqa: E402
from wsclient import TYPES, WS  # noqa: E402

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


def attach(wid, token=TA, header=False, then=(), **hello):
    ws = WS(SERVER, f"/api/v1/workloads/{wid}/attach", token if header else None)
    if ws.status == 101:
        if not header:
            hello["token"] = token
        ws.hello(then=then, **hello)
    return ws


def run_in(wid, argv):
    """Runs argv in the task (exec): (exit status, output)."""
    ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", TA)
    ex.hello(command=argv)
    t, p, out = ex.until(lambda t, p, o: t == "EXIT")
    ex.close()
    return struct.unpack(">ii", p)[0], out


def forward_ready(wid, port, limit=30, then=()):
    """A forward to port, once the task listens there (READY), or None."""
    end = time.time() + limit
    while time.time() < end:
        f = WS(SERVER, f"/api/v1/workloads/{wid}/port-forward?port={port}", TA)
        t = "HTTP"
        if f.status == 101:
            f.hello(then=then)
            try:
                t, p = f.recv()
            except (EOFError, OSError):
                t = "EOF"
        if t == "READY":
            return f
        f.close()
        time.sleep(0.2)
    return None


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


def children(pid):
    """The children of process pid: (comm, state) each."""
    out = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except (OSError, ValueError):
            continue
        comm, rest = st[st.index("(") + 1:st.rindex(")")], st[st.rindex(")") + 2:].split()
        if int(rest[1]) == pid:
            out.append((comm, rest[0]))
    return out


# Orphans come back to the task's supervisor (a child subreaper), which
# serves the sessions of an interactive task meanwhile: it reaps them, where
# they stayed zombies until the task ended, charged to the task's pids and
# its user's process limit; and so a command whose session was dropped while
# it ran (it was killed, then never reaped).
code_, out = run_in(wid, ["sh", "-c", "echo sup=$PPID; for i in $(seq 50); do (sleep 0 &); done"])
m = re.search(rb"sup=(\d+)", out)
sup = int(m.group(1)) if m else 0
ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", TA)
ex.hello(command=["sleep", "300"])
ex.until(lambda t, p, o: t == "READY")
ex.sock.close()
end = time.time() + 30
left = None
while time.time() < end:
    left = [c for c in children(sup) if c[1] == "Z" or c[0] == "sleep"]
    if not left:
        break
    time.sleep(0.1)
ok(sup > 0 and not left, "the supervisor reaps the task's orphans and a dropped exec's command",
   (sup, left))
# Messages sent in the same write as HELLO, before READY (a browser need not
# wait for it), arrive in the same read as HELLO: they are kept and handled
# once the session is open (they failed the session: "not open yet").
ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", TA)
ex.hello(then=[("STDIN", "same-read\n")], command=["sh", "-c", "read x; echo got-$x"])
try:
    t, p, out = ex.until(lambda t, p, o: t == "EXIT")
except RuntimeError as err:
    t, out = "ERROR", str(err).encode()
ok(t == "EXIT" and b"got-same-read" in out,
   "STDIN sent in the same write as HELLO reaches the command", out)
rs = attach(wid, header=True, then=[("RESIZE", struct.pack(">HH", 41, 133))], rows=30, cols=100)
try:
    rs.until(lambda t, p, o: t == "READY")
    rs.send("STDIN", "stty size\n")
    t, p, out = rs.until(lambda t, p, o: b"41 133" in o, limit=1 << 22)
except RuntimeError as err:
    out = str(err).encode()
ok(b"41 133" in out, "a RESIZE sent in the same write as HELLO reaches the terminal", out[-400:])
rs.close()
# A command that ends while input for it still waits in the daemon (it never
# reads its stdin, 1 MiB is sent): the task's side closes after EXIT, the
# daemon's write of that input fails, and that failure ended the session
# with an ERROR in place of the EXIT still to be read (gpupool exec of a
# short command met it at random, its stdin's EOF racing the close).
ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", TA)
ex.hello(command=["sh", "-c", "sleep 1; exit 4"])
ex.until(lambda t, p, o: t == "READY")


def flood(sock):
    try:
        for _ in range(16):
            sock.sendall(WS.message("STDIN", b"i" * 65536))
    except OSError:
        pass


flooder = threading.Thread(target=flood, args=(ex.sock,))
flooder.start()
try:
    t, p, out = ex.until(lambda t, p, o: t == "EXIT")
    got = ("EXIT", struct.unpack(">ii", p)[0])
except (RuntimeError, EOFError, OSError) as err:
    got = ("failed", str(err))
ex.sock.close()
flooder.join()
ok(got == ("EXIT", 4), "a command that ends with input still waiting for it: its EXIT comes", got)
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


def shell_end(revoke, header=None, **hello):
    """Opens a shell with exec (header: the token in the header, else in
    hello), revokes what opened it with revoke(), and returns how the
    session ended: (revoke's status, type, payload)."""
    ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", header)
    ex.hello(command=["sh", "-c", "while read l; do echo got-$l; done"], **hello)
    ex.send("STDIN", "one\n")
    ex.until(lambda t, p, o: b"got-one" in o)
    code = revoke()
    try:
        t, p, _ = ex.until(lambda t, p, o: t in ("ERROR", "EXIT", "CLOSE"))
    except OSError as err:
        t, p = "still open", repr(err).encode()
    ex.close()
    return code, t, p


# Signing out, or revoking a token, ends the sessions they opened: a shell
# opened by exec went on taking commands after either.
code, cs = api("POST", "/api/v1/console/session", TA)
secret = cs.get("session", "")
end = shell_end(lambda: api("DELETE", "/api/v1/console/session", secret)[0], token=secret)
ok(code == 201 and end[0] == 200 and end[1] == "ERROR" and b"revoked" in end[2],
   "a session opened with a console session ends at its sign-out", (code, end))
code, tok = api("POST", "/api/v1/tokens", ADMIN,
                {"name": "to-revoke", "user": os.environ["GP_USER_A"], "role": "researcher",
                 "scope": "proj"})
end = shell_end(lambda: api("DELETE", f"/api/v1/tokens/{tok.get('id')}", ADMIN)[0],
                header=tok.get("token"))
ok(code == 201 and end[0] == 200 and end[1] == "ERROR" and b"revoked" in end[2],
   "a session ends when its token is revoked", (code, end))

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

# A client that goes on sending as fast as it can after its session ended
# (here an exec whose command exited): what it sends is read and dropped a
# round at a time, so it holds up no other session, and it is cut off 5 s
# after the end. Dropped bytes had no bound of their own: the relay thread
# read this client alone for as long as it sent.
gone = WS(SERVER, f"/api/v1/workloads/{wid}/exec", TA)
gone.hello(command=["true"])
gone.until(lambda t, p, o: t == "EXIT")
burst = WS.message("DATA", b"f" * 65000) * 256
flood = {}


def flood_gone():
    t0 = time.time()
    try:
        while time.time() - t0 < 40:
            gone.sock.sendall(burst)
    except OSError as ex:
        flood["err"] = type(ex).__name__
    flood["for"] = round(time.time() - t0, 1)


flooder = threading.Thread(target=flood_gone, daemon=True)
flooder.start()
t0 = time.time()
still.send("STDIN", "echo alive-$((6*7))\n")
t, p, out = still.until(lambda t, p, o: b"alive-42" in o)
answered = round(time.time() - t0, 1)
flooder.join(60)
ok(answered < 15, "a client flooding a session that ended holds up no other session",
   f"answered after {answered} s")
ok("err" in flood and flood["for"] < 20, "and it is cut off within seconds of the end", flood)
gone.close()



def serve(script, name):
    """taplib.serve on the task's terminal ws."""
    return taplib.serve(lambda line: ws.send("STDIN", line + "\n"),
                        lambda pat: ws.until(lambda t, p, o: pat.search(o), limit=1 << 23)[2],
                        script, name)


# port-forward to a real HTTP server in the task (on a port it picks itself,
# which it prints: see serve)
ws.send("STDIN", "cd /tmp && python3 -m http.server 0 --bind 127.0.0.1 2>/dev/null &\n")
P_HTTP = int(re.search(rb"port (\d+) \(http", ws.until(
    lambda t, p, o: re.search(rb"port (\d+) \(http", o), limit=1 << 23)[2]).group(1))
fwd_ok = False
end = time.time() + 30
while time.time() < end and not fwd_ok:
    f = WS(SERVER, f"/api/v1/workloads/{wid}/port-forward?port={P_HTTP}", TA)
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
req = b"GET / HTTP/1.0\r\nHost: x\r\n\r\n"
f = forward_ready(wid, P_HTTP, then=[("DATA", req)])
try:
    first = f.until(lambda t, p, o: t == "EOF", limit=1 << 22)[2].split(b"\r\n")[0] if f else b""
except RuntimeError as err:
    first = str(err).encode()
ok(b"200" in first, "DATA sent in the same write as HELLO reaches the port", first)
if f:
    f.close()

# A message may come in several frames, a control frame between them, the
# type byte itself in a continuation (gpupoold passes a port's DATA on as
# wslay unmasks each piece, and bounds the whole message itself).
D = bytes([TYPES["DATA"]])
f = forward_ready(wid, P_HTTP)
first = b""
if f:
    f.frame(2, b"", fin=False)
    f.frame(0, D + req[:5], fin=False)
    f.frame(9, b"ping")
    f.frame(0, req[5:12], fin=False)
    f.frame(0, req[12:])
    try:
        first = f.until(lambda t, p, o: t == "EOF", limit=1 << 22)[2].split(b"\r\n")[0]
    except (RuntimeError, EOFError, OSError) as err:
        first = str(err).encode()
    f.close()
ok(b"200" in first, "DATA in four frames, a PING between them, reaches the port whole", first)
for what, frames, want in (
        ("a text frame", [(1, b"hello", True)], b"every message is binary"),
        ("an empty message", [(2, b"", True)], b"every message is binary"),
        ("DATA of 65,537 bytes in two frames", [(2, D + b"x" * 40000, False),
                                                 (0, b"x" * 25537, True)], b"longer than 65536")):
    f = forward_ready(wid, P_HTTP)
    got = b""
    if f:
        for op, payload, fin in frames:
            f.frame(op, payload, fin=fin)
        try:
            got = f.until(lambda t, p, o: t == "ERROR")[1]
        except (RuntimeError, EOFError, OSError) as err:
            got = str(err).encode()
        f.close()
    ok(want in got, f"{what} on a forwarded port is refused with the reason", got)

# A user within their own caps is not cut off: with the daemon's defaults
# (this daemon sets only --max-user-sessions), 64 forwarded connections (the
# default --max-user-forwards) beside this user's terminal sessions and API
# calls, all from one address. The per-address limit was 64, below what one
# user may hold: the daemon closed the 60th or so connection unanswered.
P_HOLD = serve(("import socket\ns=socket.socket();s.bind((\"127.0.0.1\",0));s.listen(256)",
                "held=[]\nwhile True: held.append(s.accept()[0])"), "hold")
first = forward_ready(wid, P_HOLD, limit=60)
fwds, last = [first] if first else [], None
for i in range(63 if first else 0):
    try:
        f = WS(SERVER, f"/api/v1/workloads/{wid}/port-forward?port={P_HOLD}", TA)
        if f.status != 101:
            last = (f.status, f.body)
            break
        f.hello()
        last = f.recv()
        if last[0] != "READY":
            break
        fwds.append(f)
    except (OSError, EOFError, RuntimeError) as ex:
        last = repr(ex)
        break
code, _ = api("GET", f"/api/v1/workloads/{wid}", TA)
ok(len(fwds) == 64 and code == 200, "a user holding the default 64 forwards and their sessions "
   "is not cut off, and the API still answers them", (len(fwds), last, code))
over = WS(SERVER, f"/api/v1/workloads/{wid}/port-forward?port={P_HOLD}", TA)
ok(over.status == 409 and b"max-user-forwards" in over.body,
   "the 65th forward is refused by the user's cap, with its reason", (over.status, over.body))
over.sock.close()


def owners(port):
    """The uids owning the sockets connected to 127.0.0.1:port (the
    forwarded connections' side that the task's supervisor makes)."""
    uids = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            col = row.split()
            if col[3] == "01" and int(col[2].rsplit(":", 1)[1], 16) == port:
                uids.add(int(col[7]))
    return uids


# The task's side of a forwarded connection is made by its supervisor, root:
# its socket was root's, and a loopback service that admits only root's
# sockets (iptables -m owner --uid-owner 0) admitted the task's user.
held = owners(P_HOLD)
ok(held == {pwd.getpwnam(os.environ["GP_USER_A"]).pw_uid},
   "a forwarded connection's socket is the task user's, not root's", held)
for f in fwds:
    f.close()

# Tasks may share the node's network: another user's process listening on a
# port there answered a forward to that port as if it were the task's (a
# notebook's forward would have sent it the notebook's token).
squat = subprocess.Popen(
    [shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin"), "-c", "import socket\ns=socket.socket();s.bind(('127.0.0.1',0));s.listen(8)\n"
     "print(s.getsockname()[1],flush=True)\nheld=[]\nwhile True: held.append(s.accept()[0])"],
    stdout=subprocess.PIPE, preexec_fn=lambda: os.setuid(pwd.getpwnam(os.environ["GP_USER_B"]).pw_uid))
P_SQUAT = int(squat.stdout.readline())
f = WS(SERVER, f"/api/v1/workloads/{wid}/port-forward?port={P_SQUAT}", TA)
f.hello()
try:
    t, p = f.recv()
except (EOFError, OSError) as err:
    t, p = "EOF", repr(err).encode()
f.close()
squat.kill()
squat.wait()
ok(t == "ERROR" and b"not the task's" in p,
   "a forward to a port another user's process holds is refused", (t, p))

# A client's EOF (a half-close) reaches the task's side only after every byte
# sent before it: a sink that starts reading late, when the daemon still
# holds bytes for it (its receive buffer is small), counts them all and its
# answer comes back. GP_SESS_CLIENT_HALF_CLOSE=no skips it. (On the slurm
# executor its connection was reset now and then: the sink's port was picked
# free here long before the sink bound it, and the held forwards' sruns above
# take some 200 ports of the same range meanwhile; a sink that could not bind
# ended silently and the forward reached the listener that held its port,
# which reset the upload. The sink now picks its own port: serve.)
client_half_close = os.environ.get("GP_SESS_CLIENT_HALF_CLOSE", "yes") != "no"
P_SINK = serve(("import socket,time\ns=socket.socket();"
                "s.setsockopt(socket.SOL_SOCKET,socket.SO_RCVBUF,4096);"
                "s.bind((\"127.0.0.1\",0));s.listen(1)",
                "while True:\n c,_=s.accept();time.sleep(1);n=0\n while True:\n  d=c.recv(1<<20)\n"
                "  if not d: break\n  n+=len(d)\n c.sendall(b\"count=%d\" % n);c.close()"), "sink")
total = 8 << 20
answer = b"" if client_half_close else b"count=%d" % total
end = time.time() + 60
while time.time() < end and b"count=" not in answer:
    f = WS(SERVER, f"/api/v1/workloads/{wid}/port-forward?port={P_SINK}", TA)
    if f.status != 101:  # the forwards above not all given back yet
        f.sock.close()
        time.sleep(0.2)
        continue
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
   "and the answer after it" + ("" if client_half_close else
                                " # SKIP not carried reliably by this executor yet"), answer)

# A port that goes away in the middle of an upload (it reads a little,
# answers and closes with the rest unread, which resets its connection):
# the client is not reset in turn while it still sends. gpupoold reads and
# drops what it sends after the end until the client's close frame, so the
# client finishes its upload and then reads the session's end (the port's
# EOF or an ERROR, and the close); a reset there lost that end and failed
# the client's write (ECONNRESET).
P_GONE = serve(("import socket\ns=socket.socket();s.bind((\"127.0.0.1\",0));s.listen(8)",
                "while True:\n c,_=s.accept();c.recv(1);c.sendall(b\"bye\");c.close()"), "gone")
f = forward_ready(wid, P_GONE, limit=60)
seen, err = [], ""
if f:
    try:
        chunk = b"g" * 65535
        for _ in range(total // len(chunk)):
            f.send("DATA", chunk)
        f.send("EOF")
        while not seen or seen[-1] != "CLOSE":
            seen.append(f.recv()[0])
    except (EOFError, OSError) as ex:
        err = repr(ex)
    f.close()
ok(not err and seen[-1:] == ["CLOSE"] and ("EOF" in seen or "ERROR" in seen),
   "a port gone in the middle of an upload: the client's upload is not reset, and it reads "
   "the end of the session", (seen, err))

# The other direction: the task's side half-closes first (a greeting, then
# its EOF) and the client still sends: the upload is not cut short (the
# session ended at the task's EOF and dropped what followed), and the
# session ends once both sides have sent their EOF. The task's program
# writes what it counted to a file, read back with exec.
# An executor that cannot carry the task's half-close alone (the slurm
# executor's relay through srun, whose output ends only with its step) sets
# GP_SESS_TASK_HALF_CLOSE=no: these two cases are then skipped.
if os.environ.get("GP_SESS_TASK_HALF_CLOSE", "yes") != "no":
    half = "/tmp/gp-half-%d" % os.getpid()
    P_HALF = serve(("import socket,os\ns=socket.socket();s.bind((\"127.0.0.1\",0));s.listen(1)",
                    "while True:\n c,_=s.accept();c.sendall(b\"hello-from-task\");"
                    "c.shutdown(socket.SHUT_WR);n=0\n while True:\n  d=c.recv(1<<20)\n"
                    "  if not d: break\n  n+=len(d)\n open(\"%s.tmp\",\"w\").write(\"count=%%d\" %% n)\n"
                    " os.rename(\"%s.tmp\",\"%s\");c.close()" % (half, half, half)), "half")
    f = forward_ready(wid, P_HALF, limit=60)
    greeting, ended, err = b"", None, ""
    if f:
        try:
            greeting = f.until(lambda t, p, o: t == "EOF")[2]
            chunk = b"z" * 65535
            for _ in range(total // len(chunk)):
                f.send("DATA", chunk)
            f.send("DATA", b"z" * (total % len(chunk)))
            f.send("EOF")
            ended = f.until(lambda t, p, o: t == "CLOSE")[0]
        except (RuntimeError, EOFError, OSError) as ex:
            err = repr(ex)
        f.close()
    ok(greeting == b"hello-from-task" and ended == "CLOSE",
       "after the port's EOF the client still sends; the session ends after both EOFs",
       (greeting, ended, err))
    counted = b""
    end = time.time() + 60
    while time.time() < end and counted != b"count=%d" % total:
        counted = run_in(wid, ["sh", "-c", f"cat {half} 2>/dev/null; true"])[1].strip()
        if counted != b"count=%d" % total:
            time.sleep(0.2)
    ok(counted == b"count=%d" % total, "every byte sent after the port's EOF reaches it", counted)
else:
    why = "# SKIP the executor cannot carry the task's half-close alone"
    ok(True, "after the port's EOF the client still sends " + why)
    ok(True, "every byte sent after the port's EOF reaches it " + why)

# the command's exit status ends the session
ws.send("STDIN", "exit 3\n")
t, p, out = ws.until(lambda t, p, o: t == "EXIT", limit=1 << 24)
ok(struct.unpack(">ii", p)[0] == 3, "the shell's exit status comes as EXIT", p)
ok(wait_state(wid, "failed") == "failed", "the workload ends with it")

taplib.done()
