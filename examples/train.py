#!/usr/bin/env python3
"""A small training loop that keeps gpupool's workload contract.

It needs nothing but Python's standard library, so it runs anywhere,
emulated GPUs included; the "model" is a single number fitted by gradient
descent, which stands in for the state a real framework would save.

What it shows (docs/workload-contract.md):
- it resumes from the newest checkpoint in GPUPOOL_CHECKPOINT_DIR;
- it saves checkpoints atomically (write a temporary file, then rename);
- on the checkpoint signal (GPUPOOL_CHECKPOINT_SIGNAL, default TERM) it
  finishes the current step, saves, and exits;
- a start that finds training already complete exits 0 at once.

    python3 examples/train.py --steps 1000 [--every 50] [--step-seconds 0.05]
"""
import argparse
import json
import os
import signal
import sys
import time

stop_requested = False


def on_checkpoint_signal(signum, frame):
    # Only note the request: the loop saves at the end of the current step,
    # so a checkpoint never captures a half-applied update.
    global stop_requested
    stop_requested = True


def checkpoint_path():
    directory = os.environ.get("GPUPOOL_CHECKPOINT_DIR", "./checkpoints")
    os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, "state.json")


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"step": 0, "weight": 0.0, "done": False}


def save(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)  # atomic: readers see the old or the new file


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--every", type=int, default=50, help="checkpoint every N steps")
    parser.add_argument("--step-seconds", type=float, default=0.05)
    args = parser.parse_args()

    name = os.environ.get("GPUPOOL_CHECKPOINT_SIGNAL", "TERM")
    signal.signal(getattr(signal, "SIG" + name), on_checkpoint_signal)

    path = checkpoint_path()
    state = load(path)
    attempt = os.environ.get("GPUPOOL_ATTEMPT", "1")
    if state["done"]:
        print(f"attempt {attempt}: training already complete", flush=True)
        return 0
    print(f"attempt {attempt}: resuming at step {state['step']} "
          f"on GPUs {os.environ.get('CUDA_VISIBLE_DEVICES', '(none)')}", flush=True)

    target = 3.0  # the "data": fit weight to 3
    while state["step"] < args.steps:
        grad = 2 * (state["weight"] - target)
        state["weight"] -= 0.01 * grad
        state["step"] += 1
        time.sleep(args.step_seconds)
        if stop_requested:
            save(path, state)
            print(f"checkpoint signal: saved step {state['step']}, exiting", flush=True)
            return 0
        if state["step"] % args.every == 0:
            save(path, state)
            print(f"step {state['step']}: weight {state['weight']:.4f}", flush=True)

    state["done"] = True
    save(path, state)
    print(f"done after {state['step']} steps: weight {state['weight']:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
