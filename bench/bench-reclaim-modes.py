#!/usr/bin/env python3
"""bench/bench-reclaim-modes.py — the two-department story through a real
gpupoold, once per eviction mode, side by side in one run (figures, not a
timed test):

  Departments A and B each deserve 2 of the pool's 4 emulated GPUs. B's
  project runs 4 borrowers of one GPU each while A is idle; each never
  checkpoints (it counts its steps, one each 50 ms, into a file in its
  checkpoint directory, from 0 at every start, and ignores the checkpoint
  signal). Once each has counted past 100, A's owner submits 2 workloads of
  one GPU, which take back A's deserved GPUs.

For each mode (pause; checkpoint with a 30 s grace period; requeue) it
measures the owner's wait (from its submission until both its workloads
run, polled every 20 ms) and the steps the evicted borrowers lost (the count
each had reached when it was evicted, unless it went on from there once A's
workloads were deleted and it ran again). Each figure is the median of
GP_BENCH_RUNS runs (default 3), the modes interleaved run by run.

It starts its own gpupoold (BUILD/gpupoold, BUILD from GP_BUILD, default
build) on a temporary data directory, with the local executor on 4 emulated
GPUs of 1 GiB and the cgroup freezer (root; pause needs the freezer: without
it the pause run is evicted in checkpoint mode, which the output says). Every
workload it submitted is deleted, and its tasks gone, before it stops
gpupoold, also when it is interrupted (SIGINT, SIGTERM)."""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from benchpool import call, start_gpupoold

BUILD = os.environ.get("GP_BUILD", "build")
RUNS = int(os.environ.get("GP_BENCH_RUNS", "3"))
GRACE = "30s"
MODES = ("pause", "checkpoint", "requeue")
SERVER = TOKEN = None
DATA = None
SUBMITTED = []

COUNT_SH = """n=0
trap '' TERM
while :; do
    n=$((n + 1))
    echo $n >"$GPUPOOL_CHECKPOINT_DIR/count.tmp" && mv "$GPUPOOL_CHECKPOINT_DIR/count.tmp" "$GPUPOOL_CHECKPOINT_DIR/count"
    sleep 0.05
done
"""


def api(method, path, body=None):
    return call(SERVER, TOKEN, method, path, body)


def submit(project, name, cmd, **extra):
    body = {"project": project, "name": name, "gpu": 1, "command": cmd}
    body.update(extra)
    wid = api("POST", "/api/v1/workloads", body)["id"]
    SUBMITTED.append(wid)
    return wid


def state(wid):
    return api("GET", f"/api/v1/workloads/{wid}")["state"]


def wait_for(what, cond, limit=120, pause=0.05):
    end = time.time() + limit
    while time.time() < end:
        if cond():
            return
        time.sleep(pause)
    raise RuntimeError(f"timed out waiting for {what}")


def count(wid):
    try:
        with open(os.path.join(DATA, "checkpoints", str(wid), "count")) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def events(wid):
    return api("GET", f"/api/v1/workloads/{wid}/events")["events"]


def one_run(mode, script):
    """One story in mode: (owner's wait in s, steps lost, how the evicted
    were stopped, as their events say)."""
    bs = [submit("b1", f"{mode}-b{i}", ["sh", script], on_preempt=mode, grace=GRACE)
          for i in range(4)]
    wait_for("B's 4 borrowers to run", lambda: all(state(b) == "running" for b in bs))
    wait_for("B's borrowers to count", lambda: all(count(b) > 100 for b in bs))
    t0 = time.monotonic()
    owners = [submit("a1", f"{mode}-a{i}", ["sleep", "600"]) for i in range(2)]
    wait_for("A's workloads to run", lambda: all(state(a) == "running" for a in owners),
             limit=180, pause=0.02)
    wait = time.monotonic() - t0
    evicted = [b for b in bs if state(b) != "running"]
    reached = {b: count(b) for b in evicted}
    how = set()
    for b in evicted:
        kinds = [e["kind"] for e in events(b)]
        how.add("paused" if "paused" in kinds else
                "checkpoint signal" if "checkpoint-signal" in kinds else "stopped")
    for a in owners:
        api("DELETE", f"/api/v1/workloads/{a}")
    wait_for("B's borrowers to run again", lambda: all(state(b) == "running" for b in bs))
    # Each goes on from where it was, or starts again from 1.
    wait_for("the evicted to count again",
             lambda: all(count(b) != reached[b] for b in evicted), limit=60)
    lost = sum(reached[b] if count(b) < reached[b] else 0 for b in evicted)
    for b in bs:
        api("DELETE", f"/api/v1/workloads/{b}")
    wait_for("the run's workloads to end",
             lambda: all(state(w) == "deleted" for w in bs + owners), limit=60)
    return wait, lost, len(evicted), ", ".join(sorted(how))


