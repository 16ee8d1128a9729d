"""benchpool.py — a gpupoold of its own for a Python bench, and its API.

A bench starts the daemon from the build (BUILD) on a fresh data directory
under tmp, listening on a free loopback port, with the flags it adds, and
waits (at most a minute) for it to write its address; the daemon's output
goes to tmp/gpupoold.log, which an error names. call() makes one API call.
"""
import json
import os
import subprocess
import time
import urllib.request


def call(server, token, method, path, body=None):
    """The JSON answer of one API call (an HTTP error raises)."""
    req = urllib.request.Request(server + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read() or b"{}")


def start_gpupoold(build, tmp, flags):
    """Returns (process, server address, admin token, data directory)."""
    data = os.path.join(tmp, "data")
    argv = [os.path.join(build, "gpupoold"), "--data-dir", data, "--listen", "127.0.0.1:0"]
    argv += flags
    if os.geteuid() == 0:
        argv.append("--allow-root-workloads")
    log = open(os.path.join(tmp, "gpupoold.log"), "w")
    p = subprocess.Popen(argv, stdout=log, stderr=log)
    addr = os.path.join(data, "gpupoold.addr")
    end = time.time() + 60
    while not (os.path.exists(addr) and os.path.getsize(addr) > 0):
        if p.poll() is not None or time.time() > end:
            raise RuntimeError("gpupoold did not start; see " + log.name)
        time.sleep(0.05)
    with open(addr) as a, open(os.path.join(data, "admin.token")) as t:
        return p, a.read().strip(), t.read().strip(), data
