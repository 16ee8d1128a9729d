#!/usr/bin/env python3
"""bench/bench-sessions.py — sessions through a real gpupoold on loopback,
each figure beside its baseline measured in the same run (figures, not a
timed test; the issue's targets are printed with them):

  - start: `gpupool run -it --gpu 0.25 -- /bin/sh -i` on a pseudo-terminal
    until the shell's prompt shows (submit, wait running, WebSocket, READY,
    prompt), against the same shell started directly on a pseudo-terminal;
  - echo: one keystroke typed into a terminal (cat's, which the terminal
    echoes) and its echo read back through gpupoold, p50 / p99 of round
    trips, against the same keystroke on a pseudo-terminal of this process;
  - api: GET /api/v1/workloads/{id}, p50 / p99, while N sessions (exec'd
    into 20 interactive workloads, each read by a WebSocket client here)
    each print 10 KiB a second, against the same with no session;
  - forward: MB/s through `gpupool port-forward` into a sink in the task and
    out of a source in the task, against the same programs reached directly
    over loopback TCP; with the CPU time gpupoold and the CLI spent per GB
    carried (user + system, from /proc/PID/stat), steadier than MB/s on a
    loaded machine.

`--only start,echo,forward,api` runs only the parts named (GP_BENCH_FORWARD_MIB
sets the bytes of each forward run, default 512).

It starts its own gpupoold (BUILD/gpupoold, BUILD from GP_BUILD, default
build) on a temporary data directory, with the session caps raised to fit N
(GP_BENCH_SESSIONS, default 200) and a project deserving 8 GPUs. The
workloads ask for no CPU: interactive work runs only inside its project's
deserved quota, so a CPU request in a project deserving no CPU stays pending.
Each figure is the median of GP_BENCH_RUNS runs (default 3)."""
import os
import pty
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "daemon"))
from taplib import free_port  # noqa: E402
from wsclient import WS  # noqa: E402
from benchpool import call, start_gpupoold  # noqa: E402

