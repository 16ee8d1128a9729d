#!/usr/bin/env python3
"""tests/slurm/sessions-slurm.py — the Slurm-only cases of test-sessions.sh,
printed as TAP (numbered on from GP_TAP_FIRST): a whole-GPU job's session is
a step of that job in Slurm's books; exec sees the job's environment (what
Slurm set for it and the workload's own variables); a session past its
project's maximum length is told on its terminal, suspended through the
checkpoint contract, and resumed by its owner; a session whose GPUs stay
idle past its project's idle GPU timeout is suspended and resumed, on a
whole GPU (a job of its own, whose record its user writes) and on a
fraction (a step of its holder, through the descriptor its root script
opened): gpupool-slurm-session samples the job's GPUs with the fake NVML of
the tests, whose busy figure the test sets in the fake.env file beside it
(GP_FAKE_ENV); batch workloads' GPUs are sampled too, by a sampler beside
the command that the command cannot write through and that ends with the
job. Waits on conditions, never on fixed sleeps."""
import json
import os
import re
import subprocess
import struct
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
import taplib  # noqa: E402
from taplib import ok  # noqa: E402
from wsclient import WS  # noqa: E402

SERVER = os.environ["GPUPOOL_SERVER"]
TA, ADMIN, TAG = os.environ["GP_TOKEN_A"], os.environ["GP_ADMIN"], os.environ["SX_TAG"]


def api(method, path, token, body=None):
    return taplib.api(SERVER, method, path, token, body)


def wait_for(pred, limit=60):
    end = time.time() + limit
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    return pred()


def state(wid):
    return api("GET", f"/api/v1/workloads/{wid}", TA)[1].get("state")


