#!/usr/bin/python3
"""Trains examples/cnn.tg on Fashion-MNIST from Python, a shuffled mini-batch per step, and prints the test set's
accuracy after each epoch. Reads the .npy files examples/data/fashion_mnist.py writes (it is run first when
they are missing).

  build/tgc-python examples/python/train_cnn.py [--epochs 2] [--batch 64] [--device auto]
      [--data /tmp/fashion]
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

import tgc

EXAMPLES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--device", default="auto", help="auto, cpu, sim or cuda")
    parser.add_argument("--data", default="/tmp/fashion")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.data, "test_y.npy")):
        subprocess.run([sys.executable, os.path.join(EXAMPLES, "data", "fashion_mnist.py"), args.data], check=True)
    data = {name: np.load(os.path.join(args.data, name + ".npy"))
            for name in ("train_x", "train_y", "test_x", "test_y")}

    program = tgc.compile(os.path.join(EXAMPLES, "cnn.tg"), device=args.device)
    print("training cnn.tg on %s: %d images, batches of %d" % (program.device, len(data["train_x"]), args.batch))
    rng = np.random.default_rng(args.seed)
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        order = rng.permutation(len(data["train_x"]))
        losses = []
        for first in range(0, len(order), args.batch):
            rows = order[first:first + args.batch]
            losses.append(float(program.step(x=data["train_x"][rows], labels=data["train_y"][rows])["loss"]))
        seconds = time.perf_counter() - start
        # The test set in batches of 1,000, with the trained params and no update.
        correct = 0.0
        for first in range(0, len(data["test_x"]), 1000):
            out = program(x=data["test_x"][first:first + 1000], labels=data["test_y"][first:first + 1000])
            correct += float(out["accuracy"]) * len(data["test_x"][first:first + 1000])
        print("epoch %d: %.1f s, mean training loss %.4f, test accuracy %.4f"
              % (epoch, seconds, np.mean(losses), correct / len(data["test_x"])))


if __name__ == "__main__":
    main()
