#!/usr/bin/env python3
"""tests/daemon/sessions_many.py — the cases of test-sessions-many.sh, printed
as TAP: N sessions open at once through one gpupoold (spread over W
interactive workloads: each workload's terminal attached once, the rest exec
sessions in the same tasks), each typing a command and reading its own answer
(no other session's answer in its output), then all detached; twice, the
second round opening as many again under a per-user cap of exactly N (so the
first round's sessions must all have been given back). Meanwhile a reader
asks the API for the workload list and must be answered throughout, and the
daemon's resident memory stays bounded and does not grow from one round to
the next. Waits on conditions (READY, an answer, a state), never on fixed
sleeps; the limits are generous for a loaded 2-core machine."""
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import taplib  # noqa: E402
from taplib import ok  # noqa: E402
from wsclient import WS  # noqa: E402

SERVER, TOKEN = os.environ["GPUPOOL_SERVER"], os.environ["GPUPOOL_TOKEN"]
PID = int(os.environ["GP_DAEMON_PID"])
NSESS = int(os.environ.get("GP_SESSIONS", "200"))
NWL = int(os.environ.get("GP_WORKLOADS", "20"))
LIMIT = 120  # seconds for any one phase


def api(method, path, body=None, timeout=60):
    return taplib.api(SERVER, method, path, TOKEN, body, timeout)


# ---- W interactive shells ----
wids = []
for i in range(NWL):
    code, j = api("POST", "/api/v1/workloads",
                  {"project": "proj", "command": ["/bin/sh", "-i"], "tty": True,
                   "env": {"PS1": "gp$ "}})
    wids.append(j.get("id"))
ok(all(wids), f"{NWL} interactive workloads submitted", wids)
end = time.time() + LIMIT
states = {}
while time.time() < end:
    code, j = api("GET", "/api/v1/workloads?project=proj&limit=1000")
    states = {w["id"]: w["state"] for w in j.get("workloads", j.get("items", []))}
    if all(states.get(w) == "running" for w in wids):
        break
    time.sleep(0.2)
ok(all(states.get(w) == "running" for w in wids), f"all {NWL} run", states)

# ---- A reader of the API, throughout ----
api_lat = []
api_err = []
api_stop = threading.Event()


def prober():
    while not api_stop.is_set():
        t0 = time.perf_counter()
        try:
            code, _ = api("GET", "/api/v1/workloads?limit=1000", timeout=30)
            if code != 200:
                api_err.append(code)
        except Exception as ex:  # noqa: BLE001 (any failure is counted)
            api_err.append(repr(ex))
        api_lat.append(time.perf_counter() - t0)
        time.sleep(0.05)


threading.Thread(target=prober, daemon=True).start()


class Round:
    def __init__(self, tag):
        self.tag = tag
        self.opened = threading.Barrier(NSESS + 1, timeout=LIMIT)
        self.typed = threading.Barrier(NSESS + 1, timeout=LIMIT)
        self.answered = threading.Barrier(NSESS + 1, timeout=LIMIT)
        self.out = [b""] * NSESS
        self.err = [None] * NSESS

    def one(self, i):
        wid = wids[i % NWL]
        ws = None
        try:
            # The first NWL sessions attach to the workloads' terminals, the
            # others exec a shell in the same tasks. A cap still held by the
            # previous round's closing sessions is waited out.
            end = time.time() + LIMIT
            while True:
                route = "attach" if i < NWL else "exec"
                ws = WS(SERVER, f"/api/v1/workloads/{wid}/{route}", TOKEN, timeout=LIMIT)
                if ws.status == 101 or time.time() > end or b"max-user-sessions" not in ws.body:
                    break
                ws.sock.close()
                time.sleep(0.1)
            if ws.status != 101:
                raise RuntimeError(f"{route}: HTTP {ws.status} {ws.body!r}")
            if i < NWL:
                ws.hello(rows=24, cols=80)
            else:
                ws.hello(command=["/bin/sh"])
            ws.until(lambda t, p, o: t == "READY")
        except Exception as ex:  # noqa: BLE001 (reported below)
            self.err[i] = f"open: {ex!r}"
        self.opened.wait()
        self.typed.wait()
        try:
            if self.err[i] is None:
                # The answer (tok-I-<7I>) is not in what is typed, which a
                # terminal echoes back.
                want = f"tok-{self.tag}{i}-{i * 7}".encode()
                ws.send("STDIN", f"echo tok-{self.tag}{i}-$(({i}*7))\n")
                self.out[i] = ws.until(lambda t, p, o: want in o)[2]
        except Exception as ex:  # noqa: BLE001
            self.err[i] = f"answer: {ex!r}"
        self.answered.wait()
        if ws is not None:
            ws.close()

    def run(self):
        threads = [threading.Thread(target=self.one, args=(i,), daemon=True)
                   for i in range(NSESS)]
        t0 = time.time()
        for t in threads:
            t.start()
        self.opened.wait()
        self.open_s = time.time() - t0
        self.rss_open = taplib.rss_kib(PID)
        self.typed.wait()
        self.answered.wait()
        self.rss_answered = taplib.rss_kib(PID)
        for t in threads:
            t.join(LIMIT)
        self.total_s = time.time() - t0


