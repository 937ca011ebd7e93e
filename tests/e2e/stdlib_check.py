#!/usr/bin/env python3
"""End-to-end test of the standard library (stdlib/nn.tg, stdlib/math.tg) and of the builtins the front end
composes of other ops (var, std): every function against NumPy, and the gradient of each differentiable one
against central finite differences of the NumPy reference, in f64.

For a function f of inputs x1..xk, the script computes f, and grad(sum(f * W), xi) for each input xi that has a
gradient (W a fixed random array of f's shape, so that every output element weighs in). The gradient must match
the central difference of sum(ref(...) * W) with step 1e-6 to a relative error (by norm) below 1e-6.

Usage: stdlib_check.py --tgc build/tgc [-k SUBSTRING] [-v]
The last line printed is `N passed, M failed`; the exit status is non-zero on any failure.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_compare import inc_subtensor, set_subtensor  # noqa: E402

RS = np.random.RandomState(1234)


def uniform(lo, hi, shape):
    return RS.uniform(lo, hi, shape).astype(np.float64)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def layer_norm(x, gamma, beta, eps):
    c = x - x.mean(axis=-1, keepdims=True)
    return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + eps) * gamma + beta


def standardize(x, axis, eps):
    c = x - x.mean(axis=axis, keepdims=True)
    return c / np.sqrt((c * c).mean(axis=axis, keepdims=True) + eps)


def conv2d(x, w, stride=1, padding=0, dilation=1, groups=1):
    """PyTorch's conv2d (NCHW, OIHW, a cross-correlation), by its definition."""
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = (h - dilation * (kh - 1) - 1) // stride + 1, (wd - dilation * (kw - 1) - 1) // stride + 1
    y = np.zeros((n, o, oh, ow))
    for f in range(o):
        g = f // (o // groups)
        for i in range(kh):
            for j in range(kw):
                window = x[:, g * cg:(g + 1) * cg, i * dilation:i * dilation + stride * (oh - 1) + 1:stride,
                           j * dilation:j * dilation + stride * (ow - 1) + 1:stride]
                y[:, f] += np.einsum("nchw,c->nhw", window, w[f, :, i, j])
    return y


def conv_transpose2d(y, w, stride, output_padding):
    """PyTorch's conv_transpose2d (no padding, one group): each input element adds its filter, scaled."""
    n, o, h, wd = y.shape
    _, c, kh, kw = w.shape
    x = np.zeros((n, c, (h - 1) * stride + kh + output_padding, (wd - 1) * stride + kw + output_padding))
    for i in range(h):
        for j in range(wd):
            x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw] += np.einsum("no,ocij->ncij", y[:, :, i, j], w)
    return x


