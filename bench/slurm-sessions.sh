#!/bin/sh
# bench/slurm-sessions.sh — sessions on the slurm executor, on a real Slurm
# cluster started on this host (tests/slurm/cluster.sh), each figure beside
# Slurm's own in the same run, on one interactive workload holding a whole
# GPU (a job of its own):
#   1. exec of `true` through gpupoold (WebSocket open to the exit status)
#      against bare `srun --jobid J --overlap true`;
#   2. attach (WebSocket open to READY, the recent output replayed);
#   3. keystroke echo (one byte typed, its echo read back through the
#      terminal) against one byte through a bare `srun --jobid J --overlap
#      --unbuffered cat`; median and p99 of each.
# Usage: bench/slurm-sessions.sh [BUILD_DIR]   (GP_BENCH_N: samples of 1 and 2,
# default 20; GP_BENCH_ECHO: keystrokes, default 300)
set -u
B=${1:-build}
GP=$B/gpupool
POOL_NAME=slurm-sessions . bench/slurm-pool.sh
$GP queue create S --deserved 8 >/dev/null && $GP queue create s1 --parent S --deserved 8 >/dev/null
N=${GP_BENCH_N:-20} ECHO=${GP_BENCH_ECHO:-300} python3 - <<'PY'
import json, os, subprocess, sys, time
sys.path.insert(0, "tests/daemon")
import taplib
from wsclient import WS

S, T = os.environ["GPUPOOL_SERVER"], os.environ["GPUPOOL_TOKEN"]
N, ECHO = int(os.environ["N"]), int(os.environ["ECHO"])


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, (len(xs) * p + 99) // 100 - 1))]


def line(name, xs, base=None, bname=""):
    s = f"{name:34s} median {pct(xs, 50):8.2f} ms  p99 {pct(xs, 99):8.2f} ms"
    if base:
        s += f"   | {bname}: median {pct(base, 50):8.2f} ms  p99 {pct(base, 99):8.2f} ms" \
             f"  (ratio {pct(xs, 50) / pct(base, 50):.2f})"
    print(s, flush=True)


code, j = taplib.api(S, "POST", "/api/v1/workloads", T, {
    "project": "s1", "command": ["/bin/sh"], "gpu": "1", "tty": True, "env": {"PS1": "$ "}})
wid = j["id"]
while taplib.api(S, "GET", f"/api/v1/workloads/{wid}", T)[1].get("state") != "running":
    time.sleep(0.1)
job = ""
while not job:
    out = subprocess.run(["squeue", "-h", "-o", "%i %j"], capture_output=True, text=True).stdout
    job = next((l.split()[0] for l in out.splitlines() if l.endswith(f".w{wid}.t0.a1")), "")
print(f"workload {wid}: Slurm job {job}, a whole GPU; {N} samples of exec and attach, "
      f"{ECHO} keystrokes", flush=True)

ex, bare = [], []
for _ in range(N):
    t0 = time.perf_counter()
    w = WS(S, f"/api/v1/workloads/{wid}/exec", T)
    w.hello(command=["true"])
    w.until(lambda t, p, o: t == "EXIT")
    ex.append((time.perf_counter() - t0) * 1000)
    w.close()
    t0 = time.perf_counter()
    subprocess.run(["srun", f"--jobid={job}", "--overlap", "--quiet", "true"], check=True)
    bare.append((time.perf_counter() - t0) * 1000)
line("exec true through gpupoold", ex, bare, "srun --overlap true")

att = []
for _ in range(N):
    t0 = time.perf_counter()
    w = WS(S, f"/api/v1/workloads/{wid}/attach", T)
    w.hello(rows=24, cols=80)
    w.until(lambda t, p, o: t == "READY")
    att.append((time.perf_counter() - t0) * 1000)
    w.close()
line("attach (to READY)", att)

w = WS(S, f"/api/v1/workloads/{wid}/attach", T)
w.hello(rows=24, cols=80)
w.until(lambda t, p, o: t == "READY")
w.send("STDIN", "stty -icanon\n")
w.until(lambda t, p, o: o.rstrip().endswith(b"$"))
echo = []
for i in range(ECHO):
    if i % 50 == 49:
        w.send("STDIN", "\x15")  # Ctrl-U: the line starts again
        w.until(lambda t, p, o: True)
    t0 = time.perf_counter()
    w.send("STDIN", "x")
    w.until(lambda t, p, o: b"x" in o)
    echo.append((time.perf_counter() - t0) * 1000)
w.close()
p = subprocess.Popen(["srun", f"--jobid={job}", "--overlap", "--quiet", "--unbuffered", "cat"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
p.stdin.write(b"w")
p.stdout.read(1)
base = []
for _ in range(ECHO):
    t0 = time.perf_counter()
    p.stdin.write(b"x")
    p.stdout.read(1)
    base.append((time.perf_counter() - t0) * 1000)
p.stdin.close()
p.wait()
line("keystroke echo through gpupoold", echo, base, "srun --overlap cat")
taplib.api(S, "DELETE", f"/api/v1/workloads/{wid}", T)
PY
