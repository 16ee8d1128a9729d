#!/usr/bin/env python3
# tests/slurm/sample-books.py STOP_FILE OUT_FILE TAG GRES: every second until
# STOP_FILE exists, compares per node the GPUs that gpupool says its running
# workloads hold (GET /api/v1/nodes and /api/v1/workloads?state=running)
# plus the GPUs that Slurm's running jobs of other users hold (squeue
# --json: jobs not named gp-TAG.) with the node's GRES. Writes one line per
# node over its GRES ("over n1 gpupool=3 others=2") and, at the end,
# "samples N".
import json
import os
import subprocess
import sys
import time
import urllib.request

stop, out, tag, gres = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
server, token = os.environ["GPUPOOL_SERVER"], os.environ["GPUPOOL_TOKEN"]


def api(path):
    req = urllib.request.Request(server + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def others():
    """GPUs per node of Slurm's running jobs that are not gpupool's."""
    js = json.loads(subprocess.run(["squeue", "--json", "--states=RUNNING"], check=True,
                                   capture_output=True, text=True).stdout)
    per = {}
    for j in js.get("jobs", []):
        if j.get("name", "").startswith("gp-" + tag + "."):
            continue
        nodes = j.get("job_resources", {}).get("allocated_nodes", [])
        for k, d in enumerate(j.get("gres_detail", [])):
            if k >= len(nodes) or not d.startswith("gpu:"):
                continue
            count = d.split("(")[0].split(":")[-1]
            per[nodes[k]["nodename"]] = per.get(nodes[k]["nodename"], 0) + int(count)
    return per


samples = 0
with open(out, "w") as f:
    while not os.path.exists(stop):
        try:
            other = others()
            running = {w["id"] for w in api("/api/v1/workloads?state=running&limit=1000")
                       ["workloads"]}
            for n in api("/api/v1/nodes")["nodes"]:
                mine = sum(1 for g in n["gpus"]
                           if any(s["workload"] in running for s in g["slices"]))
                if mine + other.get(n["name"], 0) > gres:
                    f.write(f"over {n['name']} gpupool={mine} others={other.get(n['name'], 0)}\n")
                    f.flush()
            samples += 1
        except Exception as e:  # a daemon restarting: the next second tells
            f.write(f"# {e}\n")
        time.sleep(1)
    f.write(f"samples {samples}\n")
