#!/usr/bin/python3
"""bench/cnn: a CNN's training step, tgc against PyTorch eager on the CPU, side by side in one run.

Two networks, each two blocks of conv 3x3 (padding 1) + bias + relu + max-pool 2, then a dense layer to 10
classes and softmax cross-entropy by label, one SGD step (forward, gradients of every weight, updates):
  small  Fashion-MNIST's shapes: batch 64 of 1 x 28 x 28, 32 then 64 channels
  wide   batch 128 of 3 x 32 x 32, 64 then 128 channels
Both frameworks start from the same weights and see the same batch; the first step's losses must agree.
tgc runs its default (oneDNN's convolutions for f32) and, as "direct", its own direct loops (TGC_CONV=direct
in a second process); PyTorch uses oneDNN too. Then conv2d alone (the wide network's second convolution):
forward, input gradient and filter gradient, in GFLOP/s. Prints each one's best of --repeat rounds (rounds
interleaved) and tgc's speed-up over each (above 1: tgc is faster).

    bash bench/cnn.sh                               # installs PyTorch if missing, builds, runs this
    build/tgc-python bench/cnn.py [--repeat 5] [--only small]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import tgc

NETWORKS = {"small": dict(batch=64, channels=1, size=28, widths=(32, 64)),
            "wide": dict(batch=128, channels=3, size=32, widths=(64, 128))}

SCRIPT = """input x : f32[n, {c}, {s}, {s}]
input labels : i64[n]
param w1 : f32[{a}, {c}, 3, 3] = zeros([{a}, {c}, 3, 3])
param b1 : f32[{a}] = zeros([{a}])
param w2 : f32[{b}, {a}, 3, 3] = zeros([{b}, {a}, 3, 3])
param b2 : f32[{b}] = zeros([{b}])
param w3 : f32[{f}, 10] = zeros([{f}, 10])
param b3 : f32[10] = zeros([10])
let h1 = max_pool2d(relu(conv2d(x, w1, padding=1) + b1[None, :, None, None]), 2)
let h2 = max_pool2d(relu(conv2d(h1, w2, padding=1) + b2[None, :, None, None]), 2)
let logits = reshape(h2, [-1, {f}]) @ w3 + b3
let shifted = logits - max(logits, axis=1, keepdims=true)
let logp = shifted - log(sum(exp(shifted), axis=1, keepdims=true))
let loss = -mean(logp[arange(n), labels])
let g1, gb1, g2, gb2, g3, gb3 = grad(loss, w1, b1, w2, b2, w3, b3)
update w1 = w1 - 0.01 * g1
update b1 = b1 - 0.01 * gb1
update w2 = w2 - 0.01 * g2
update b2 = b2 - 0.01 * gb2
update w3 = w3 - 0.01 * g3
update b3 = b3 - 0.01 * gb3
output loss
"""


def network(name):
    spec = NETWORKS[name]
    c, s, (a, b) = spec["channels"], spec["size"], spec["widths"]
    f = b * (s // 4) * (s // 4)
    rng = np.random.default_rng(1)
    weights = {"w1": rng.standard_normal((a, c, 3, 3), dtype=np.float32) * np.float32(0.3),
               "b1": np.zeros(a, np.float32),
               "w2": rng.standard_normal((b, a, 3, 3), dtype=np.float32) * np.float32(0.05),
               "b2": np.zeros(b, np.float32),
               "w3": rng.standard_normal((f, 10), dtype=np.float32) * np.float32(0.01),
               "b3": np.zeros(10, np.float32)}
    x = rng.standard_normal((spec["batch"], c, s, s), dtype=np.float32)
    labels = rng.integers(0, 10, spec["batch"])
    return SCRIPT.format(c=c, s=s, a=a, b=b, f=f), weights, x, labels


def tgc_steps(name, repeat):
    """tgc's first loss and best step time for network `name` (in this process's TGC_CONV setting)."""
    text, weights, x, labels = network(name)
    program = tgc.compile(text, device="cpu")
    for key, value in weights.items():
        program.params[key] = value
    first = float(program.step(x=x, labels=labels)["loss"])
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        program.step(x=x, labels=labels)
        best = min(best, time.perf_counter() - start)
    return first, best


def torch_steps(name, repeat):
    import torch
    import torch.nn.functional as F
    _, weights, x, labels = network(name)
    p = {key: torch.tensor(value, requires_grad=True) for key, value in weights.items()}
    tx, tl = torch.from_numpy(x), torch.from_numpy(labels)

    def step():
        h = F.max_pool2d(F.relu(F.conv2d(tx, p["w1"], p["b1"], padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, p["w2"], p["b2"], padding=1)), 2)
        loss = F.cross_entropy(h.reshape(h.shape[0], -1) @ p["w3"] + p["b3"], tl)
        grads = torch.autograd.grad(loss, list(p.values()))
        with torch.no_grad():
            for value, grad in zip(p.values(), grads):
                value -= 0.01 * grad
        return float(loss)

    first = step()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - start)
    return first, best


def conv_alone(repeat):
    """GFLOP/s of the wide network's second convolution ([128, 64, 16, 16] by [128, 64, 3, 3], padding 1):
    forward, input gradient, filter gradient; tgc and PyTorch."""
    import torch
    import torch.nn.functional as F
    rng = np.random.default_rng(2)
    x = rng.standard_normal((128, 64, 16, 16), dtype=np.float32)
    w = rng.standard_normal((128, 64, 3, 3), dtype=np.float32)
    gy = rng.standard_normal((128, 128, 16, 16), dtype=np.float32)
    flops = 2.0 * 128 * 128 * 16 * 16 * 64 * 9
    forward = tgc.compile("input x : f32[128, 64, 16, 16]\ninput w : f32[128, 64, 3, 3]\n"
                          "let y = conv2d(x, w, padding=1)\noutput y\n", device="cpu")
    backward = tgc.compile("input x : f32[128, 64, 16, 16]\ninput w : f32[128, 64, 3, 3]\n"
                           "input gy : f32[128, 128, 16, 16]\n"
                           "let gx, gw = grad(sum(conv2d(x, w, padding=1) * gy), x, w)\noutput gx, gw\n",
                           device="cpu")
    tx, tw, tg = (torch.from_numpy(a) for a in (x, w, gy))
    runs = {("forward", "tgc"): lambda: forward(x=x, w=w),
            ("forward", "PyTorch"): lambda: F.conv2d(tx, tw, padding=1),
            ("both gradients", "tgc"): lambda: backward(x=x, w=w, gy=gy),
            ("both gradients", "PyTorch"): lambda: (torch.nn.grad.conv2d_input(tx.shape, tw, tg, padding=1),
                                                    torch.nn.grad.conv2d_weight(tx, tw.shape, tg, padding=1))}
    best = {key: float("inf") for key in runs}
    for _ in range(repeat):
        for key, run in runs.items():
            start = time.perf_counter()
            run()
            best[key] = min(best[key], time.perf_counter() - start)
    return {key: (seconds, flops * (2 if key[0] == "both gradients" else 1) / seconds / 1e9)
            for key, seconds in best.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", choices=sorted(NETWORKS))
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a network's tgc steps, as JSON
    args = parser.parse_args()
    if args.child:
        print(json.dumps(tgc_steps(args.child, args.repeat)))
        return
    import torch
    torch.set_num_threads(os.cpu_count())
    names = [args.only] if args.only else list(NETWORKS)
    print("CNN training step on the CPU; %d cores; best of %d; PyTorch %s" % (os.cpu_count(), args.repeat,
                                                                           torch.__version__))
    print("%-8s %-10s %10s %10s %12s" % ("network", "who", "ms", "loss", "tgc speed-up"))
    for name in names:
        direct = subprocess.run([sys.executable, __file__, "--child", name, "--repeat", str(args.repeat)],
                                env=dict(os.environ, TGC_CONV="direct"), capture_output=True, text=True,
                                check=True)
        results = {"tgc": tgc_steps(name, args.repeat), "direct": tuple(json.loads(direct.stdout)),
                   "PyTorch": torch_steps(name, args.repeat)}
        reference = results["PyTorch"][0]
        for who, (loss, seconds) in results.items():
            assert abs(loss - reference) <= 1e-3 * max(1.0, abs(reference)), \
                "%s's first loss %g differs from PyTorch's %g" % (who, loss, reference)
            ratio = "" if who == "tgc" else "%.2fx" % (seconds / results["tgc"][1])
            print("%-8s %-10s %10.1f %10.5f %12s" % (name, who, seconds * 1e3, loss, ratio))
    print("\nconv2d [128, 64, 16, 16] * [128, 64, 3, 3], padding 1")
    print("%-16s %-8s %10s %10s" % ("pass", "who", "ms", "GFLOP/s"))
    for (what, who), (seconds, rate) in conv_alone(args.repeat).items():
        print("%-16s %-8s %10.1f %10.1f" % (what, who, seconds * 1e3, rate))


if __name__ == "__main__":
    main()
