"""torch_checks.py — GPU tier: PyTorch inside a slice (run by tests/gpu/run.sh).

    python3 torch_checks.py oom ALLOC_CONF   cap hit as torch.OutOfMemoryError, slice in mem_get_info
    python3 torch_checks.py graph            CUDA graph capture and replay under the cap
    python3 torch_checks.py hog SECONDS      fill the slice, stay at the cap (one of two slices)
    python3 torch_checks.py steady SECONDS   keep computing next to a full neighbour
    python3 torch_checks.py train STEPS      print the mean ms per training step

The cap comes from GPUPOOL_MEMORY_LIMIT (bytes or K/M/G suffix) in the
environment; each mode prints "ok ..." lines and exits non-zero on failure.
"""
import os
import sys
import time

if len(sys.argv) > 2 and sys.argv[1] == "oom" and sys.argv[2]:
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = sys.argv[2]

import torch  # noqa: E402  (the allocator setting must precede the import)


def cap_bytes():
    text = os.environ["GPUPOOL_MEMORY_LIMIT"]
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(text[:-1]) * mult[text[-1]] if text[-1] in mult else int(text)


def fail(msg):
    print("not ok -", msg)
    sys.exit(1)


def oom(conf):
    cap = cap_bytes()
    free, total = torch.cuda.mem_get_info()
    if total != cap or free > cap:
        fail(f"mem_get_info {free}/{total}, cap {cap}")
    print(f"ok - mem_get_info reports the slice ({conf or 'default'}): {free}/{total}")
    chunks = []
    try:
        for _ in range(10000):
            chunks.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))
        fail("no OutOfMemoryError")
    except torch.OutOfMemoryError as e:
        held = len(chunks) * (64 << 20)
        if held > cap:
            fail(f"held {held} over cap {cap}")
        print(f"ok - torch.OutOfMemoryError at {held >> 20} MiB of {cap >> 20} ({conf or 'default'})")
        if "unrecognized" in str(e) or "unknown error" in str(e):
            fail(f"error text: {e}")
    chunks.clear()
    torch.cuda.empty_cache()
    x = torch.empty(cap // 2, dtype=torch.uint8, device="cuda")
    del x
    print(f"ok - allocation works again after freeing ({conf or 'default'})")


def graph():
    x = torch.ones(1 << 20, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            y = x * 2 + 1
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x * 2 + 1
    for i in range(10):
        x.fill_(i)
        g.replay()
    torch.cuda.synchronize()
    if float(y[0]) != 19.0:
        fail(f"graph replay gave {float(y[0])}")
    print("ok - CUDA graph capture and replay")


def hog(seconds):
    chunks = []
    try:
        while True:
            chunks.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        pass
    print(f"ok - slice A full at {len(chunks) * 256} MiB")
    end = time.time() + seconds
    while time.time() < end:
        try:
            torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
            fail("slice A went over its cap")
        except torch.OutOfMemoryError:
            time.sleep(0.05)


def steady(seconds):
    a = torch.randn(4096, 4096, device="cuda")
    end, n = time.time() + seconds, 0
    while time.time() < end:
        b = a @ a
        n += 1
        if n % 50 == 0:
            torch.cuda.synchronize()
            if not torch.isfinite(b).all():
                fail("slice B computed garbage")
            b = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")  # still allocates
            del b
    print(f"ok - slice B kept running next to a full slice ({n} matmuls)")


def train(steps):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
        torch.nn.ReLU(), torch.nn.Linear(4096, 1000)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(256, 4096, device="cuda")
    t = torch.randint(0, 1000, (256,), device="cuda")
    for i in range(steps + 20):
        if i == 20:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(x), t)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    print(f"step_ms {(time.perf_counter() - t0) * 1000 / steps:.3f}")


mode = sys.argv[1]
if mode == "oom":
    oom(sys.argv[2] if len(sys.argv) > 2 else "")
elif mode == "graph":
    graph()
elif mode == "hog":
    hog(float(sys.argv[2]))
elif mode == "steady":
    steady(float(sys.argv[2]))
elif mode == "train":
    train(int(sys.argv[2]))
else:
    fail(f"unknown mode {mode}")
