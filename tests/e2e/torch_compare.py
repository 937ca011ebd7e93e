#!/usr/bin/env python3
"""End-to-end test of the convolutions and poolings against PyTorch (torch.nn.functional), values and gradients.

Each case is one script: y = conv(x, w, ...) for conv1d, conv2d or conv_transpose2d (or y = pool(x, ...) for
max_pool2d and avg_pool2d), and the gradients of sum(y * W) with respect to x and w (W a fixed random array of
y's shape, so that every output weighs in), run by `tgc run` on the chosen device and saved with --out; PyTorch
computes the same with autograd. Cases cover strides, padding (integers, pairs, "same" with odd and even
kernels, "valid"), dilation, groups, output padding, odd sizes, pooling windows that overlap, pad or leave rows
out, ties (max pooling's gradient to the first maximum), f32 and f64; and second derivatives through max
pooling. f32 results must match to a relative 1e-4 of the largest magnitude, f64 to 1e-10.

Usage: torch_compare.py --tgc build/tgc [--device cpu|sim] [-k SUBSTRING] [-v]
The last line printed is `N passed, M failed`; the exit status is non-zero on any failure.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
import torch.nn.functional as F

RS = np.random.RandomState(33)

# (name, builtin, x shape, w shape, keyword arguments as the script writes them, dtype)
CASES = [
    ("conv2d", "conv2d", (2, 3, 7, 6), (4, 3, 3, 3), {}, "f32"),
    ("conv2d stride", "conv2d", (2, 3, 9, 8), (5, 3, 3, 2), {"stride": 2}, "f32"),
    ("conv2d stride pair", "conv2d", (1, 2, 8, 9), (3, 2, 2, 3), {"stride": [1, 3], "padding": [1, 0]}, "f32"),
    ("conv2d padding", "conv2d", (2, 3, 5, 5), (2, 3, 3, 3), {"padding": 2}, "f32"),
    ("conv2d same odd", "conv2d", (2, 3, 6, 7), (2, 3, 3, 5), {"padding": "same"}, "f32"),
    ("conv2d same even", "conv2d", (2, 3, 6, 7), (2, 3, 2, 4), {"padding": "same"}, "f32"),
    ("conv2d same dilated", "conv2d", (1, 2, 8, 8), (2, 2, 3, 2), {"padding": "same", "dilation": 2}, "f32"),
    ("conv2d valid", "conv2d", (2, 3, 6, 7), (2, 3, 3, 3), {"padding": "valid", "stride": [2, 1]}, "f32"),
    ("conv2d dilation", "conv2d", (1, 2, 9, 8), (3, 2, 3, 3), {"dilation": [2, 3], "padding": 1}, "f32"),
    ("conv2d groups", "conv2d", (2, 4, 9, 8), (6, 2, 3, 3), {"groups": 2, "padding": 1}, "f32"),
    ("conv2d depthwise", "conv2d", (2, 3, 6, 6), (6, 1, 3, 3), {"groups": 3, "stride": 2, "padding": 1}, "f32"),
    ("conv2d whole", "conv2d", (3, 1, 5, 5), (2, 1, 5, 5), {}, "f32"),
    ("conv2d 1x1", "conv2d", (2, 5, 4, 3), (7, 5, 1, 1), {}, "f32"),
    # Enough work that oneDNN's convolutions split the batch between threads (an odd batch: unequal parts).
    ("conv2d batch split", "conv2d", (5, 16, 12, 12), (24, 16, 3, 3), {"padding": 1}, "f32"),
    ("conv2d batch split groups", "conv2d", (5, 16, 12, 12), (32, 4, 3, 3), {"groups": 4, "padding": 1}, "f32"),
    ("conv2d f64", "conv2d", (2, 3, 7, 6), (4, 3, 3, 3), {"stride": 2, "padding": 1, "dilation": 2}, "f64"),
    ("conv1d", "conv1d", (2, 3, 9), (4, 3, 3), {"stride": 2, "padding": 1}, "f32"),
    ("conv1d groups dilation", "conv1d", (2, 4, 11), (4, 2, 2), {"groups": 2, "dilation": 3}, "f32"),
    ("conv1d same", "conv1d", (1, 2, 10), (3, 2, 4), {"padding": "same"}, "f64"),
    ("conv_transpose2d", "conv_transpose2d", (2, 4, 5, 5), (4, 3, 3, 3), {}, "f32"),
    ("conv_transpose2d stride", "conv_transpose2d", (2, 4, 5, 4), (4, 3, 3, 2), {"stride": 2}, "f32"),
    ("conv_transpose2d output_padding", "conv_transpose2d", (2, 4, 5, 4), (4, 2, 3, 2),
     {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, "f32"),
    ("conv_transpose2d dilation", "conv_transpose2d", (1, 2, 4, 4), (2, 3, 3, 3), {"dilation": 2, "padding": [0, 1]},
     "f64"),
    ("max_pool2d", "max_pool2d", (2, 3, 8, 8), None, {"kernel": 2}, "f32"),
    ("max_pool2d overlapping", "max_pool2d", (2, 2, 7, 9), None, {"kernel": 3, "stride": 2, "padding": 1}, "f32"),
    ("max_pool2d ties", "max_pool2d", (1, 2, 6, 6), None, {"kernel": [2, 3], "stride": [2, 1]}, "ties"),
    ("max_pool2d 2x2 ties", "max_pool2d", (2, 3, 8, 9), None, {"kernel": 2}, "ties"),
    ("max_pool2d rows left out", "max_pool2d", (2, 1, 7, 5), None, {"kernel": 2}, "f64"),
    ("avg_pool2d", "avg_pool2d", (2, 3, 8, 8), None, {"kernel": 2}, "f32"),
    ("avg_pool2d padded", "avg_pool2d", (2, 2, 7, 9), None, {"kernel": [3, 2], "stride": 2, "padding": 1}, "f64"),
]

# Second derivatives through max pooling: g = grad(sum(max_pool2d(x) ** 2), x), then grad(sum(g * V), x), whose
# path runs through max_pool_grad's gradient in its second operand (a gather at the first maxima).
# (name, x shape, keyword arguments, dtype)
DOUBLE_BACKWARD = [
    ("max_pool2d double backward", (2, 3, 8, 7), {"kernel": 2}, "f32"),
    ("max_pool2d double backward overlapping", (2, 2, 7, 9), {"kernel": 3, "stride": 2, "padding": 1}, "f64"),
    ("max_pool2d double backward ties", (1, 2, 6, 6), {"kernel": [2, 3], "stride": [2, 1]}, "ties"),
]

TORCH_NAMES = {"kernel": "kernel_size"}


def script_value(value):
    if isinstance(value, str):
        return '"%s"' % value
    if isinstance(value, list):
        return "[%s]" % ", ".join(map(str, value))
    return str(value)


def torch_reference(builtin, x, w, weights, kwargs):
    function = {"conv1d": F.conv1d, "conv2d": F.conv2d, "conv_transpose2d": F.conv_transpose2d,
                "max_pool2d": F.max_pool2d, "avg_pool2d": F.avg_pool2d}[builtin]
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True) if w is not None else None
    keywords = {TORCH_NAMES.get(key, key): value for key, value in kwargs.items()}
    y = function(tx, tw, **keywords) if tw is not None else function(tx, **keywords)
    (y * torch.tensor(weights)).sum().backward()
    return y.detach().numpy(), tx.grad.numpy(), tw.grad.numpy() if tw is not None else None


def run_tgc(tgc, device, text, inputs, outputs):
    """Runs `text` with the named arrays as inputs; the outputs' arrays, or an error message."""
    with tempfile.TemporaryDirectory() as folder:
        path = lambda file: os.path.join(folder, file)  # noqa: E731
        with open(path("case.tg"), "w") as f:
            f.write(text)
        command = [tgc, "run", path("case.tg"), "--device", device]
        for input_name, value in inputs:
            np.save(path(input_name + ".npy"), value)
            command += ["--in", "%s=%s" % (input_name, path(input_name + ".npy"))]
        for output in outputs:
            command += ["--out", "%s=%s" % (output, path(output + ".npy"))]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            return "tgc failed:\n" + text + result.stderr
        return [np.load(path(output + ".npy")) for output in outputs]


