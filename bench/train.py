#!/usr/bin/python3
"""Training-step time on the CPU: a compiled tgc step, the same script compiled ahead of time into a library
(tgc compile --emit=lib --shared, stepped through its C API), and the same step written by hand in NumPy and in
PyTorch eager (same initial params, same math), side by side in one run; then steps per second on sim.

  build/tgc-python bench/train.py [--repeat 5] [--large-steps 5]

Two MLPs with examples/mlp.tg's structure (relu hidden layer, softmax cross-entropy from integer labels,
accuracy, grad, four plain gradient-descent updates): examples/mlp.tg itself on its 300 spiral points
(2 -> 64 -> 3), and a large one (4096 x 256 -> 1024 -> 10, random data). Compilation is excluded: each
implementation runs a few warm-up steps first. Each figure is the best of --repeat rounds, the
implementations taking turns in each round. The losses after the timed steps are compared (they must agree
within float32's rounding) so that all compute the same thing. AOT/tgc is the library's step time over the
JIT's (the same kernels and runtime: 1.0 but for noise). PyTorch is optional (Debian's
python3-torch); without it its column says so.
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import warnings
import time

import numpy as np

with warnings.catch_warnings():  # about OpenBLAS's kernels: main() runs again with the right ones
    warnings.simplefilter("ignore", RuntimeWarning)
    import tgc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LARGE = """
# bench/train.py's large MLP: examples/mlp.tg's structure, 256 -> 1024 -> 10.
import nn
input X      : f32[n, 256]
input labels : i64[n]
param W1 : f32[256, 1024] = randn([256, 1024], seed=1) * 0.05
param b1 : f32[1024]      = zeros([1024])
param W2 : f32[1024, 10]  = randn([1024, 10], seed=2) * 0.05
param b2 : f32[10]        = zeros([10])
let hidden = relu(X @ W1 + b1)
let logits = hidden @ W2 + b2
let onehot = f32(reshape(labels, [-1, 1]) == arange(10))
let loss   = -mean(sum(onehot * nn.log_softmax(logits, 1), axis=1))
let accuracy = mean(f32(argmax(logits, axis=1) == labels))
let gW1, gb1, gW2, gb2 = grad(loss, W1, b1, W2, b2)
let rate = 0.1
update W1 = W1 - rate * gW1
update b1 = b1 - rate * gb1
update W2 = W2 - rate * gW2
update b2 = b2 - rate * gb2
output loss, accuracy
"""


class NumPyMlp:
    """The step by hand in NumPy: forward, softmax cross-entropy, backward, updates."""

    def __init__(self, params, rate):
        self.W1, self.b1, self.W2, self.b2 = (np.array(params[k]) for k in ("W1", "b1", "W2", "b2"))
        self.rate = np.float32(rate)

    def step(self, X, labels):
        pre = X @ self.W1 + self.b1
        hidden = np.maximum(pre, 0)
        logits = hidden @ self.W2 + self.b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        exps = np.exp(shifted)
        sums = exps.sum(axis=1, keepdims=True)
        log_softmax = shifted - np.log(sums)
        onehot = (labels.reshape(-1, 1) == np.arange(logits.shape[1])).astype(np.float32)
        n = np.float32(len(X))
        loss = -(onehot * log_softmax).sum(axis=1).mean()
        accuracy = (logits.argmax(axis=1) == labels).astype(np.float32).mean()
        dlogits = (exps / sums - onehot) / n
        dhidden = (dlogits @ self.W2.T) * (pre > 0)
        self.W2 -= self.rate * (hidden.T @ dlogits)
        self.b2 -= self.rate * dlogits.sum(axis=0)
        self.W1 -= self.rate * (X.T @ dhidden)
        self.b1 -= self.rate * dhidden.sum(axis=0)
        return loss, accuracy


class TorchMlp:
    """The step in PyTorch eager, autograd for the gradients."""

    def __init__(self, torch, params, rate):
        self.torch = torch
        self.params = [torch.tensor(np.array(params[k]), requires_grad=True) for k in ("W1", "b1", "W2", "b2")]
        self.rate = rate

    def step(self, X, labels):
        torch = self.torch
        W1, b1, W2, b2 = self.params
        logits = torch.relu(X @ W1 + b1) @ W2 + b2
        loss = torch.nn.functional.cross_entropy(logits, labels)
        accuracy = (logits.argmax(dim=1) == labels).float().mean()
        for p in self.params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in self.params:
                p -= self.rate * p.grad
        return loss.item(), accuracy.item()


class TgcArray(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int32), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("data", ctypes.c_void_p)]


class AotMlp:
    """The script compiled ahead of time (tgc compile --emit=lib --shared), stepped through its C API
    (runtime/aot/tgc_aot.h) by ctypes: tgc's kernels with no compiler in the loop."""

    DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.int32): 2, np.dtype(np.int64): 3,
              np.dtype(np.bool_): 4}

    def __init__(self, script, folder, inputs, params):
        tgc_command = os.environ.get("TGC", os.path.join(ROOT, "build", "tgc"))
        subprocess.run([tgc_command, "compile", script, "--emit=lib", "--shared", "-o", os.path.join(folder, "model")],
                       check=True, capture_output=True)
        self.library = ctypes.CDLL(os.path.join(folder, "libmodel.so"))
        self.model = ctypes.c_void_p()
        table = ctypes.c_void_p.in_dll(self.library, "model_library")
        if self.library.tgc_model_open(ctypes.byref(table), b"cpu", ctypes.byref(self.model)) != 0:
            raise SystemExit("aot: " + ctypes.c_char_p(self.library.tgc_last_error()).value.decode())
        self.keep = list(inputs)
        self.inputs = (TgcArray * len(inputs))(*[self.array(x) for x in inputs])
        self.outputs = (TgcArray * 2)()
        for index, value in enumerate(params):  # the same initial params as the others (W1, b1, W2, b2)
            self.keep.append(value)
            self.library.tgc_model_set_param(self.model, index, ctypes.byref(self.array(value)))

    def array(self, x):
        shape = (ctypes.c_int64 * max(x.ndim, 1))(*x.shape)
        self.keep.append(shape)
        return TgcArray(self.DTYPES[x.dtype], x.ndim, shape, x.ctypes.data)

    def step(self):
        self.library.tgc_model_step(self.model, self.inputs, self.outputs)

    def loss(self):
        return ctypes.cast(self.outputs[0].data, ctypes.POINTER(ctypes.c_float))[0]