def logsumexp(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return np.log(np.exp(x - m).sum(axis=axis)) + m.squeeze(axis)


LABELS = np.array([0, 2, 1, 2, 0], dtype=np.int64)
PROBS = uniform(0.05, 0.95, (4, 3))

# (name, module, expression, inputs, reference, inputs with a gradient, tolerance of the value)
CASES = [
    ("sigmoid", "nn", "nn.sigmoid(x)", {"x": uniform(-6, 6, (4, 5))}, lambda x: 1 / (1 + np.exp(-x)), ["x"]),
    ("relu", "nn", "nn.relu(x)", {"x": uniform(-3, 3, (4, 5))}, lambda x: np.maximum(x, 0), ["x"]),
    ("softplus", "nn", "nn.softplus(x)", {"x": uniform(-30, 30, (4, 5))}, lambda x: np.logaddexp(x, 0), ["x"]),
    ("gelu", "nn", "nn.gelu(x)", {"x": uniform(-4, 4, (4, 5))}, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
     ["x"]),
    ("softmax", "nn", "nn.softmax(x, 1)", {"x": uniform(-5, 5, (3, 6))}, lambda x: softmax(x, 1), ["x"]),
    ("softmax of large values", "nn", "nn.softmax(x, 1)", {"x": uniform(900, 1000, (3, 6))},
     lambda x: softmax(x, 1), ["x"]),
    ("log_softmax", "nn", "nn.log_softmax(x, 0)", {"x": uniform(-5, 5, (4, 3))}, lambda x: log_softmax(x, 0),
     ["x"]),
    ("cross_entropy", "nn", "nn.cross_entropy(logits, labels, 3)",
     {"logits": uniform(-3, 3, (5, 3)), "labels": LABELS},
     lambda logits, labels: -np.mean(log_softmax(logits, 1)[np.arange(5), labels]), ["logits"]),
    ("binary_cross_entropy", "nn", "nn.binary_cross_entropy(p, y)",
     {"p": PROBS, "y": (uniform(0, 1, (4, 3)) > 0.5).astype(np.float64)},
     lambda p, y: -(y * np.log(p) + (1 - y) * np.log(1 - p)), ["p"]),
    ("mse", "nn", "nn.mse(a, b)", {"a": uniform(-2, 2, (3, 4)), "b": uniform(-2, 2, (3, 4))},
     lambda a, b: np.mean((a - b) ** 2), ["a", "b"]),
    ("linear", "nn", "nn.linear(x, w, b)",
     {"x": uniform(-1, 1, (4, 3)), "w": uniform(-1, 1, (3, 2)), "b": uniform(-1, 1, (2,))},
     lambda x, w, b: x @ w + b, ["x", "w", "b"]),
    ("layer_norm", "nn", "nn.layer_norm(x, gamma, beta, 1e-5)",
     {"x": uniform(-2, 2, (3, 5)), "gamma": uniform(0.5, 1.5, (5,)), "beta": uniform(-1, 1, (5,))},
     lambda x, gamma, beta: layer_norm(x, gamma, beta, 1e-5), ["x", "gamma", "beta"]),
    ("logsumexp", "math", "math.logsumexp(x, 1)", {"x": uniform(-5, 5, (3, 6))}, lambda x: logsumexp(x, 1),
     ["x"]),
    ("logsumexp of large values", "math", "math.logsumexp(x, 0)", {"x": uniform(700, 1000, (6, 2))},
     lambda x: logsumexp(x, 0), ["x"]),
    ("l1_norm", "math", "math.l1_norm(x, 1)", {"x": uniform(0.1, 2, (3, 4)) * np.sign(uniform(-1, 1, (3, 4)))},
     lambda x: np.abs(x).sum(axis=1), ["x"]),
    ("l2_norm", "math", "math.l2_norm(x, 0)", {"x": uniform(-2, 2, (3, 4))},
     lambda x: np.sqrt((x * x).sum(axis=0)), ["x"]),
    ("inf_norm", "math", "math.inf_norm(x, 1)", {"x": np.array([[1.0, -3.0, 2.0], [0.5, 0.25, -0.75]])},
     lambda x: np.abs(x).max(axis=1), ["x"]),
    ("cosine_similarity", "math", "math.cosine_similarity(a, b, 1, 1e-8)",
     {"a": uniform(-1, 1, (3, 4)), "b": uniform(-1, 1, (3, 4))},
     lambda a, b: (a * b).sum(1) / np.maximum(np.sqrt((a * a).sum(1)) * np.sqrt((b * b).sum(1)), 1e-8),
     ["a", "b"]),
    ("standardize", "math", "math.standardize(x, 1, 1e-12)", {"x": uniform(-3, 3, (3, 5))},
     lambda x: standardize(x, 1, 1e-12), ["x"]),
    # Builtins the front end composes of other ops (no module): their gradients come from that composition.
    ("var", None, "var(x, axis=1)", {"x": uniform(-3, 3, (3, 5))}, lambda x: np.var(x, axis=1), ["x"]),
    ("newaxis and ellipsis", None, "x[None, ..., 1:] * y[:, None]",
     {"x": uniform(-3, 3, (4, 3)), "y": uniform(-1, 1, (4,))}, lambda x, y: x[None, ..., 1:] * y[:, None],
     ["x", "y"]),
    ("expand_dims", None, "expand_dims(x, [0, 2]) * 2.0", {"x": uniform(-3, 3, (4, 3))},
     lambda x: np.expand_dims(x, (0, 2)) * 2.0, ["x"]),
    ("std with ddof", None, "std(x, axis=0, ddof=1, keepdims=true)", {"x": uniform(-3, 3, (4, 3))},
     lambda x: np.std(x, axis=0, ddof=1, keepdims=True), ["x"]),
    # Integer-array indexing: a gather, whose gradient scatter-adds (repeated rows accumulate).
    ("gather", None, "E[idx] * E[idx]", {"E": uniform(-1, 1, (5, 3)), "idx": np.array([[0, 4], [4, -1], [2, 0]])},
     lambda E, idx: E[idx] * E[idx], ["E"]),
    ("gather by label", None, "log(P[arange(4), labels])",
     {"P": uniform(0.5, 1, (4, 3)), "labels": np.array([2, 0, 0, 1])},
     lambda P, labels: np.log(P[np.arange(4), labels]), ["P"]),
    ("gather separated", None, "T[[0, 1], 1:, [2, 2]]", {"T": uniform(-1, 1, (2, 3, 4))},
     lambda T: T[[0, 1], 1:, [2, 2]], ["T"]),
    ("strided slices", None, "x[1:, ::2] * x[::-2, 1::3]", {"x": uniform(-1, 1, (3, 4))},
     lambda x: x[1:, ::2] * x[::-2, 1::3], ["x"]),
    ("pad", None, "pad(x, [[1, 0], [2, 1]], value=0.5) ** 2.0", {"x": uniform(-1, 1, (2, 3))},
     lambda x: np.pad(x, ((1, 0), (2, 1)), constant_values=0.5) ** 2.0, ["x"]),
    # Convolution: the input's gradient is a transposed convolution, the filters' a conv_filter_grad.
    ("conv2d", None, "conv2d(x, w, stride=2, padding=1, dilation=2, groups=2)",
     {"x": uniform(-1, 1, (2, 4, 7, 6)), "w": uniform(-1, 1, (4, 2, 2, 3))},
     lambda x, w: conv2d(x, w, 2, 1, 2, 2), ["x", "w"]),
    ("conv_transpose2d", None, "conv_transpose2d(y, w, stride=2, output_padding=1) ** 2.0",
     {"y": uniform(-1, 1, (1, 2, 3, 3)), "w": uniform(-1, 1, (2, 3, 2, 2))},
     lambda y, w: conv_transpose2d(y, w, 2, 1) ** 2.0, ["y", "w"]),
    ("take", None, "take(x, [2, 0, 2], axis=1) * 2.0", {"x": uniform(-1, 1, (2, 3))},
     lambda x: np.take(x, [2, 0, 2], axis=1) * 2.0, ["x"]),
    ("take_along_axis", None, "take_along_axis(x, i, 1) ** 2.0",
     {"x": uniform(-1, 1, (3, 4)), "i": np.array([[3, 3], [0, 1], [2, 3]])},
     lambda x, i: np.take_along_axis(x, i, 1) ** 2.0, ["x"]),
    ("take_along_axis broadcast", None, "take_along_axis(x, i, 0)",
     {"x": uniform(-1, 1, (1, 4)), "i": np.array([[0], [0], [0]])},
     lambda x, i: np.take_along_axis(np.broadcast_to(x, (1, 4)), i, 0) * np.ones((3, 4)), ["x"]),
    ("inc_subtensor", None, "inc_subtensor(x[[0, 2, 0]], v) ** 2.0",
     {"x": uniform(-1, 1, (3, 2)), "v": uniform(-1, 1, (3, 2))},
     lambda x, v: inc_subtensor(x, [0, 2, 0], v) ** 2.0, ["x", "v"]),
    ("inc_subtensor broadcast", None, "inc_subtensor(x[[0, 2, 0]], v) ** 2.0",
     {"x": uniform(-1, 1, (3, 2)), "v": uniform(-1, 1, (2,))},
     lambda x, v: inc_subtensor(x, [0, 2, 0], v) ** 2.0, ["x", "v"]),
    ("inc_subtensor slice", None, "inc_subtensor(x[1:, ::2], v) ** 2.0",
     {"x": uniform(-1, 1, (3, 4)), "v": uniform(-1, 1, (2,))},
     lambda x, v: inc_subtensor(x, (slice(1, None), slice(None, None, 2)), v) ** 2.0, ["x", "v"]),
    ("set_subtensor", None, "set_subtensor(x[[2, 0], 1:], v) ** 2.0",
     {"x": uniform(-1, 1, (3, 3)), "v": uniform(-1, 1, (2, 2))},
     lambda x, v: set_subtensor(x, ([2, 0], slice(1, None)), v) ** 2.0, ["x", "v"]),
    ("set_subtensor separated", None, "set_subtensor(x[[0, 1], :, [2, 0]], v) * x",
     {"x": uniform(-1, 1, (2, 2, 3)), "v": uniform(-1, 1, (2,))},
     lambda x, v: set_subtensor(x, ([0, 1], slice(None), [2, 0]), v) * x, ["x", "v"]),
]


def tgc_type(array):
    dtype = {np.dtype(np.float64): "f64", np.dtype(np.int64): "i64"}[array.dtype]
    return dtype if array.ndim == 0 else "%s[%s]" % (dtype, ", ".join(str(d) for d in array.shape))


def run(tgc, folder, module, expr, inputs, wrt, weights, extra_outputs=()):
    """Runs a script computing expr (as `value`) and grad(sum(value * W), wrt...); returns the arrays by name."""
    lines = ["import %s" % module] if module else []
    for name, array in inputs.items():
        lines.append("input %s : %s" % (name, tgc_type(array)))
        np.save(os.path.join(folder, name + ".npy"), array)
    lines.append("let value = %s" % expr)
    outputs = ["value"]
    if wrt:
        np.save(os.path.join(folder, "W.npy"), weights)
        lines.append("input W : %s" % tgc_type(weights))
        names = ["g_" + name for name in wrt]
        lines.append("let %s = grad(sum(value * W), %s)" % (", ".join(names), ", ".join(wrt)))
        outputs += names
    lines.append("output " + ", ".join(outputs))
    script = os.path.join(folder, "case.tg")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    command = [tgc, "run", script]
    for name in list(inputs) + (["W"] if wrt else []):
        command += ["--in", "%s=%s" % (name, os.path.join(folder, name + ".npy"))]
    for name in outputs:
        command += ["--out", "%s=%s" % (name, os.path.join(folder, "out_" + name + ".npy"))]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError("tgc failed (%d):\n%s\n%s" % (result.returncode, "\n".join(lines), result.stderr))
    return {name: np.load(os.path.join(folder, "out_" + name + ".npy")) for name in outputs}


def finite_difference(ref, inputs, name, weights, step=1e-6):
    x = inputs[name]
    gradient = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        values = []
        for sign in (1, -1):
            moved = dict(inputs)
            moved[name] = x.copy()
            moved[name][index] += sign * step
            values.append(np.sum(ref(**moved) * weights))
        gradient[index] = (values[0] - values[1]) / (2 * step)
    return gradient


def check_case(tgc, folder, case):
    name, module, expr, inputs, ref, wrt = case
    want = np.asarray(ref(**inputs), dtype=np.float64)
    weights = uniform(-1, 1, want.shape)
    got = run(tgc, folder, module, expr, inputs, wrt, weights)
    problems = []
    if got["value"].shape != want.shape or not np.allclose(got["value"], want, rtol=1e-10, atol=1e-12):
        problems.append("value %s, NumPy %s" % (got["value"], want))
    for input_name in wrt:
        fd = finite_difference(ref, inputs, input_name, weights)
        g = got["g_" + input_name]
        error = np.linalg.norm(g - fd) / max(np.linalg.norm(fd), 1e-30)
        if not error < 1e-6:
            problems.append("gradient wrt %s: relative error %.2e\n  tgc %s\n  finite differences %s"
                            % (input_name, error, g, fd))
    return problems


def check_dropout(tgc, folder):
    """Dropout has no NumPy twin: each element is 0 or x / (1 - rate), about `rate` of them 0, the same mask for
    the same seed, and the gradient is the mask scaled."""
    x = uniform(0.5, 2, (40, 50))
    inputs = {"x": x}
    weights = uniform(-1, 1, x.shape)
    got = run(tgc, folder, "nn", "nn.dropout(x, 0.3, [40, 50], 11)", inputs, ["x"], weights)
    again = run(tgc, folder, "nn", "nn.dropout(x, 0.3, [40, 50], 11)", inputs, [], weights)
    value, kept = got["value"], got["value"] != 0
    problems = []
    if not np.allclose(value[kept], x[kept] / 0.7, rtol=1e-12):
        problems.append("kept elements are not x / (1 - rate)")
    if not 0.25 < 1 - kept.mean() < 0.35:
        problems.append("%.3f of the elements dropped, expected about 0.3" % (1 - kept.mean()))
    if not np.array_equal(value, again["value"]):
        problems.append("the same seed gave another mask")
    if not np.allclose(got["g_x"], kept * weights / 0.7, rtol=1e-12):
        problems.append("the gradient is not the scaled mask")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", required=True)
    parser.add_argument("-k", dest="filter", help="only the cases whose name contains this text")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    passed = failed = 0
    checks = [(case[0], lambda folder, case=case: check_case(args.tgc, folder, case)) for case in CASES]
    checks.append(("dropout", lambda folder: check_dropout(args.tgc, folder)))
    for name, check in checks:
        if args.filter and args.filter not in name:
            continue
        with tempfile.TemporaryDirectory() as folder:
            try:
                problems = check(folder)
            except RuntimeError as error:
                problems = [str(error)]
        if problems:
            failed += 1
            print("FAIL %s\n  %s" % (name, "\n  ".join(problems)))
        else:
            passed += 1
            if args.verbose:
                print("ok   %s" % name)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
