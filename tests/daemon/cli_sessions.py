#!/usr/bin/env python3
"""tests/daemon/cli_sessions.py — the cases of test-cli-sessions.sh, as TAP:
the gpupool command on a real pseudo-terminal (python's pty module) against
a real gpupoold: run -it, detach, attach, Ctrl-C, exit status, exec,
port-forward to a real HTTP server in the task, refusals, and a real Jupyter
reached through gpupool notebook. Waits on conditions, never on fixed sleeps."""
import hashlib
import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import taplib  # noqa: E402

GP = os.environ["GP"]
GPU = os.environ.get("GP_SESS_GPU", "0.25")
n = failed = 0


def ok(cond, name, detail=""):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {name}")
    if not cond:
        failed += 1
        for line in str(detail).splitlines()[-12:]:
            print(f"#   {line}")
    sys.stdout.flush()


def spawn(args, env=None):
    pid, fd = pty.fork()
    if pid == 0:
        if env:
            os.environ.update(env)
        os.execvp(args[0], args)
    return pid, fd


class Term:
    def __init__(self, args, env=None):
        self.pid, self.fd = spawn(args, env)
        self.buf = b""

    def expect(self, needle, limit=60):
        """The output up to needle (bytes, or a compiled bytes pattern)."""
        pat = needle if isinstance(needle, re.Pattern) else re.compile(re.escape(needle))
        end = time.time() + limit
        while pat.search(self.buf) is None and time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.5)
            if r:
                try:
                    d = os.read(self.fd, 65536)
                except OSError:
                    break
                if not d:
                    break
                self.buf += d
        m = pat.search(self.buf)
        if m is None:
            raise RuntimeError(f"{needle!r} never came; got {self.buf[-400:]!r}")
        out, self.buf = self.buf[:m.end()], self.buf[m.end():]
        return out

    def type(self, s):
        os.write(self.fd, s.encode() if isinstance(s, str) else s)

    def wait(self, limit=60):
        end = time.time() + limit
        while time.time() < end:
            try:
                r, _, _ = select.select([self.fd], [], [], 0.2)
                if r:
                    self.buf += os.read(self.fd, 65536)
            except OSError:
                pass
            p, st = os.waitpid(self.pid, os.WNOHANG)
            if p == self.pid:
                return os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)
        os.kill(self.pid, signal.SIGKILL)
        return None


def case(name, fn):
    try:
        fn()
    except Exception as e:  # a case that breaks fails alone
        ok(False, name, repr(e))


def gp(*args, token=None):
    env = dict(os.environ)
    if token:
        env["GPUPOOL_TOKEN"] = token
    return subprocess.run([GP, *args], capture_output=True, text=True, env=env, timeout=60)


# ---- run -it, detach, attach, Ctrl-C, exit status ----
t = Term([GP, "run", "-it", "--project", "proj", "--gpu", GPU, "--env", "PS1=gp$ ", "--",
          "/bin/bash", "--norc", "-i"])
head = t.expect(b"gp$ ")
wid = re.search(rb"workload (\d+)", head).group(1).decode()
ok(True, "run -it prints the workload's id and reaches the shell's prompt")
t.type("GPVAR=kept; echo hi-$((6*7))\r")
t.expect(b"hi-42")
ok(True, "typed into the remote shell, read its answer")
t.type(b"\x10\x11")
t.expect(b"detached")
ok(t.wait() == 0, "Ctrl-P Ctrl-Q detaches: the CLI exits 0")
ok(gp("describe", wid, "--json").stdout.count('"running"') > 0, "the workload keeps running")
t = Term([GP, "attach", wid])
ok(b"hi-42" in t.expect(b"hi-42"), "attach replays the recent output")
t.type("echo var=$GPVAR\r")
t.expect(b"var=kept")
ok(True, "a shell variable set before the detach is still there")
t.type("stty size\r")
t.expect(b"stty size")
ok(re.search(rb"\d+ \d+", t.expect(b"gp$ ")) is not None, "the terminal's size was sent")
t.type("sleep 300\r")
t.expect(b"sleep 300")
# One Ctrl-C, once the sleep really runs in the task: an interrupt typed
# while bash is still forking the job can end bash itself (a race of bash's,
# shown on a plain pseudo-terminal without gpupool; see sessions.py).
end = time.time() + 60
while time.time() < end and gp("exec", wid, "--", "sh", "-c",
                               "pgrep -u \"$(id -u)\" -f -x 'sleep 300'").returncode != 0:
    time.sleep(0.2)
