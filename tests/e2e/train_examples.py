#!/usr/bin/python3
"""The training examples learn: their loss falls at every report, and the MLP classifies the spirals.

  /usr/bin/python3 tests/e2e/train_examples.py --tgc build/tgc
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "examples", "data")

RUNS = [
    ("logreg.tg", ["X=logreg_X.npy", "y=logreg_y.npy"], 200, 40, {"loss": 0.25}),
    ("mlp.tg", ["X=spiral_X.npy", "labels=spiral_y.npy"], 600, 100, {"loss": 0.2}),
    ("embedding.tg", [], 300, 50, {"loss": 0.05}),
    # 32 Fashion-MNIST images (the full sets: examples/python/train_cnn.py): the CNN fits them.
    ("cnn.tg", ["x=fashion32_x.npy", "labels=fashion32_y.npy"], 60, 10, {"loss": 0.01}),
    # 64 windows of the GPL (the whole text: examples/python/char_rnn.py): the LSTM starts to learn them.
    ("char_rnn.tg", ["seq=gpl64_windows.npy", "prompt=gpl_prompt.npy"], 40, 10, {"loss": 2.8}),
]


def train(tgc, example, inputs, steps, every):
    args = [tgc, "run", os.path.join(ROOT, "examples", example), "--steps", str(steps), "--print-every", str(every)]
    for assignment in inputs:
        name, file = assignment.split("=")
        args += ["--in", "%s=%s" % (name, os.path.join(DATA, file))]
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError("tgc failed: %s\n%s" % (" ".join(args), result.stderr))
    reports = {}
    for name, value in re.findall(r"^step \d+: (\w+) = (\S+)$", result.stdout, re.M):
        if not value.startswith("["):  # the scalar outputs (char_rnn.tg also prints its sample)
            reports.setdefault(name, []).append(float(value))
    return reports


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", required=True)
    args = parser.parse_args()
    passed = failed = 0
    for example, inputs, steps, every, ceilings in RUNS:
        reports = train(os.path.abspath(args.tgc), example, inputs, steps, every)
        losses = reports.get("loss", [])
        checks = [("%d loss reports" % (steps // every), len(losses) == steps // every),
                  ("the loss falls at every report", all(b < a for a, b in zip(losses, losses[1:])))]
        for name, ceiling in ceilings.items():
            checks.append(("final %s %.4f < %g" % (name, reports[name][-1], ceiling), reports[name][-1] < ceiling))
        if "accuracy" in reports:
            checks.append(("final accuracy %.3f >= 0.9" % reports["accuracy"][-1], reports["accuracy"][-1] >= 0.9))
        for name, ok in checks:
            print("%s %s: %s" % ("ok  " if ok else "FAIL", example, name))
            passed += ok
            failed += not ok
        if failed:
            print("  losses: %s" % losses)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
