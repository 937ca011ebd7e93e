#!/usr/bin/env python3
"""bench/kernels: tgc's host kernels against NumPy, numexpr and PyTorch and a STREAM triad probe, side by
side in one run: float32, 16M elements, 1 and 2 threads. Prints GB/s (the bytes each expression must move at
least: every input read once, the output written once), the share of the triad's GB/s, and tgc's speed-up
over each peer; then each kernel's compile latency.

    bash bench/kernels.sh              # installs the peers (Debian packages) if missing, builds, runs this
    python3 bench/kernels.py --tgc-bench build/bench/kernels [--repeat 5] [--threads 1,2]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

N = 16 << 20


def best(repeat, f):
    f()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def make_inputs():
    rng = np.random.default_rng(1)
    u = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)
    return {
        "a*b+c": (u(N), u(N), u(N)),
        "exp(-x*x/2)*0.3989+y": (u(N), u(N)),
        "tanh(a)*sigmoid(b)+log1p(c*c)-sqrt(abs(a-b))": (u(N), u(N), u(N)),
        "relu(M+v)": (u(4096, 4096), u(4096)),
        "sum(exp(x),axis=1)": (u(4096, 4096),),
        "softmax(rows of 4096x1024)": (u(4096, 1024),),
    }


def numpy_version(name):
    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return {
        "a*b+c": lambda a, b, c: a * b + c,
        "exp(-x*x/2)*0.3989+y": lambda x, y: np.exp(-x * x / np.float32(2)) * np.float32(0.3989) + y,
        "tanh(a)*sigmoid(b)+log1p(c*c)-sqrt(abs(a-b))":
            lambda a, b, c: np.tanh(a) * (1 / (1 + np.exp(-b))) + np.log1p(c * c) - np.sqrt(np.abs(a - b)),
        "relu(M+v)": lambda m, v: np.maximum(m + v, 0),
        "sum(exp(x),axis=1)": lambda x: np.exp(x).sum(axis=1),
        "softmax(rows of 4096x1024)": softmax,
    }[name]


def numexpr_version(name, ne):
    exprs = {
        "a*b+c": ("a*b+c", "abc"),
        "exp(-x*x/2)*0.3989+y": ("exp(-x*x/2)*0.3989+y", "xy"),
        "tanh(a)*sigmoid(b)+log1p(c*c)-sqrt(abs(a-b))":
            ("tanh(a)*(1/(1+exp(-b)))+log1p(c*c)-sqrt(abs(a-b))", "abc"),
        "relu(M+v)": ("where(M+v>0, M+v, 0)", "Mv"),
        "sum(exp(x),axis=1)": ("sum(exp(x), axis=1)", "x"),
    }
    if name not in exprs:
        return None  # numexpr has no row-wise max, so no softmax
    text, names = exprs[name]
    return lambda *args: ne.evaluate(text, local_dict=dict(zip(names, args)))


def torch_version(name, torch):
    return {
        "a*b+c": lambda a, b, c: torch.addcmul(c, a, b),
        "exp(-x*x/2)*0.3989+y": lambda x, y: torch.exp(-x * x / 2) * 0.3989 + y,
        "tanh(a)*sigmoid(b)+log1p(c*c)-sqrt(abs(a-b))":
            lambda a, b, c: torch.tanh(a) * torch.sigmoid(b) + torch.log1p(c * c) - torch.sqrt(torch.abs(a - b)),
        "relu(M+v)": lambda m, v: torch.relu(m + v),
        "sum(exp(x),axis=1)": lambda x: torch.exp(x).sum(dim=1),
        "softmax(rows of 4096x1024)": lambda x: torch.softmax(x, dim=1),
    }[name]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tgc-bench", default="build/bench/kernels")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]

    lines = subprocess.run([args.tgc_bench, "--repeat", str(args.repeat), "--threads", args.threads],
                           check=True, capture_output=True, text=True).stdout.splitlines()
    records = [json.loads(line) for line in lines]
    triad = {r["threads"]: r["gbps"] for r in records if r["kind"] == "triad"}
    tgc = {(r["case"], r["threads"]): r for r in records if r["kind"] == "tgc"}
    compile_latency = [r for r in records if r["kind"] == "compile"]
    bytes_moved = {r["case"]: r["gbps"] * r["seconds"] * 1e9 for r in records if r["kind"] == "tgc"}

    try:
        import numexpr as ne
    except ImportError:
        ne = None
    try:
        import torch
    except ImportError:
        torch = None

    inputs = make_inputs()
    print(f"bench/kernels: float32, {N >> 20}M elements; GB/s = bytes each expression must move / best of "
          f"{args.repeat} runs")
    print(f"STREAM triad: " + ", ".join(f"{triad[t]:.1f} GB/s on {t} thread{'s' * (t > 1)}" for t in threads))
    header = (f"{'expression':46} {'thr':>3} {'kern':>4} {'tgc GB/s':>9} {'% triad':>8} {'numpy':>7} "
              f"{'numexpr':>7} {'torch':>7}   tgc speed-up over numpy / numexpr / torch")
    print(header)
    for name, arrays in inputs.items():
        for t in threads:
            record = tgc.get((name, t))
            if not record:
                continue
            peers = {}
            peers["numpy"] = best(args.repeat, lambda: numpy_version(name)(*arrays))  # NumPy is single-threaded
            if ne is not None and numexpr_version(name, ne):
                ne.set_num_threads(t)
                peers["numexpr"] = best(args.repeat, lambda: numexpr_version(name, ne)(*arrays))
            if torch is not None:
                torch.set_num_threads(t)
                tensors = [torch.from_numpy(a) for a in arrays]
                peers["torch"] = best(args.repeat, lambda: torch_version(name, torch)(*tensors))
            gbps = lambda seconds: bytes_moved[name] / seconds / 1e9
            cells = [f"{gbps(peers[p]):7.2f}" if p in peers else f"{'-':>7}" for p in ("numpy", "numexpr", "torch")]
            ratios = [f"{peers[p] / record['seconds']:.2f}x" if p in peers else "-" for p in ("numpy", "numexpr", "torch")]
            print(f"{name:46} {t:3d} {record['kernels']:4d} {record['gbps']:9.2f} "
                  f"{100 * record['gbps'] / triad[t]:7.1f}% {' '.join(cells)}   {' / '.join(ratios)}")
    print("compile latency of each expression's first kernel (host JIT), in the layout the runtime launches it:")
    for r in compile_latency:
        disk = f", disk-cache hit {r['disk_ms']:.3f} ms" if "disk_ms" in r else ""
        print(f"  {r['case']:46} {r.get('layout', ''):10} cold {r['cold_ms']:7.2f} ms, "
              f"warm (in memory) {r['warm_ms']:.4f} ms{disk}")
    missing = [p for p, m in (("numexpr", ne), ("torch", torch)) if m is None]
    if missing:
        print("not installed (bash bench/kernels.sh installs them): " + ", ".join(missing))


if __name__ == "__main__":
    main()