BUILD = os.environ.get("GP_BUILD", "build")
GP = os.path.join(BUILD, "gpupool")
NSESS = int(os.environ.get("GP_BENCH_SESSIONS", "200"))
RUNS = int(os.environ.get("GP_BENCH_RUNS", "3"))
FWD_BYTES = int(os.environ.get("GP_BENCH_FORWARD_MIB", "512")) << 20
NWL = 20  # workloads the N printing sessions are spread over
PROJECT = "bench"
SERVER = TOKEN = None
GPD_PID = None
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """CPU seconds (user + system, every thread) pid has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def api(method, path, body=None):
    return call(SERVER, TOKEN, method, path, body)


def submit(cmd, env=None):
    body = {"project": PROJECT, "command": cmd, "tty": True}
    if env:
        body["env"] = env
    return api("POST", "/api/v1/workloads", body)["id"]


def wait_running(wid):
    end = time.time() + 120
    while time.time() < end:
        w = api("GET", f"/api/v1/workloads/{wid}")
        if w["state"] == "running":
            return
        if w["state"] in ("failed", "succeeded", "deleted"):
            raise RuntimeError(f"workload {wid} {w['state']}: {w.get('reason')}")
        time.sleep(0.005)
    raise RuntimeError(f"workload {wid} did not start: {w.get('pending_reason', w)}")


def logs(wid):
    req = urllib.request.Request(SERVER + f"/api/v1/workloads/{wid}/logs", method="GET",
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read()


def delete(wid):
    api("DELETE", f"/api/v1/workloads/{wid}")


def attach(wid, route="attach", **hello):
    ws = WS(SERVER, f"/api/v1/workloads/{wid}/{route}", TOKEN)
    if ws.status != 101:
        raise RuntimeError(f"{route}: HTTP {ws.status} {ws.body!r}")
    ws.hello(**(hello or {"rows": 24, "cols": 80}))
    ws.until(lambda t, p, o: t == "READY")
    return ws


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def med(xs):
    return statistics.median(xs)


# ---- start: run -it to a prompt ----

def until_prompt(fd, pid, limit=60):
    out = b""
    end = time.time() + limit
    while not out.rstrip().endswith(b"gp$"):
        if time.time() > end:
            raise RuntimeError(f"no prompt: {out[-300:]!r}")
        r, _, _ = select.select([fd], [], [], 1)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                raise RuntimeError(f"ended before its prompt: {out[-300:]!r}")


def spawn_pty(argv, env):
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid, fd


def end_pty(pid, fd):
    try:
        os.write(fd, b"exit\n")
    except OSError:
        pass
    end = time.time() + 30
    while time.time() < end:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            break
        try:
            select.select([fd], [], [], 0.2)
            os.read(fd, 65536)
        except OSError:
            pass
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    os.close(fd)


def start_pool():
    env = dict(os.environ, GPUPOOL_SERVER=SERVER, GPUPOOL_TOKEN=TOKEN, TERM="xterm")
    t0 = time.perf_counter()
    pid, fd = spawn_pty([GP, "run", "-it", "--project", PROJECT, "--gpu", "0.25", "--env",
                         "PS1=gp$ ", "--", "/bin/sh", "-i"], env)
    until_prompt(fd, pid)
    dt = time.perf_counter() - t0
    end_pty(pid, fd)
    return dt


def start_direct():
    t0 = time.perf_counter()
    pid, fd = spawn_pty(["/bin/sh", "-i"], dict(os.environ, PS1="gp$ ", TERM="xterm"))
    until_prompt(fd, pid)
    dt = time.perf_counter() - t0
    end_pty(pid, fd)
    return dt


# ---- echo: a keystroke's round trip ----

def echo_pool(n=2000):
    wid = submit(["cat"])
    wait_running(wid)
    ws = attach(wid)
    ws.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    for i in range(n):
        ch = bytes([97 + i % 26])
        t0 = time.perf_counter()
        ws.send("STDIN", ch)
        ws.until(lambda t, p, o: ch in o)
        rtts.append(time.perf_counter() - t0)
        if i % 64 == 63:  # a line now and then, so that cat's line stays short
            ws.send("STDIN", "\n")
            ws.until(lambda t, p, o: o.count(b"\n") >= 2)
    ws.close()
    delete(wid)
    return pct(rtts, 0.5) * 1000, pct(rtts, 0.99) * 1000


def echo_direct(n=2000):
    pid, fd = spawn_pty(["cat"], dict(os.environ))
    rtts = []
    for i in range(n):
        ch = bytes([97 + i % 26])
        t0 = time.perf_counter()
        os.write(fd, ch)
        got = b""
        while ch not in got:
            got += os.read(fd, 4096)
        rtts.append(time.perf_counter() - t0)
        if i % 64 == 63:
            os.write(fd, b"\n")
            got = b""
            while got.count(b"\n") < 2:
                got += os.read(fd, 4096)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(fd)
    return pct(rtts, 0.5) * 1000, pct(rtts, 0.99) * 1000


# ---- forward: bytes through gpupool port-forward ----

SINK = ("import socket,sys\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,"
        "socket.SO_REUSEADDR,1);s.bind(('127.0.0.1',int(sys.argv[1])));s.listen(8)\n"
        "print('listening',flush=True)\n"
        "while True:\n c,_=s.accept()\n n=0\n while True:\n  d=c.recv(1<<20)\n"
        "  if not d: break\n  n+=len(d)\n c.sendall(str(n).encode());c.close()")
SOURCE = ("import socket,sys\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,"
          "socket.SO_REUSEADDR,1);s.bind(('127.0.0.1',int(sys.argv[1])));s.listen(8)\n"
          "print('listening',flush=True)\nb=b'x'*(1<<20)\n"
          "while True:\n c,_=s.accept()\n for i in range(int(sys.argv[2])): c.sendall(b)\n"
          " c.close()")


def connect_retry(port):
    end = time.time() + 60
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.05)


def copy_up(port, total):
    """Sends total bytes to the sink behind port; MB/s once it counted them."""
    chunk = b"x" * (1 << 20)
    while True:
        c = connect_retry(port)
        t0 = time.perf_counter()
        try:
            c.sendall(chunk)
            break
        except OSError:
            c.close()  # the far side was not listening yet
            time.sleep(0.05)
    sent = len(chunk)
    while sent < total:
        c.sendall(chunk)
        sent += len(chunk)
    c.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        d = c.recv(64)
        if not d:
            break
        got += d
    dt = time.perf_counter() - t0
    c.close()
    if int(got or 0) != sent:
        raise RuntimeError(f"the sink counted {got!r} of {sent}")
    return sent / dt / 1e6


def copy_down(port, total):
    """Reads the source behind port to its end; MB/s."""
    got = 0
    while got == 0:
        c = connect_retry(port)
        t0 = time.perf_counter()
        while True:
            d = c.recv(1 << 20)
            if not d:
                break
            got += len(d)
        c.close()
        if got == 0:
            time.sleep(0.05)  # the far side was not listening yet
    dt = time.perf_counter() - t0
    if got != total:
        raise RuntimeError(f"read {got} of {total} bytes")
    return got / dt / 1e6


def forward(prog, copy, through_pool):
    port = free_port()
    argv = ["python3", "-c", prog, str(port), str(FWD_BYTES >> 20)]
    if not through_pool:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE)
        try:
            p.stdout.readline()  # listening
            return copy(port, FWD_BYTES)
        finally:
            p.kill()
            p.wait()
    wid = submit(argv)
    wait_running(wid)
    end = time.time() + 60
    while b"listening" not in logs(wid):
        if time.time() > end:
            raise RuntimeError(f"workload {wid} did not listen")
        time.sleep(0.02)
    env = dict(os.environ, GPUPOOL_SERVER=SERVER, GPUPOOL_TOKEN=TOKEN)
    pf = subprocess.Popen([GP, "port-forward", str(wid), f"0:{port}"], stdout=subprocess.PIPE,
                          env=env, text=True)
    try:
        local = int(re.search(r"127\.0\.0\.1:(\d+)", pf.stdout.readline()).group(1))
        d0, c0 = cpu_s(GPD_PID), cpu_s(pf.pid)
        rate = copy(local, FWD_BYTES)
        gb = FWD_BYTES / 1e9
        return rate, (cpu_s(GPD_PID) - d0) / gb, (cpu_s(pf.pid) - c0) / gb
    finally:
        pf.terminate()
        pf.wait()
        delete(wid)


# ---- api: p99 with N printing sessions ----

def api_lat(wid, n=300):
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        api("GET", f"/api/v1/workloads/{wid}")
        lat.append(time.perf_counter() - t0)
    return pct(lat, 0.5) * 1000, pct(lat, 0.99) * 1000


# 10 KiB a second with no process started per line: bash's read times out
# on a pipe nobody writes.
PRINTER = ["/bin/bash", "-c",
           "s=$(printf '%10239s' ''); exec 3<> <(:); "
           "while :; do printf '%s\\n' \"$s\"; read -t 1 -u 3; done"]


def api_under_sessions(nsess):
    probe = submit(["sleep", "3600"])
    wids = [submit(["/bin/sh", "-c", "exec sleep 3600"]) for _ in range(NWL)]
    for w in [probe] + wids:
        wait_running(w)
    idle = [api_lat(probe) for _ in range(RUNS)]
    stop = threading.Event()
    opened = threading.Barrier(nsess + 1, timeout=300)
    got = [0] * nsess
    errs = []

    def reader(i):
        ws = None
        try:
            ws = attach(wids[i % NWL], "exec", command=PRINTER)
            ws.sock.settimeout(10)
        except Exception as ex:  # noqa: BLE001 (counted, printed below)
            errs.append(repr(ex))
        opened.wait()
        while ws is not None and not stop.is_set():
            try:
                t, p = ws.recv()
                got[i] += len(p)
            except Exception:  # noqa: BLE001
                break
        if ws is not None:
            ws.close()

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(nsess)]
    for t in threads:
        t.start()
    opened.wait()
    # Until the printers keep their pace (90% of it read in a second), or 30 s.
    want = nsess * 10240 * 0.9
    end = time.time() + 30
    while time.time() < end:
        before = sum(got)
        time.sleep(1)
        if sum(got) - before >= want:
            break
    before = sum(got)
    t0 = time.perf_counter()
    busy = [api_lat(probe) for _ in range(RUNS)]
    while time.perf_counter() - t0 < 3:  # the rate over 3 s at least
        time.sleep(0.1)
    rate = (sum(got) - before) / (time.perf_counter() - t0)
    stop.set()
    for t in threads:
        t.join(15)
    for w in [probe] + wids:
        delete(w)
    if errs:
        raise RuntimeError(f"{len(errs)} sessions did not open: {errs[:3]}")
    return idle, busy, rate


def start_daemon(tmp):
    p, server, token, _ = start_gpupoold(BUILD, tmp, [
        "--period", "50ms", "--poll", "100ms", "--max-user-sessions", str(NSESS + 16),
        "--max-user-forwards", "64", "--max-client-connections", str(NSESS + 128)])
    return p, server, token


def main():
    global SERVER, TOKEN, GPD_PID
    parts = {"start", "echo", "forward", "api"}
    if len(sys.argv) == 3 and sys.argv[1] == "--only":
        parts = set(sys.argv[2].split(","))
    elif len(sys.argv) != 1:
        raise SystemExit("usage: bench-sessions.py [--only start,echo,forward,api]")
    tmp = tempfile.mkdtemp(prefix="bench-sessions.")
    gpd, SERVER, TOKEN = start_daemon(tmp)
    GPD_PID = gpd.pid
    try:
        env = dict(os.environ, GPUPOOL_SERVER=SERVER, GPUPOOL_TOKEN=TOKEN)
        subprocess.run([GP, "queue", "create", PROJECT, "--deserved", "8"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        la = os.getloadavg()[0]
        print(f"sessions: {os.cpu_count()} CPUs, load average {la:.1f}; "
              f"medians of {RUNS} runs; pool vs direct")
        if "start" in parts:
            sp = [start_pool() for _ in range(RUNS)]
            sd = [start_direct() for _ in range(RUNS)]
            print(f"  run -it to a prompt: {med(sp) * 1000:.0f} ms "
                  f"(runs {', '.join(f'{x * 1000:.0f}' for x in sp)}); a shell on a pty: "
                  f"{med(sd) * 1000:.1f} ms; target <= 1000 ms")
        if "echo" in parts:
            ep = [echo_pool() for _ in range(RUNS)]
            ed = [echo_direct() for _ in range(RUNS)]
            p50, p99 = med(e[0] for e in ep), med(e[1] for e in ep)
            d50, d99 = med(e[0] for e in ed), med(e[1] for e in ed)
            print(f"  keystroke echo through gpupoold: p50 {p50:.3f} ms, p99 {p99:.3f} ms; "
                  f"on a pty: p50 {d50:.3f} ms, p99 {d99:.3f} ms ({p99 / d99:.1f}x at p99); "
                  f"target p99 <= 5 ms")
        for name, prog, copy in (("client to task", SINK, copy_up),
                                 ("task to client", SOURCE, copy_down)):
            if "forward" not in parts:
                break
            fp = [forward(prog, copy, True) for _ in range(RUNS)]
            fd = [forward(prog, copy, False) for _ in range(RUNS)]
            rate = med(x[0] for x in fp)
            print(f"  port-forward {name}, {FWD_BYTES >> 20} MiB: {rate:.0f} MB/s "
                  f"(runs {', '.join(f'{x[0]:.0f}' for x in fp)}); direct loopback TCP: "
                  f"{med(fd):.0f} MB/s ({rate / med(fd) * 100:.0f}%); target >= 500 MB/s; "
                  f"CPU per GB: gpupoold {med(x[1] for x in fp):.2f} s, "
                  f"the CLI {med(x[2] for x in fp):.2f} s")
        if "api" in parts:
            idle, busy, rate = api_under_sessions(NSESS)
            i50, i99 = med(x[0] for x in idle), med(x[1] for x in idle)
            b50, b99 = med(x[0] for x in busy), med(x[1] for x in busy)
            print(f"  GET a workload with {NSESS} sessions printing 10 KiB/s "
                  f"({rate / 1024:.0f} KiB/s read): p50 {b50:.2f} ms, p99 {b99:.2f} ms; idle: p50 {i50:.2f} ms, "
                  f"p99 {i99:.2f} ms ({b99 / i99:.2f}x at p99); target <= 2x")
        print(f"  load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        gpd.terminate()
        gpd.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
