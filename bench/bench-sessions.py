#!/usr/bin/env python3
"""bench/bench-sessions.py — sessions on a real gpupoold on loopback (the
issue's numbers, measured in one run; not a timed test):

  - start: submit an interactive shell and attach until its prompt shows
    (gpupool run -it's path: submit, wait running, WebSocket, READY, prompt);
  - echo: one keystroke typed into a shell (cat, which echoes it back) and
    its echo read, through gpupoold: p50 / p99 of round trips;
  - forward: bytes through `gpupool port-forward` to a sink in the task
    (MB/s; a plain socket here is the source), and from a source in the task;
  - api: GET /api/v1/workloads/{id} p99 while N sessions each print
    about 10 KiB/s, against the same with no session.

Usage: [GP=build/gpupool] bench-sessions.py SERVER TOKEN PROJECT [SESSIONS] (the server's
--max-user-sessions must allow SESSIONS + a few). Medians of RUNS runs."""
import json
import os
import re
import socket
import statistics
import subprocess
import struct
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "daemon"))
from wsclient import WS  # noqa: E402

SERVER, TOKEN, PROJECT = sys.argv[1], sys.argv[2], sys.argv[3]
GP = os.environ.get("GP", "build/gpupool")
NSESS = int(sys.argv[4]) if len(sys.argv) > 4 else 200
RUNS = int(os.environ.get("GP_BENCH_RUNS", "5"))


def api(method, path, body=None):
    req = urllib.request.Request(SERVER + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read() or b"{}")


def submit(cmd, env=None):
    body = {"project": PROJECT, "command": cmd, "tty": True, "cpu": "0.01"}
    if env:
        body["env"] = env
    return api("POST", "/api/v1/workloads", body)["id"]


def wait_running(wid):
    while True:
        st = api("GET", f"/api/v1/workloads/{wid}")["state"]
        if st == "running":
            return
        if st in ("failed", "succeeded", "deleted"):
            raise RuntimeError(f"workload {wid} {st}")
        time.sleep(0.005)


def attach(wid):
    ws = WS(SERVER, f"/api/v1/workloads/{wid}/attach", TOKEN)
    ws.hello(rows=24, cols=80)
    ws.until(lambda t, p, o: t == "READY")
    return ws


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def bench_start():
    t0 = time.perf_counter()
    wid = submit(["/bin/sh", "-i"], env={"PS1": "gp$ "})
    wait_running(wid)
    ws = attach(wid)
    ws.until(lambda t, p, o: o.rstrip().endswith(b"$"))
    dt = time.perf_counter() - t0
    ws.close()
    api("DELETE", f"/api/v1/workloads/{wid}")
    return dt


def bench_echo(n=2000):
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
    ws.close()
    api("DELETE", f"/api/v1/workloads/{wid}")
    return pct(rtts, 0.5) * 1000, pct(rtts, 0.99) * 1000


def bench_forward(total=1 << 30):
    """Through `gpupool port-forward` (the C client): a plain socket here
    sends total bytes to a sink in the task, which answers their count."""
    port = 21000 + os.getpid() % 20000
    wid = submit(["python3", "-c",
                  "import socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,"
                  "socket.SO_REUSEADDR,1);s.bind(('127.0.0.1',%d));s.listen(8)\n"
                  "while True:\n c,_=s.accept()\n n=0\n while True:\n  d=c.recv(1<<20)\n"
                  "  if not d: break\n  n+=len(d)\n c.sendall(str(n).encode());c.close()" % port])
    wait_running(wid)
    env = dict(os.environ, GPUPOOL_SERVER=SERVER, GPUPOOL_TOKEN=TOKEN)
    pf = subprocess.Popen([GP, "port-forward", str(wid), f"0:{port}"], stdout=subprocess.PIPE,
                          env=env, text=True)
    local = int(re.search(r"127\.0\.0\.1:(\d+)", pf.stdout.readline()).group(1))
    chunk = b"x" * (1 << 20)
    while True:
        c = socket.create_connection(("127.0.0.1", local))
        t0 = time.perf_counter()
        try:
            c.sendall(chunk)
            break
        except OSError:
            c.close()
            time.sleep(0.05)  # the sink was not listening yet
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
    pf.terminate()
    pf.wait()
    api("DELETE", f"/api/v1/workloads/{wid}")
    if int(got or 0) != sent:
        raise RuntimeError(f"the sink counted {got!r} of {sent}")
    return sent / dt / 1e6


