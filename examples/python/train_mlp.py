#!/usr/bin/python3
"""Trains examples/mlp.tg (a two-layer perceptron on three spiral arms) from Python and prints its loss and
accuracy as it learns.

  build/tgc-python examples/python/train_mlp.py [--steps 2000] [--device auto]
"""
import argparse
import os

import numpy as np

import tgc

EXAMPLES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--device", default="auto", help="auto, cpu, sim or cuda")
    args = parser.parse_args()

    program = tgc.compile(os.path.join(EXAMPLES, "mlp.tg"), device=args.device)
    X = np.load(os.path.join(EXAMPLES, "data", "spiral_X.npy"))
    labels = np.load(os.path.join(EXAMPLES, "data", "spiral_y.npy"))
    print("training %s on %s: %d points, params %s" % (
        "mlp.tg", program.device, len(X), ", ".join("%s%s" % (name, list(spec.shape))
                                                  for name, spec in program.params.specs.items())))
    for step in range(1, args.steps + 1):
        out = program.step(X=X, labels=labels)  # runs, then applies the updates
        if step % (args.steps // 4 or 1) == 0:
            print("step %d: loss %.4f, accuracy %.3f" % (step, out["loss"], out["accuracy"]))
    final = program(X=X, labels=labels)  # the trained params, no update
    print("final: loss %.4f, accuracy %.3f" % (final["loss"], final["accuracy"]))


if __name__ == "__main__":
    main()
