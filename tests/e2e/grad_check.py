#!/usr/bin/python3
"""Gradient check of the training examples: tgc's symbolic gradients against central finite differences.

Each example is turned into an f64 script whose params become inputs (so the test can set and perturb them)
and whose gradients become outputs. tgc computes the gradients once; the finite differences
(loss(p + h) - loss(p - h)) / 2h are computed by running the same script's loss at perturbed params, one
element at a time. The check is norm-wise, per param: |g - fd| / max(|g|, |fd|) < 1e-6 (in f64, with h = 1e-6
the truncation error is ~1e-12 and the rounding error ~1e-10 relative to the loss).

  /usr/bin/python3 tests/e2e/grad_check.py --tgc build/tgc
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "examples", "data")
TOLERANCE = 1e-6
STEP = 1e-6

# example -> (data inputs, {param: gradient name}, elements checked per param (None: all))
EXAMPLES = {
    "logreg.tg": ({"X": "logreg_X.npy", "y": "logreg_y.npy"}, {"w": "gw", "b": "gb"}, None),
    "mlp.tg": ({"X": "spiral_X.npy", "labels": "spiral_y.npy"},
               {"W1": "gW1", "b1": "gb1", "W2": "gW2", "b2": "gb2"}, 6),
}


def f64_script(source, params):
    """The example in f64, with its params as inputs and without its updates."""
    lines = []
    for line in source.splitlines():
        match = re.match(r"\s*param\s+(\w+)\s*:\s*([^=]+)=", line)
        if match:
            lines.append("input %s : %s" % (match.group(1), match.group(2).strip()))
        elif not re.match(r"\s*(update|output)\b", line):
            lines.append(line)
    text = "\n".join(lines).replace("f32", "f64")
    return text + "\noutput loss, " + ", ".join(params.values()) + "\n"


class Runner:
    def __init__(self, tgc, folder, script, inputs):
        self.tgc, self.folder, self.script, self.inputs = tgc, folder, script, inputs

    def run(self, values, outputs):
        args = [self.tgc, "run", self.script]
        for name, value in values.items():
            path = os.path.join(self.folder, name + ".npy")
            np.save(path, value)
            args += ["--in", "%s=%s" % (name, path)]
        for name in outputs:
            args += ["--out", "%s=%s" % (name, os.path.join(self.folder, "out_" + name + ".npy"))]
        result = subprocess.run(args, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError("tgc failed: %s\n%s" % (" ".join(args), result.stderr))
        return {name: np.load(os.path.join(self.folder, "out_" + name + ".npy")) for name in outputs}


def param_values(source, params, rng):
    """Random f64 values for each param, of the declared shape."""
    values = {}
    for name in params:
        match = re.search(r"param\s+%s\s*:\s*\w+(\[([^\]]*)\])?" % name, source)
        shape = tuple(int(d) for d in match.group(2).split(",")) if match.group(2) else ()
        values[name] = rng.uniform(-0.5, 0.5, shape)
    return values


def check(tgc, example, folder):
    inputs, params, sample = EXAMPLES[example]
    source = open(os.path.join(ROOT, "examples", example)).read()
    script = os.path.join(folder, "check_" + example)
    with open(script, "w") as f:
        f.write(f64_script(source, params))
    rng = np.random.RandomState(0)
    values = {name: (np.load(os.path.join(DATA, file)).astype(np.float64) if name != "labels"
                     else np.load(os.path.join(DATA, file))) for name, file in inputs.items()}
    values.update(param_values(source, params, rng))
    runner = Runner(tgc, folder, script, inputs)
    gradients = runner.run(values, ["loss"] + list(params.values()))
    failures = 0
    for param, gradient_name in params.items():
        gradient = gradients[gradient_name].reshape(-1)
        flat = values[param].reshape(-1)
        indices = range(flat.size) if sample is None else rng.choice(flat.size, min(sample, flat.size), False)
        symbolic, numeric = [], []
        for i in indices:
            losses = []
            for sign in (1, -1):
                perturbed = flat.copy()
                perturbed[i] += sign * STEP
                losses.append(runner.run(dict(values, **{param: perturbed.reshape(values[param].shape)}),
                                         ["loss"])["loss"])
            symbolic.append(gradient[i])
            numeric.append((losses[0] - losses[1]) / (2 * STEP))
        symbolic, numeric = np.array(symbolic), np.array(numeric)
        error = np.linalg.norm(symbolic - numeric) / max(np.linalg.norm(symbolic), np.linalg.norm(numeric), 1e-12)
        ok = error < TOLERANCE
        failures += not ok
        print("%s %s d(loss)/d(%s): relative error %.2e over %d elements" %
              ("ok  " if ok else "FAIL", example, param, error, len(symbolic)))
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", required=True)
    args = parser.parse_args()
    failed = passed = 0
    with tempfile.TemporaryDirectory() as folder:
        for example in EXAMPLES:
            params = len(EXAMPLES[example][1])
            bad = check(os.path.abspath(args.tgc), example, folder)
            failed += bad
            passed += params - bad
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