rss0 = taplib.rss_kib(PID)
rounds = []
for tag in ("a", "b"):
    r = Round(tag)
    r.run()
    rounds.append(r)
    errs = [f"{i}: {e}" for i, e in enumerate(r.err) if e]
    ok(not errs, f"round {tag}: {NSESS} sessions open at once over {NWL} workloads "
       f"({r.open_s:.1f} s), each typed a command and read its answer "
       f"({r.total_s:.1f} s in all)", "\n".join(errs[:10]))
    cross = []
    for i, o in enumerate(r.out):
        for m in re.findall(rb"tok-[ab](\d+)-", o):
            if int(m) != i:
                cross.append(f"session {i} read session {int(m)}'s answer")
    ok(not cross, f"round {tag}: no session read another's answer", "\n".join(cross[:10]))

api_stop.set()
rss_end = taplib.rss_kib(PID)
print(f"# daemon RSS: {rss0} KiB before; round a {rounds[0].rss_open} open, "
      f"{rounds[0].rss_answered} answered; round b {rounds[1].rss_open} open, "
      f"{rounds[1].rss_answered} answered; {rss_end} KiB after")
peak = max(max(r.rss_open, r.rss_answered) for r in rounds)
# A sanitizer's allocator keeps what is freed in quarantine (up to 256 MiB
# under AddressSanitizer) and has memory of its own: its RSS says nothing of
# the daemon's bounds, which the plain build checks (and LeakSanitizer checks
# for leaks at the daemon's exit).
SANITIZED = os.environ.get("GP_SANITIZED") == "1"
skip = " # SKIP a sanitizer's allocator" if SANITIZED else ""
ok(SANITIZED or peak - rss0 < 128 * 1024, f"the daemon's memory stays bounded with {NSESS} sessions "
   f"(+{(peak - rss0) // 1024} MiB at most){skip}", (rss0, peak))
ok(SANITIZED or rounds[1].rss_answered - rounds[0].rss_answered < 16 * 1024,
   f"and does not grow from one round of {NSESS} sessions to the next "
   f"({rounds[0].rss_answered} -> {rounds[1].rss_answered} KiB){skip}")
lat = sorted(api_lat)
p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else -1
print(f"# API during the rounds: {len(lat)} answers, median {lat[len(lat) // 2] * 1000:.1f} ms, "
      f"p99 {p99 * 1000:.1f} ms, max {lat[-1] * 1000:.1f} ms" if lat else "# no API answers")
ok(len(lat) >= 10 and not api_err and lat[-1] < 30,
   f"the API answered throughout ({len(lat)} answers, none failed, the slowest "
   f"{lat[-1] if lat else 0:.2f} s)", api_err[:5])
code, j = api("GET", "/api/v1/workloads?project=proj&state=running&limit=1000")
running = len(j.get("workloads", j.get("items", [])))
ok(running == NWL, f"all {NWL} workloads still run after every session detached", j)
for w in wids:
    api("DELETE", f"/api/v1/workloads/{w}")
taplib.done()
