#!/usr/bin/python3
"""Trains examples/char_rnn.tg, a character-level LSTM language model, on a text every Debian machine has (the
GPL, /usr/share/common-licenses/GPL-3) from Python: a shuffled mini-batch of windows per step; prints the mean
loss of each epoch (nats per character), then the model's continuation of the text's first characters. Reads
the files examples/data/text_chars.py writes (it is run first when they are missing).

  build/tgc-python examples/python/char_rnn.py [--epochs 8] [--batch 32] [--device auto]
      [--data /tmp/text] [--text /usr/share/common-licenses/GPL-3]
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
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--device", default="auto", help="auto, cpu, sim or cuda")
    parser.add_argument("--data", default="/tmp/text")
    parser.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.data, "vocab.txt")):
        subprocess.run([sys.executable, os.path.join(EXAMPLES, "data", "text_chars.py"), args.data, "--text",
                        args.text], check=True)
    windows = np.load(os.path.join(args.data, "windows.npy"))
    prompt = np.load(os.path.join(args.data, "prompt.npy"))
    with open(os.path.join(args.data, "vocab.txt"), encoding="utf-8") as f:
        vocab = f.read()

    program = tgc.compile(os.path.join(EXAMPLES, "char_rnn.tg"), device=args.device)
    print("training char_rnn.tg on %s: %d windows of %d characters, batches of %d"
          % (program.device, len(windows), windows.shape[1], args.batch))
    rng = np.random.default_rng(args.seed)
    out = None
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        order = rng.permutation(len(windows))
        losses = []
        for first in range(0, len(order), args.batch):
            out = program.step(seq=windows[order[first:first + args.batch]], prompt=prompt)
            losses.append(float(out["loss"]))
        print("epoch %d: %.1f s, mean loss %.3f nats per character"
              % (epoch, time.perf_counter() - start, np.mean(losses)))
    sample = program(seq=windows[:1], prompt=prompt)["sample"]
    print("prompt:       %r" % "".join(vocab[i] for i in prompt))
    print("continuation: %r" % "".join(vocab[i] for i in np.asarray(sample).reshape(-1)))


if __name__ == "__main__":
    main()