def bench_forward_down(total=1 << 30):
    """The other way: a source in the task sends total bytes, read here
    through `gpupool port-forward` (answers over 64 KiB once came back empty:
    gpupoold sent messages longer than a client takes)."""
    port = 41000 + os.getpid() % 20000
    wid = submit(["python3", "-c",
                  "import socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,"
                  "socket.SO_REUSEADDR,1);s.bind(('127.0.0.1',%d));s.listen(8)\n"
                  "b=b'x'*(1<<20)\n"
                  "while True:\n c,_=s.accept()\n for i in range(%d): c.sendall(b)\n c.close()"
                  % (port, total >> 20)])
    wait_running(wid)
    env = dict(os.environ, GPUPOOL_SERVER=SERVER, GPUPOOL_TOKEN=TOKEN)
    pf = subprocess.Popen([GP, "port-forward", str(wid), f"0:{port}"], stdout=subprocess.PIPE,
                          env=env, text=True)
    local = int(re.search(r"127\.0\.0\.1:(\d+)", pf.stdout.readline()).group(1))
    got = 0
    while got == 0:
        c = socket.create_connection(("127.0.0.1", local))
        t0 = time.perf_counter()
        while True:
            d = c.recv(1 << 20)
            if not d:
                break
            got += len(d)
        c.close()
        if got == 0:
            time.sleep(0.05)  # the source was not listening yet
    dt = time.perf_counter() - t0
    pf.terminate()
    pf.wait()
    api("DELETE", f"/api/v1/workloads/{wid}")
    if got != total:
        raise RuntimeError(f"read {got} of {total} bytes")
    return got / dt / 1e6


def api_p99(wid, n=300):
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        api("GET", f"/api/v1/workloads/{wid}")
        lat.append(time.perf_counter() - t0)
    return pct(lat, 0.99) * 1000


def bench_api(nsess):
    printers = []
    probe = submit(["sleep", "3600"])
    wait_running(probe)
    idle = api_p99(probe)
    # N sessions each printing 10 KiB a second, read by N clients.
    wids = [submit(["sh", "-c", "while :; do head -c 10240 /dev/zero | tr '\\0' x; echo; "
                    "sleep 1; done"]) for _ in range(nsess)]
    for w in wids:
        wait_running(w)
    stop = threading.Event()

    def reader(w):
        ws = attach(w)
        ws.sock.settimeout(5)
        while not stop.is_set():
            try:
                ws.recv()
            except Exception:
                break
        ws.sock.close()

    threads = [threading.Thread(target=reader, args=(w,), daemon=True) for w in wids]
    for t in threads:
        t.start()
    time.sleep(3)
    busy = api_p99(probe)
    stop.set()
    for w in wids + [probe]:
        api("DELETE", f"/api/v1/workloads/{w}")
    return idle, busy


starts = [bench_start() for _ in range(RUNS)]
print(f"run -it to a prompt: median {statistics.median(starts) * 1000:.0f} ms "
      f"(runs: {', '.join(f'{s * 1000:.0f}' for s in starts)}) target <= 1000 ms")
echo = [bench_echo() for _ in range(RUNS)]
print(f"keystroke echo: p50 median {statistics.median(e[0] for e in echo):.2f} ms, "
      f"p99 median {statistics.median(e[1] for e in echo):.2f} ms target p99 <= 5 ms")
fw = [bench_forward() for _ in range(RUNS)]
print(f"port-forward: median {statistics.median(fw):.0f} MB/s "
      f"(runs: {', '.join(f'{x:.0f}' for x in fw)}) target >= 500 MB/s")
fd = [bench_forward_down() for _ in range(RUNS)]
print(f"port-forward, task to client: median {statistics.median(fd):.0f} MB/s "
      f"(runs: {', '.join(f'{x:.0f}' for x in fd)}) target >= 500 MB/s")
idle, busy = bench_api(NSESS)
print(f"API p99 idle {idle:.2f} ms, with {NSESS} sessions printing 10 KiB/s {busy:.2f} ms "
      f"({busy / idle:.2f}x) target <= 2x")
