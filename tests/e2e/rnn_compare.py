#!/usr/bin/env python3
"""End-to-end test of scan against PyTorch: recurrent layers written with scan, values and gradients.

Each case is one script: a recurrent layer written as a step function (an Elman RNN, a GRU or an LSTM with
PyTorch's gate order and weights' layout) and run over a sequence by scan, then the gradients of a weighted sum of
its outputs (every step's hidden state, and the last cell state of an LSTM) with respect to the input sequence,
the initial state and every weight and bias. PyTorch's torch.nn.RNN, GRU and LSTM compute the same with autograd
from the same arrays (an independent implementation: cuDNN's formulas, not a port of the script). Cases cover a
reverse scan (PyTorch's over the flipped sequence), f32 and f64, and a symbolic sequence length. f32 results must
match to a relative 1e-4 of the largest magnitude, f64 to 1e-10.

Usage: rnn_compare.py --tgc build/tgc [--device cpu|sim] [-k SUBSTRING] [-v]
The last line printed is `N passed, M failed`; the exit status is non-zero on any failure.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

RS = np.random.RandomState(34)

# (name, cell, steps, batch, input size, hidden size, reverse, dtype)
CASES = [
    ("elman", "rnn", 7, 3, 4, 5, False, "f32"),
    ("elman reverse", "rnn", 6, 2, 3, 4, True, "f32"),
    ("elman f64", "rnn", 5, 2, 3, 3, False, "f64"),
    ("gru", "gru", 6, 3, 4, 5, False, "f32"),
    ("gru f64", "gru", 5, 2, 3, 4, False, "f64"),
    ("lstm", "lstm", 8, 3, 4, 6, False, "f32"),
    ("lstm reverse", "lstm", 5, 2, 3, 4, True, "f32"),
    ("lstm f64", "lstm", 6, 2, 5, 3, False, "f64"),
]

GATES = {"rnn": 1, "gru": 3, "lstm": 4}

STEPS = {
    "rnn": """def step(h, x) = tanh(x @ transpose(Wih) + bih + h @ transpose(Whh) + bhh)