t.type(b"\x03")
t.expect(b"gp$ ", limit=60)
t.type("echo back-$((2+3))\r")
t.expect(b"back-5")
ok(True, "Ctrl-C reaches the workload's foreground command")

# ---- exec ----
r = gp("exec", wid, "--", "sh", "-c", "echo exec-$GPUPOOL_WORKLOAD_ID; exit 4")
ok(r.returncode == 4 and f"exec-{wid}" in r.stdout, "exec runs in the task with its environment "
   "and exits with the command's status", (r.returncode, r.stdout, r.stderr))
# One exec after another (the relay once freed a session that an event of
# the same batch still named, and gpupoold died after a few of these).
codes = [gp("exec", wid, "--", "sh", "-c", "exit 4").returncode for _ in range(20)]
ok(codes == [4] * 20, "20 exec sessions one after another, each with its status", codes)
e = Term([GP, "exec", "-it", wid, "--", "sh", "-c", "tty; exit 0"])
ok(b"/dev/pts/" in e.expect(b"/dev/pts/") and e.wait() == 0, "exec -it runs on a terminal")

# ---- port-forward to a real HTTP server in the task ----
# The shell first answers a line, so that everything typed before (the
# Ctrl-C case's keys) has been read: the server's line typed straight after
# the exec cases was lost in CI and the server never started.
t.type("echo ready-$((3+4))\r")
t.expect(b"ready-7", limit=60)


def serve(script, name):
    """taplib.serve on the attached terminal t: the server picks its port."""
    return taplib.serve(lambda line: t.type(line + "\r"), t.expect, script, name)


P_HTTP = serve(("import http.server as h,os\nos.chdir(\"/tmp\");"
                "srv=h.ThreadingHTTPServer((\"127.0.0.1\",0),h.SimpleHTTPRequestHandler);"
                "s=srv.socket", "srv.serve_forever()"), "http")
pf = subprocess.Popen([GP, "port-forward", wid, f"0:{P_HTTP}"], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)
line = pf.stdout.readline()
m = re.search(r"127\.0\.0\.1:(\d+)", line)
ok(m is not None, "port-forward listens on loopback and says where", line)
body = None
end = time.time() + 60
while m and time.time() < end and body is None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/", timeout=10) as resp:
            body = resp.read()
    except Exception:
        time.sleep(0.2)
ok(body is not None and b"Directory listing" in body,
   "an HTTP request through port-forward reaches the server in the task")
# An answer longer than one message (64 KiB): gpupoold sent the task's bytes
# in DATA messages of up to 65,540 bytes, which the CLI rightly refused
# (1009), so a browser got an empty reply for every larger file.
big = os.urandom(1 << 20)
with tempfile.NamedTemporaryFile(dir="/tmp", prefix="gpupool-fwd-") as f:
    f.write(big)
    f.flush()
    got = None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1) if m else 0}/"
                                    f"{os.path.basename(f.name)}", timeout=60) as resp:
            got = resp.read()
    except Exception as ex:
        got = ex
    ok(got == big, "a 1 MiB answer comes whole through port-forward",
       got if not isinstance(got, bytes) else len(got))
pf.terminate()
pf.wait()

# Half-closes through port-forward, both ways, 8 MiB each. "answer": the
# local client sends, half-closes, and reads what the task counted and the
# SHA-256 of what it got (the CLI frames and masks the upload itself, so a
# byte masked wrong changes the sum, not the count). "first":
# the task greets, half-closes first, and counts what the client still sends
# (the CLI stopped at the task's EOF and closed the local connection, so the
# upload was cut); it writes the same count and sum to a file. The task
# shares /tmp here. The server (serve) runs this on its listening socket s,
# with mode and out set.
HALF = '''import hashlib, os, socket
while True:
    c, _ = s.accept()
    if mode == "first":
        c.sendall(b"hello-from-task")
        c.shutdown(socket.SHUT_WR)
    n, h = 0, hashlib.sha256()
    while True:
        d = c.recv(1 << 20)
        if not d:
            break
        n += len(d)
        h.update(d)
    said = "count=%d sha256=%s" % (n, h.hexdigest())
    if mode == "first":
        with open(out + ".tmp", "w") as f:
            f.write(said)
        os.rename(out + ".tmp", out)
    else:
        c.sendall(said.encode())
    c.close()
'''
TOTAL = 8 << 20
UPLOAD = os.urandom(TOTAL)
COUNTED = b"count=%d sha256=%s" % (TOTAL, hashlib.sha256(UPLOAD).hexdigest().encode())
prog = f"/tmp/gpupool-half-{os.getpid()}.py"
with open(prog, "w") as fh:
    fh.write(HALF)
