#!/usr/bin/python3
"""bench/rnn: an LSTM layer's training step, tgc against PyTorch eager's nn.LSTM on the CPU, side by side.

One LSTM layer (batch 32, 64 steps, 256 inputs, 256 hidden; PyTorch's gate order and weights' layout) written
in tg with scan, then a regression loss on every step's hidden state and one SGD step (forward, gradients
through time of the four weights and biases, updates). Both frameworks start from the same weights and see the
same batch; their first losses must agree. Then the same step on tgc's simulated device (steps per second),
and the compile time of a 1,000-step recurrence as a scan against the same recurrence unrolled by hand (the
scan's must not grow with the length). Prints each one's best of --repeat rounds (rounds interleaved) and
tgc's speed-up (above 1: tgc is faster).

    bash bench/rnn.sh                               # installs PyTorch if missing, builds, runs this
    build/tgc-python bench/rnn.py [--repeat 5]
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

import tgc

BATCH, STEPS, INPUTS, HIDDEN = 32, 64, 256, 256

SCRIPT = """input xs : f32[t, b, {I}]
input target : f32[t, b, {H}]
param Wih : f32[{G}, {I}] = zeros([{G}, {I}])
param Whh : f32[{G}, {H}] = zeros([{G}, {H}])
param bih : f32[{G}] = zeros([{G}])
param bhh : f32[{G}] = zeros([{G}])
def cell(h, c, x) {{
  let g = x @ transpose(Wih) + bih + h @ transpose(Whh) + bhh
  let i = sigmoid(g[:, 0:{H}])
  let f = sigmoid(g[:, {H}:{H2}])
  let u = tanh(g[:, {H2}:{H3}])
  let o = sigmoid(g[:, {H3}:])
  let c2 = f * c + i * u
  return o * tanh(c2), c2
}}
let h0 = zeros_like(target[0])
let hs, cs = scan(cell, [h0, h0], xs)
let loss = mean((hs - target) ** 2)
let gih, ghh, gbi, gbh = grad(loss, Wih, Whh, bih, bhh)
update Wih = Wih - 0.1 * gih
update Whh = Whh - 0.1 * ghh
update bih = bih - 0.1 * gbi
update bhh = bhh - 0.1 * gbh
output loss
""".format(I=INPUTS, H=HIDDEN, G=4 * HIDDEN, H2=2 * HIDDEN, H3=3 * HIDDEN)


def data():
    rng = np.random.default_rng(1)
    bound = np.float32(1 / np.sqrt(HIDDEN))  # PyTorch's initialization range
    weights = {"Wih": rng.uniform(-bound, bound, (4 * HIDDEN, INPUTS)).astype(np.float32),
               "Whh": rng.uniform(-bound, bound, (4 * HIDDEN, HIDDEN)).astype(np.float32),
               "bih": rng.uniform(-bound, bound, 4 * HIDDEN).astype(np.float32),
               "bhh": rng.uniform(-bound, bound, 4 * HIDDEN).astype(np.float32)}
    xs = rng.standard_normal((STEPS, BATCH, INPUTS), dtype=np.float32)
    target = rng.uniform(-0.5, 0.5, (STEPS, BATCH, HIDDEN)).astype(np.float32)
    return weights, xs, target


def tgc_program(device):
    weights, xs, target = data()
    program = tgc.compile(SCRIPT, device=device)
    for key, value in weights.items():
        program.params[key] = value
    return lambda: float(program.step(xs=xs, target=target)["loss"])


def torch_program():
    import torch
    weights, xs, target = data()
    layer = torch.nn.LSTM(INPUTS, HIDDEN)
    with torch.no_grad():
        for key, name in (("Wih", "weight_ih_l0"), ("Whh", "weight_hh_l0"), ("bih", "bias_ih_l0"),
                          ("bhh", "bias_hh_l0")):
            getattr(layer, name).copy_(torch.from_numpy(weights[key]))
    tx, tt = torch.from_numpy(xs), torch.from_numpy(target)

    def step():
        out, _ = layer(tx)
        loss = ((out - tt) ** 2).mean()
        layer.zero_grad()
        loss.backward()
        with torch.no_grad():
            for parameter in layer.parameters():
                parameter -= 0.1 * parameter.grad
        return float(loss)
    return step


def compile_seconds(length, unrolled):
    """Seconds to compile a tanh recurrence of `length` steps with its gradient, as a scan or unrolled, and to
    run its first step (which compiles its kernels), in a fresh process with the disk cache unused."""
    command = [sys.executable, __file__, "--compile", str(length)] + (["--unrolled"] if unrolled else [])
    return float(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def compile_here(length, unrolled):
    lines = ["input x0 : f32[8]", "param W : f32[8, 8] = randn([8, 8], seed=1) * 0.3", "def f(h) = tanh(h @ W)"]
    if unrolled:
        lines += ["let h0 = x0"] + ["let h%d = f(h%d)" % (i + 1, i) for i in range(length)]
        lines += ["let loss = sum(h%d)" % length]
    else:
        lines += ["let hs = scan(f, x0, length=%d)" % length, "let loss = sum(hs[-1])"]
    lines += ["let gW = grad(loss, W)", "update W = W - 0.01 * gW", "output loss"]
    start = time.perf_counter()
    program = tgc.compile("\n".join(lines) + "\n", device="cpu", no_cache=True)
    program.step(x0=np.zeros(8, np.float32))  # the kernels are compiled for the first step
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--compile", type=int, help=argparse.SUPPRESS)  # one compile time, printed
    parser.add_argument("--unrolled", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compile:
        print(compile_here(args.compile, args.unrolled))
        return
    import torch
    torch.set_num_threads(os.cpu_count())
    runs = {"tgc": tgc_program("cpu"), "PyTorch": torch_program()}
    first = {who: run() for who, run in runs.items()}
    reference = first["PyTorch"]
    for who, loss in first.items():
        assert abs(loss - reference) <= 1e-4 * max(1.0, abs(reference)), \
            "%s's first loss %g differs from PyTorch's %g" % (who, loss, reference)
    best = {who: float("inf") for who in runs}
    for _ in range(args.repeat):
        for who, run in runs.items():
            start = time.perf_counter()
            run()
            best[who] = min(best[who], time.perf_counter() - start)
    print("LSTM training step on the CPU (batch %d, %d steps, %d inputs, %d hidden); %d cores; best of %d; "
          "PyTorch %s" % (BATCH, STEPS, INPUTS, HIDDEN, os.cpu_count(), args.repeat, torch.__version__))
    print("%-10s %10s %10s %12s" % ("who", "ms", "loss", "tgc speed-up"))
    for who, seconds in best.items():
        ratio = "" if who == "tgc" else "%.2fx" % (seconds / best["tgc"])
        print("%-10s %10.1f %10.5f %12s" % (who, seconds * 1e3, first[who], ratio))
    sim = tgc_program("sim")
    sim()
    sim_best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        sim()
        sim_best = min(sim_best, time.perf_counter() - start)
    print("\nsim device: %.1f steps per second (%.1f ms a step)" % (1 / sim_best, sim_best * 1e3))
    print("\ncompile time of a tanh recurrence with its gradient, and its first step (seconds)")
    print("%-8s %10s %10s" % ("length", "scan", "unrolled"))
    for length in (10, 100, 1000):
        print("%-8d %10.3f %10.3f" % (length, compile_seconds(length, False), compile_seconds(length, True)))


if __name__ == "__main__":
    main()