let hs = scan(step, h0, xs{reverse})
let loss = sum(hs * W)
""",
    "gru": """def step(h, x) {{
  let gi = x @ transpose(Wih) + bih
  let gh = h @ transpose(Whh) + bhh
  let r = sigmoid(gi[:, 0:{H}] + gh[:, 0:{H}])
  let z = sigmoid(gi[:, {H}:{H2}] + gh[:, {H}:{H2}])
  let n = tanh(gi[:, {H2}:] + r * gh[:, {H2}:])
  return (1.0 - z) * n + z * h
}}
let hs = scan(step, h0, xs{reverse})
let loss = sum(hs * W)
""",
    "lstm": """def step(h, c, x) {{
  let g = x @ transpose(Wih) + bih + h @ transpose(Whh) + bhh
  let i = sigmoid(g[:, 0:{H}])
  let f = sigmoid(g[:, {H}:{H2}])
  let u = tanh(g[:, {H2}:{H3}])
  let o = sigmoid(g[:, {H3}:])
  let c2 = f * c + i * u
  return o * tanh(c2), c2
}}
let hs, cs = scan(step, [h0, c0], xs{reverse})
let loss = sum(hs * W) + sum(cs[{last}] * V)
""",
}


def torch_reference(cell, arrays, reverse, hidden):
    """Outputs and gradients from torch.nn's layer holding the same weights."""
    layer_type = {"rnn": torch.nn.RNN, "gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[cell]
    xs = arrays["xs"]
    layer = layer_type(xs.shape[2], hidden, dtype=torch.float64 if xs.dtype == np.float64 else torch.float32)
    with torch.no_grad():
        for name in ("Wih", "Whh", "bih", "bhh"):
            torch_name = {"Wih": "weight_ih_l0", "Whh": "weight_hh_l0", "bih": "bias_ih_l0",
                          "bhh": "bias_hh_l0"}[name]
            getattr(layer, torch_name).copy_(torch.tensor(arrays[name]))
    tensors = {name: torch.tensor(arrays[name], requires_grad=True) for name in ("xs", "h0", "c0") if name in arrays}
    inputs = tensors["xs"].flip(0) if reverse else tensors["xs"]
    if cell == "lstm":
        out, (_, c_n) = layer(inputs, (tensors["h0"][None], tensors["c0"][None]))
    else:
        out, _ = layer(inputs, tensors["h0"][None])
    if reverse:
        out = out.flip(0)
    loss = (out * torch.tensor(arrays["W"])).sum()
    if cell == "lstm":
        loss = loss + (c_n[0] * torch.tensor(arrays["V"])).sum()
    loss.backward()
    grads = {"d" + name: tensor.grad.numpy() for name, tensor in tensors.items()}
    for name in ("Wih", "Whh", "bih", "bhh"):
        torch_name = {"Wih": "weight_ih_l0", "Whh": "weight_hh_l0", "bih": "bias_ih_l0", "bhh": "bias_hh_l0"}[name]
        grads["d" + name] = getattr(layer, torch_name).grad.numpy()
    grads["hs"] = out.detach().numpy()
    return grads


def run_case(tgc, device, case, verbose):
    name, cell, steps, batch, inputs, hidden, reverse, dtype = case
    npdtype = np.float32 if dtype == "f32" else np.float64
    gates = GATES[cell] * hidden
    shapes = {"xs": (steps, batch, inputs), "h0": (batch, hidden), "Wih": (gates, inputs),
              "Whh": (gates, hidden), "bih": (gates,), "bhh": (gates,), "W": (steps, batch, hidden)}
    if cell == "lstm":
        shapes.update({"c0": (batch, hidden), "V": (batch, hidden)})
    arrays = {key: RS.uniform(-0.8, 0.8, shape).astype(npdtype) for key, shape in shapes.items()}
    want = torch_reference(cell, arrays, reverse, hidden)
    declared = {key: ", ".join(map(str, shape)) for key, shape in shapes.items()}
    declared["xs"] = "t, %d, %d" % (batch, inputs)  # the length is symbolic
    declared["W"] = "t, %d, %d" % (batch, hidden)
    text = "".join("input %s : %s[%s]\n" % (key, dtype, declared[key]) for key in shapes)
    text += STEPS[cell].format(H=hidden, H2=2 * hidden, H3=3 * hidden, reverse=", reverse=true" if reverse else "",
                               last="0" if reverse else "-1")
    wrt = ["xs", "h0"] + (["c0"] if cell == "lstm" else []) + ["Wih", "Whh", "bih", "bhh"]
    text += "let %s = grad(loss, %s)\n" % (", ".join("d" + w for w in wrt), ", ".join(wrt))
    outputs = ["hs"] + ["d" + w for w in wrt]
    text += "output %s\n" % ", ".join(outputs)
    with tempfile.TemporaryDirectory() as folder:
        path = lambda file: os.path.join(folder, file)  # noqa: E731
        with open(path("case.tg"), "w") as f:
            f.write(text)
        command = [tgc, "run", path("case.tg"), "--device", device]
        for key, value in arrays.items():
            np.save(path(key + ".npy"), value)
            command += ["--in", "%s=%s" % (key, path(key + ".npy"))]
        for output in outputs:
            command += ["--out", "%s=%s" % (output, path(output + ".npy"))]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            return "tgc failed:\n" + text + result.stderr
        got = {output: np.load(path(output + ".npy")) for output in outputs}
    tolerance = 1e-4 if dtype == "f32" else 1e-10
    for output in outputs:
        g, e = got[output], want[output]
        if g.shape != e.shape or g.dtype != e.dtype:
            return "%s: got %s %s, PyTorch %s %s\n%s" % (output, g.dtype, g.shape, e.dtype, e.shape, text)
        scale = max(1.0, float(np.abs(e).max()))
        error = float(np.abs(g.astype(np.float64) - e).max())
        if error > tolerance * scale:
            return "%s: differs by %.3g (allowed %.3g)\n%s" % (output, error, tolerance * scale, text)
        if verbose:
            print("  %-5s max |tgc - PyTorch| = %.3g" % (output, error))
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tgc", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("-k", default="")
    parser.add_argument("-v", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    passed = failed = 0
    for case in CASES:
        if args.k not in case[0]:
            continue
        problem = run_case(args.tgc, args.device, case, args.v)
        if problem:
            failed += 1
            print("FAIL %s (%s): %s" % (case[0], args.device, problem))
        else:
            passed += 1
            if args.v:
                print("ok %s" % case[0])
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