os.chmod(prog, 0o644)


def read_all(c):
    """What c receives until its EOF."""
    got = b""
    while True:
        d = c.recv(65536)
        if not d:
            return got
        got += d


def half_close(mode):
    out = f"/tmp/gpupool-half-{os.getpid()}-{mode}"
    port = serve(("import socket\ns=socket.socket();s.bind((\"127.0.0.1\",0));s.listen(4)",
                  f"mode,out=\"{mode}\",\"{out}\"\nexec(open(\"{prog}\").read())"),
                 f"half-{mode}")
    pf = subprocess.Popen([GP, "port-forward", wid, f"0:{port}"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    try:
        local = int(re.search(r"127\.0\.0\.1:(\d+)", pf.stdout.readline()).group(1))
        got, err = b"", ""
        end = time.time() + 60
        # Until the task listens: before, the forward's connection ends at once.
        while time.time() < end:
            c = socket.create_connection(("127.0.0.1", local), timeout=60)
            try:
                if mode == "first":
                    greeting = read_all(c)
                    if greeting != b"hello-from-task":
                        raise ConnectionError(f"greeting {greeting!r}")
                c.sendall(UPLOAD)
                c.shutdown(socket.SHUT_WR)
                got = read_all(c)
                if mode == "answer" and not got:
                    raise ConnectionError("no answer (the task did not listen yet)")
                break
            except OSError as ex:
                err = repr(ex)
                time.sleep(0.2)
            finally:
                c.close()
        if mode == "first":
            end = time.time() + 60
            while time.time() < end and not os.path.exists(out):
                time.sleep(0.1)
            got = open(out, "rb").read() if os.path.exists(out) else got
        return got, err
    finally:
        pf.terminate()
        pf.wait()
        if os.path.exists(out):
            os.unlink(out)


got, err = half_close("answer")
ok(got == COUNTED, "port-forward: the local side half-closes, every byte reaches "
   "the task as sent and its answer comes back", (got, err))
got, err = half_close("first")
ok(got == COUNTED, "port-forward: the task half-closes first, and every byte the "
   "local side still sends reaches it as sent", (got, err))
os.unlink(prog)

# ---- refusals: at once, non-zero, with the reason ----
tb = os.environ["GP_TOKEN_B"]
for args in (["attach", wid], ["exec", wid, "--", "true"], ["port-forward", wid, "0:80"]):
    t0 = time.time()
    r = gp(*args, token=tb)
    ok(r.returncode != 0 and time.time() - t0 < 30 and r.stderr.strip() != "",
       f"another user's token: {args[0]} refused at once with the reason", r.stderr)
r = gp("port-forward", "999999", "8000")
ok(r.returncode == 5, "port-forward to an unknown workload: exit 5 at once", r.stderr)
r = gp("port-forward", wid, "70000")
ok(r.returncode == 2, "a port out of range: a usage error", r.stderr)

# the command's exit status becomes the CLI's
t.type("exit 7\r")
ok(t.wait() == 7, "the shell's exit status becomes the CLI's")

# ---- a real Jupyter through gpupool notebook ----
if os.path.exists("/usr/bin/jupyter-notebook"):
    nb = subprocess.Popen([GP, "notebook", "--project", "proj", "--gpu", GPU],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = None
    end = time.time() + 240
    while time.time() < end:
        r, _, _ = select.select([nb.stdout], [], [], 1)
        if r:
            line = nb.stdout.readline()
            m = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\w+)", line)
            if m:
                url = m
                break
            if not line:
                break
    said = ""
    if url is None:
        # Why, from the CLI itself (it may still be waiting).
        nb.terminate()
        try:
            said = nb.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:
            nb.kill()
            said = "(gpupool notebook did not end)"
    ok(url is not None, "gpupool notebook prints the local URL with Jupyter's token", said)
    status = None
    if url:
        req = urllib.request.Request(url.group(1) + "/api/status",
                                     headers={"Authorization": f"token {url.group(2)}"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status = json.loads(resp.read())
        except Exception as ex:
            status = ex
    ok(isinstance(status, dict) and "started" in status,
       "Jupyter's API answers through the forward with its token", status)
    nb.terminate()
    nb.wait()
else:
    ok(True, "# SKIP jupyter-notebook not installed (scripts/install-deps.sh)")

print(f"1..{n}")
sys.exit(1 if failed else 0)