def compare(outputs, got, want, dtype, text, verbose):
    tolerance = 1e-4 if dtype == "f32" else 1e-10
    for output, g, e in zip(outputs, got, want):
        if g.shape != e.shape or g.dtype != e.dtype:
            return "%s: got %s %s, PyTorch %s %s" % (output, g.dtype, g.shape, e.dtype, e.shape)
        scale = max(1.0, float(np.abs(e).max()))
        error = float(np.abs(g.astype(np.float64) - e).max())
        if error > tolerance * scale:
            return "%s: differs by %.3g (allowed %.3g)\n%s" % (output, error, tolerance * scale, text)
        if verbose:
            print("  %-3s max |tgc - PyTorch| = %.3g" % (output, error))
    return None


def run_double_backward(tgc, device, case, verbose):
    name, x_shape, kwargs, dtype = case
    ties = dtype == "ties"
    dtype = "f32" if ties else dtype
    npdtype = np.float32 if dtype == "f32" else np.float64
    x = (RS.randint(0, 3, x_shape) if ties else RS.uniform(-1, 1, x_shape)).astype(npdtype)
    v = RS.uniform(-1, 1, x_shape).astype(npdtype)
    tx = torch.tensor(x, requires_grad=True)
    keywords = {TORCH_NAMES.get(key, key): value for key, value in kwargs.items()}
    (tg,) = torch.autograd.grad((F.max_pool2d(tx, **keywords) ** 2).sum(), tx, create_graph=True)
    (th,) = torch.autograd.grad((tg * torch.tensor(v)).sum(), tx)
    arguments = "".join(", %s=%s" % (key, script_value(value)) for key, value in kwargs.items())
    shape = ", ".join(map(str, x_shape[1:]))
    text = ("input x : %s[n, %s]\ninput V : %s[n, %s]\n" % (dtype, shape, dtype, shape) +
            "let g = grad(sum(max_pool2d(x%s) ** 2), x)\nlet h = grad(sum(g * V), x)\noutput g, h\n" % arguments)
    got = run_tgc(tgc, device, text, [("x", x), ("V", v)], ["g", "h"])
    if isinstance(got, str):
        return got
    return compare(["g", "h"], got, [tg.detach().numpy(), th.numpy()], dtype, text, verbose)