def cleanup(gpd):
    """Deletes every workload this bench submitted and waits until none is
    left with a task, then stops gpupoold."""
    try:
        for w in SUBMITTED:
            try:
                if state(w) not in ("deleted", "succeeded", "failed", "suspended"):
                    api("DELETE", f"/api/v1/workloads/{w}")
            except Exception as e:  # keep deleting the others
                print(f"bench: workload {w} could not be deleted: {e}", file=sys.stderr)
        end = time.time() + 60
        while time.time() < end:
            if all(state(w) in ("deleted", "succeeded", "failed", "suspended") for w in SUBMITTED):
                break
            time.sleep(0.2)
        else:
            print("bench: some workloads did not end in 60 s", file=sys.stderr)
    except Exception as e:
        print(f"bench: cleanup: {e}", file=sys.stderr)
    gpd.terminate()
    gpd.wait()


def start_daemon(tmp):
    global DATA
    inv = os.path.join(tmp, "inventory.conf")
    with open(inv, "w") as f:
        f.write("node = local\ndomain = local\ngpu = T4 1G 4\n")
    p, server, token, DATA = start_gpupoold(BUILD, tmp, [
        "--period", "200ms", "--poll", "100ms", "--executor-config",
        f"state_dir={os.path.join(tmp, 'tasks')},inventory={inv}"])
    return p, server, token


def stop_on_signal(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main():
    global SERVER, TOKEN
    signal.signal(signal.SIGTERM, stop_on_signal)
    signal.signal(signal.SIGINT, stop_on_signal)  # also where a shell left it ignored
    tmp = tempfile.mkdtemp(prefix="bench-reclaim-modes.")
    os.chmod(tmp, 0o755)
    gpd, SERVER, TOKEN = start_daemon(tmp)
    try:
        env = dict(os.environ, GPUPOOL_SERVER=SERVER, GPUPOOL_TOKEN=TOKEN)
        for q in (["A"], ["a1", "--parent", "A"], ["B"], ["b1", "--parent", "B"]):
            subprocess.run([os.path.join(BUILD, "gpupool"), "queue", "create"] + q +
                           ["--deserved", "2"], env=env, check=True, stdout=subprocess.DEVNULL)
        script = os.path.join(tmp, "count.sh")
        with open(script, "w") as f:
            f.write(COUNT_SH)
        os.chmod(script, 0o755)
        can = api("GET", "/api/v1/nodes")["nodes"][0].get("can_pause")
        print(f"reclaim modes: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
              f"4 emulated GPUs, A and B deserving 2 each; B's 4 borrowers never checkpoint; "
              f"A's owner takes back 2; medians of {RUNS} runs; node can pause: {can}")
        res = {m: [] for m in MODES}
        for _ in range(RUNS):
            for m in MODES:
                res[m].append(one_run(m, script))
        print(f"  {'mode':<28} {'owner wait (s)':>14} {'runs':>22} {'steps lost':>10} "
              f"{'runs':>16}  evicted by")
        for m in MODES:
            r = res[m]
            label = m + (f" ({GRACE} grace)" if m == "checkpoint" else "")
            print(f"  {label:<28} {statistics.median(x[0] for x in r):>14.2f} "
                  f"{', '.join(f'{x[0]:.2f}' for x in r):>22} "
                  f"{statistics.median(x[1] for x in r):>10.0f} "
                  f"{', '.join(str(x[1]) for x in r):>16}  "
                  f"{'; '.join(sorted(set(x[3] for x in r)))} ({r[0][2]} evicted a run)")
        print(f"  a step is 50 ms of the borrower's loop; load average at the end "
              f"{os.getloadavg()[0]:.1f}")
    finally:
        cleanup(gpd)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as e:
        print(f"bench: interrupted ({e}); its workloads were deleted", file=sys.stderr)
        sys.exit(130)
