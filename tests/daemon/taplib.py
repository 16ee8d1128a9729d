"""tests/daemon/taplib.py — what the Python session tests share: TAP lines
(ok, done), a JSON call to gpupoold's API that returns the status and the
decoded body, errors included, a process's resident memory, a free port on loopback (bench-sessions.py),
and a server started in a task that picks its own port (serve). A script run
after another in one TAP stream numbers on from GP_TAP_FIRST, names its
cases with GP_TAP_PREFIX, and leaves the plan to the last one when
GP_TAP_NOPLAN is set."""
import json
import os
import re
import socket
import sys
import time
import urllib.error
import urllib.request

_n = int(os.environ.get("GP_TAP_FIRST", "1")) - 1
_failed = 0
_prefix = os.environ.get("GP_TAP_PREFIX", "")


def ok(cond, name, detail=""):
    """Prints one TAP line; on failure, the last lines of detail."""
    global _n, _failed
    _n += 1
    if not cond:
        _failed += 1
        print(f"not ok {_n} - {_prefix}{name}")
        for line in str(detail).splitlines()[-15:]:
            print(f"#   {line}")
    else:
        print(f"ok {_n} - {_prefix}{name}")
    sys.stdout.flush()


def free_port():
    """A port free on loopback now (tasks share the host's network): bound
    to 0 and read back."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve(type_line, until, script, name):
    """Starts a Python server in the task's background from its terminal:
    script (two parts, the second after a newline) binds s to port 0 on
    loopback and prints NAME=PORT once it listens; the port it got.
    type_line(text) types a line into the task's shell; until(pattern)
    waits for the compiled bytes pattern on the terminal and returns the
    output up to it. Tasks share the host's network: a port picked here as
    free and bound in the task later could be taken in between (on the
    Slurm executor the 64 held forwards of sessions.py alone keep some 200
    srun listeners in the ephemeral range), and a forward then reached
    another program's listener, which reset the upload."""
    type_line("python3 -c '%s;print(\"%s=%%d\" %% s.getsockname()[1],flush=True)\n%s' "
              "2>/dev/null &" % (script[0], name, script[1]))
    pat = re.compile(name.encode() + rb"=(\d+)\r?\n")
    return int(pat.search(until(pat)).group(1))


def rss_kib(pid):
    """The resident memory of process pid (gpupoold), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def done():
    """Prints the plan and exits: 1 if any case failed."""
    if not os.environ.get("GP_TAP_NOPLAN"):
        print(f"1..{_n}")
    sys.exit(1 if _failed else 0)


def api(server, method, path, token, body=None, timeout=30):
    """(status, JSON body) of one call; an HTTP error's status and body too."""
    req = urllib.request.Request(server + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def interactive(server, token, command, n, limit=120):
    """Submits n interactive tasks running command in project proj and waits
    until they run (limit seconds at most): their ids, and whether all run
    (then their states, for the case's detail)."""
    wids = [api(server, "POST", "/api/v1/workloads", token,
                {"project": "proj", "tty": True, "command": command})[1].get("id")
            for _ in range(n)]
    end = time.time() + limit
    states = None
    while time.time() < end and states != ["running"] * n:
        states = [api(server, "GET", f"/api/v1/workloads/{w}", token)[1].get("state")
                  for w in wids]
        time.sleep(0.1)
    return wids, states == ["running"] * n, states