def job_of(wid, attempt=1):
    """The Slurm job id of the workload's task 0, attempt 1, or ''."""
    out = subprocess.run(["squeue", "-h", "-o", "%i %j"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        i, _, name = line.partition(" ")
        if name == f"gp-{TAG}.w{wid}.t0.a{attempt}":
            return i
    return ""


def steps_of(job):
    out = subprocess.run(["squeue", "-h", "-s", "-j", job, "-o", "%i %j"], capture_output=True,
                         text=True).stdout
    return out


def exec_out(wid, command):
    ex = WS(SERVER, f"/api/v1/workloads/{wid}/exec", TA)
    ex.hello(command=command)
    t, p, out = ex.until(lambda t, p, o: t in ("EXIT", "ERROR"))
    ex.close()
    return t, p, out


body = {"project": "proj", "command": ["/bin/bash", "--norc", "-i"], "gpu": "1", "tty": True,
        "env": {"PS1": "gp$ ", "GP_MINE": "mine-42"}}
code, j = api("POST", "/api/v1/workloads", TA, body)
wid = j.get("id")
ok(code == 201 and wait_for(lambda: state(wid) == "running"), "a whole-GPU session runs", j)
job = wait_for(lambda: job_of(wid))
ws = WS(SERVER, f"/api/v1/workloads/{wid}/attach", TA)
ws.hello(rows=30, cols=100)
t, p, out = ws.until(lambda t, p, o: t == "READY")
ok(t == "READY", "attached to it")
steps = wait_for(lambda: "gp-session" in steps_of(job) and steps_of(job), limit=30)
ok(steps and any(l.startswith(job + ".") and l.endswith(" gp-session") for l in steps.splitlines()),
   f"the attached session is a step of the workload's own job {job}", steps)

t, p, out = exec_out(wid, ["sh", "-c", 'echo "job=$SLURM_JOB_ID mine=$GP_MINE '
                                       'wl=$GPUPOOL_WORKLOAD_ID gpus=$CUDA_VISIBLE_DEVICES"'])
text = out.decode(errors="replace")
ok(t == "EXIT" and f"job={job} " in text and "mine=mine-42 " in text and f"wl={wid} " in text
   and "gpus=" in text and not text.strip().endswith("gpus="),
   "exec sees the job's environment: Slurm's job id and GPUs, the workload's variables", text)

# The maximum session length: the terminal is told, the workload suspended
# (the checkpoint contract: its command restarts), then resumed.
ws.send("STDIN", "echo before-$((4*4))\n")
ws.until(lambda t, p, o: b"before-16" in o)
code, j = api("PATCH", "/api/v1/queues/proj", ADMIN, {"max_session_length": "10s"})
ok(code == 200, "the project's maximum session length set to 10 s", j)
try:
    t, p, out = ws.until(lambda t, p, o: b"is being suspended" in o, limit=1 << 22)
    told = b"is being suspended" in out
except (RuntimeError, EOFError, OSError) as e:
    told, out = False, repr(e).encode()
ok(told, "the attached terminal is told why it stops", out[-400:])
ok(wait_for(lambda: state(wid) == "suspended", limit=90) == True,
   "the workload is suspended", state(wid))
_, ev = api("GET", f"/api/v1/workloads/{wid}/events", TA)
ok("session" in json.dumps(ev) or "length" in json.dumps(ev), "an event says why", ev)
ok(wait_for(lambda: not job_of(wid), limit=60) == True, "its job has ended in Slurm")
code, j = api("PATCH", "/api/v1/queues/proj", ADMIN, {"max_session_length": "none"})
code, j = api("POST", f"/api/v1/workloads/{wid}/resume", TA)
ok(code in (200, 202) and wait_for(lambda: state(wid) == "running", limit=90) == True,
   "its owner resumes it: running again", (code, j, state(wid)))
ws = WS(SERVER, f"/api/v1/workloads/{wid}/attach", TA)
ws.hello(rows=30, cols=100)
ws.until(lambda t, p, o: t == "READY")
ws.send("STDIN", "echo again-$((5*5))\n")
t, p, out = ws.until(lambda t, p, o: b"again-25" in o)
ok(b"again-25" in out, "attach after the resume reaches the restarted shell")
ws.send("STDIN", "exit 0\n")
t, p, out = ws.until(lambda t, p, o: t == "EXIT", limit=1 << 24)
ok(struct.unpack(">ii", p)[0] == 0, "it ends with its exit status", p)

# Idle GPUs handed back on Slurm.
FAKE_ENV = os.environ["GP_FAKE_ENV"]


def set_busy(percent):
    with open(FAKE_ENV + ".tmp", "w") as f:
        f.write(f"GPUPOOL_FAKE_GPUS=8\nGPUPOOL_FAKE_BUSY={percent}\n")
    os.chmod(FAKE_ENV + ".tmp", 0o644)
    os.replace(FAKE_ENV + ".tmp", FAKE_ENV)


def busy_on(wid):
    """The busy ratios /metrics reports for the GPUs of wid's node."""
    m = re.search(r'"node": ?"([^"]+)"', json.dumps(api("GET", f"/api/v1/workloads/{wid}", TA)[1]))
    req = urllib.request.Request(SERVER + "/metrics",
                                 headers={"Authorization": f"Bearer {ADMIN}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
    return [line.rsplit(" ", 1)[1] for line in text.splitlines()
            if m and line.startswith("gpupool_gpu_busy_ratio{") and f'node="{m[1]}"' in line]


def sampled_pair(what, extra):
    """Runs a workload (what, body fields extra) on 1 and on 0.5 GPU with the
    fake NVML 40% busy, until each one's busy figure reaches /metrics; their
    ids."""
    set_busy(40)
    ids = []
    for gpu in ("1", "0.5"):
        code, j = api("POST", "/api/v1/workloads", TA, dict(extra, project="proj", gpu=gpu))
        ids.append(j.get("id"))
        ok(code == 201 and wait_for(lambda: state(ids[-1]) == "running", limit=90) == True,
           f"a {what} on {gpu} GPU runs", (code, j))
    for wid, gpu in zip(ids, ("1", "0.5")):
        ok(wait_for(lambda: "0.4" in busy_on(wid), limit=60),
           f"its job's GPU use reaches gpupoold ({what}, {gpu} GPU): busy 0.4 in /metrics",
           busy_on(wid))
    return ids


ids = sampled_pair("session", {"command": ["/bin/sh", "-i"], "tty": True})
code, j = api("PATCH", "/api/v1/queues/proj", ADMIN, {"idle_gpu_timeout": "10s"})
ok(code == 200, "the project's idle GPU timeout set to 10 s", j)
set_busy(0)
for wid, gpu in zip(ids, ("1", "0.5")):
    ok(wait_for(lambda: state(wid) == "suspended", limit=120) == True,
       f"idle for 10 s, the session on {gpu} GPU is suspended", state(wid))
    _, ev = api("GET", f"/api/v1/workloads/{wid}/events", TA)
    ok("idle" in json.dumps(ev), "an event says it was idle", ev)
code, j = api("PATCH", "/api/v1/queues/proj", ADMIN, {"idle_gpu_timeout": "none"})
for wid, gpu in zip(ids, ("1", "0.5")):
    code, j = api("POST", f"/api/v1/workloads/{wid}/resume", TA)
    ok(code in (200, 202) and wait_for(lambda: state(wid) == "running", limit=90) == True,
       f"its owner resumes the session on {gpu} GPU: running again", (code, j, state(wid)))
    api("DELETE", f"/api/v1/workloads/{wid}", TA)

# A batch task's GPU use is sampled too (usage's "used"; before, it was
# unknown for every batch job on Slurm), by a sampler its job script starts
# beside the command, which does not get the record's descriptor and ends
# with its own status; the sampler ends with the job.


def log_of(wid):
    req = urllib.request.Request(SERVER + f"/api/v1/workloads/{wid}/logs",
                                 headers={"Authorization": f"Bearer {TA}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read().decode(errors="replace")
    except urllib.error.HTTPError:
        return ""


def samplers():
    return subprocess.run(["pgrep", "-f", "gpupool-slurm-session sample "], capture_output=True,
                          text=True).stdout.split()


ids = sampled_pair("batch workload", {"command": [
    "/bin/sh", "-c", "[ -e /proc/$$/fd/8 ] && echo fd8-open || echo fd8-closed; exec sleep 600"]})
for wid, gpu in zip(ids, ("1", "0.5")):
    ok(wait_for(lambda: "fd8-" in log_of(wid)) and "fd8-closed" in log_of(wid),
       f"the batch command ({gpu} GPU) does not get the record's descriptor", log_of(wid)[-300:])
for wid in ids:
    api("DELETE", f"/api/v1/workloads/{wid}", TA)
code, j = api("POST", "/api/v1/workloads", TA,
              {"project": "proj", "gpu": "1", "command": ["/bin/sh", "-c", "sleep 6; exit 3"]})
wid = j.get("id")
ok(code == 201 and wait_for(lambda: state(wid) == "failed", limit=120) == True,
   "a sampled batch command's own status is its workload's: exit 3, failed", state(wid))
ok(wait_for(lambda: not samplers(), limit=60) == True,
   "no sampler outlives its job (ended or cancelled)", samplers())
taplib.done()