def run_case(tgc, device, case, verbose):
    name, builtin, x_shape, w_shape, kwargs, dtype = case
    ties = dtype == "ties"  # small integers in f32: windows with several maxima
    dtype = "f32" if ties else dtype
    npdtype = np.float32 if dtype == "f32" else np.float64
    x = (RS.randint(0, 3, x_shape) if ties else RS.uniform(-1, 1, x_shape)).astype(npdtype)
    w = RS.uniform(-1, 1, w_shape).astype(npdtype) if w_shape else None
    want_y = torch_reference(builtin, x, w, np.zeros(1, npdtype), kwargs)[0]
    weights = RS.uniform(-1, 1, want_y.shape).astype(npdtype)
    want = torch_reference(builtin, x, w, weights, kwargs)
    arguments = "".join(", %s=%s" % (key, script_value(value)) for key, value in kwargs.items())
    outputs = ("y", "gx", "gw") if w is not None else ("y", "gx")
    text = "input x : %s[n, %s]\n" % (dtype, ", ".join(map(str, x_shape[1:])))
    if w is not None:
        text += "input w : %s[%s]\n" % (dtype, ", ".join(map(str, w_shape)))
    text += "input W : %s[n, %s]\n" % (dtype, ", ".join(map(str, want_y.shape[1:])))
    if w is not None:
        text += "let y = %s(x, w%s)\nlet gx, gw = grad(sum(y * W), x, w)\n" % (builtin, arguments)
    else:
        text += "let y = %s(x%s)\nlet gx = grad(sum(y * W), x)\n" % (builtin, arguments)
    text += "output %s\n" % ", ".join(outputs)
    inputs = [("x", x), ("W", weights)] + ([("w", w)] if w is not None else [])
    got = run_tgc(tgc, device, text, inputs, outputs)
    if isinstance(got, str):
        return got
    return compare(outputs, got, want, dtype, text, verbose)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tgc", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("-k", default="")
    parser.add_argument("-v", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message=".*padding='same'.*")  # PyTorch's note on even kernels' copies
    passed = failed = 0
    for case in CASES + DOUBLE_BACKWARD:
        if args.k not in case[0]:
            continue
        run = run_case if case in CASES else run_double_backward
        problem = run(args.tgc, args.device, case, args.v)
        if problem:
            failed += 1
            print("FAIL %s (%s): %s" % (case[0], args.device, problem))
        else:
            passed += 1
            if args.v:
                print("ok %s" % case[0])
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