def seconds_per_step(step, steps):
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def compare(name, script, X, labels, rate, steps, repeat, torch):
    """Times the three implementations; returns the row of the table."""
    program = tgc.compile(script, device="cpu")
    initial = {k: np.array(v) for k, v in program.params.items()}
    implementations = {"tgc": lambda: program.step(X=X, labels=labels)}
    folder = tempfile.mkdtemp()
    aot = AotMlp(script, folder, [X, labels], [initial[k] for k in ("W1", "b1", "W2", "b2")])
    implementations["aot"] = aot.step
    numpy_mlp = NumPyMlp(initial, rate)
    implementations["numpy"] = lambda: numpy_mlp.step(X, labels)
    if torch:
        torch_mlp = TorchMlp(torch, initial, rate)
        tX, tlabels = torch.from_numpy(X), torch.from_numpy(labels)
        implementations["torch"] = lambda: torch_mlp.step(tX, tlabels)
    for step in implementations.values():
        step()  # compiled, warm
    best = {}
    for _ in range(repeat):
        for key, step in implementations.items():
            best[key] = min(best.get(key, 1e30), seconds_per_step(step, steps))
    # The same math: after the same number of steps the losses agree.
    losses = {"tgc": float(program(X=X, labels=labels)["loss"])}
    aot.library.tgc_model_run(aot.model, aot.inputs, aot.outputs)
    losses["aot"] = float(aot.loss())
    losses["numpy"] = float(NumPyMlp({"W1": numpy_mlp.W1, "b1": numpy_mlp.b1, "W2": numpy_mlp.W2,
                                      "b2": numpy_mlp.b2}, 0).step(X, labels)[0])
    if torch:
        losses["torch"] = float(TorchMlp(torch, {k: p.detach().numpy() for k, p in
                                                 zip(("W1", "b1", "W2", "b2"), torch_mlp.params)}, 0)
                                .step(tX, tlabels)[0])
    for key, loss in losses.items():
        if abs(loss - losses["tgc"]) > 1e-3 * max(1.0, abs(losses["tgc"])):
            raise SystemExit("%s: %s's loss %.6f differs from tgc's %.6f" % (name, key, loss, losses["tgc"]))
    sim = tgc.compile(script, device="sim")
    sim.step(X=X, labels=labels)
    sim_seconds = seconds_per_step(lambda: sim.step(X=X, labels=labels), max(1, steps // 4))
    return name, best, sim_seconds


def main():
    # NumPy, PyTorch and tgc share OpenBLAS: give all three the kernels this CPU calls for, as `tgc run` does.
    core = tgc._tgc.better_blas_core()
    if core and "OPENBLAS_CORETYPE" not in os.environ:
        os.environ["OPENBLAS_CORETYPE"] = core
        os.execv(sys.executable, [sys.executable] + sys.argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--small-steps", type=int, default=200)
    parser.add_argument("--large-steps", type=int, default=5)
    args = parser.parse_args()
    try:
        import torch
        torch.set_num_threads(os.cpu_count())
    except ImportError:
        torch = None

    rows = []
    data = os.path.join(ROOT, "examples", "data")
    X, labels = np.load(os.path.join(data, "spiral_X.npy")), np.load(os.path.join(data, "spiral_y.npy"))
    rows.append(compare("examples/mlp.tg (300 x 2-64-3)", os.path.join(ROOT, "examples", "mlp.tg"), X, labels,
                        1.0, args.small_steps, args.repeat, torch))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4096, 256)).astype(np.float32)
    labels = rng.integers(0, 10, 4096).astype(np.int64)
    with tempfile.NamedTemporaryFile("w", suffix=".tg", delete=False) as script:
        script.write(LARGE)
    rows.append(compare("large (4096 x 256-1024-10)", script.name, X, labels, 0.1, args.large_steps,
                        args.repeat, torch))
    os.unlink(script.name)

    print("BLAS: %s" % tgc.blas)
    print("%-30s %10s %10s %10s %10s %9s %10s %11s %12s" % ("step (ms)", "tgc", "tgc AOT", "NumPy", "PyTorch",
                                                            "AOT/tgc", "tgc/NumPy", "tgc/PyTorch", "sim steps/s"))
    for name, best, sim_seconds in rows:
        torch_ms = "%.3f" % (best["torch"] * 1e3) if "torch" in best else "absent"
        torch_ratio = "%.2f" % (best["tgc"] / best["torch"]) if "torch" in best else "-"
        print("%-30s %10.3f %10.3f %10.3f %10s %9.2f %10.2f %11s %12.1f" % (
            name, best["tgc"] * 1e3, best["aot"] * 1e3, best["numpy"] * 1e3, torch_ms, best["aot"] / best["tgc"],
            best["tgc"] / best["numpy"], torch_ratio, 1 / sim_seconds))


if __name__ == "__main__":
    main()
