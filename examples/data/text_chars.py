#!/usr/bin/python3
"""Turns a text file into the .npy files examples/char_rnn.tg reads: windows.npy, i64[windows, 65], the text's
characters as indices into the vocabulary, 65 in a row (the model reads 64 and predicts each next one), a
window every 16 characters; prompt.npy, i64, the first characters of the text, which the model continues; and
vocab.txt, the distinct characters in the order of their indices (at most 96: the text's own, in code point
order). With `decode FILE.npy`, prints the characters of an index array (a sample the script wrote with --out).

  python3 examples/data/text_chars.py OUT_FOLDER [--text /usr/share/common-licenses/GPL-3]
  python3 examples/data/text_chars.py OUT_FOLDER decode OUT_FOLDER/sample.npy
"""
import argparse
import os
import sys

import numpy as np

WINDOW, STRIDE, PROMPT, VOCAB = 65, 16, 32, 96


def encode(text):
    vocab = sorted(set(text))
    if len(vocab) > VOCAB:
        raise SystemExit("the text has %d distinct characters; char_rnn.tg takes at most %d" % (len(vocab), VOCAB))
    index = {c: i for i, c in enumerate(vocab)}
    return vocab, np.array([index[c] for c in text], np.int64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("command", nargs="?", choices=["decode"])
    parser.add_argument("file", nargs="?")
    parser.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    args = parser.parse_args()
    if args.command == "decode":
        with open(os.path.join(args.out, "vocab.txt"), encoding="utf-8") as f:
            vocab = f.read()
        print("".join(vocab[i] for i in np.load(args.file).reshape(-1)))
        return
    with open(args.text, encoding="utf-8") as f:
        text = f.read()
    vocab, codes = encode(text)
    starts = range(0, len(codes) - WINDOW + 1, STRIDE)
    windows = np.stack([codes[s:s + WINDOW] for s in starts])
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "windows.npy"), windows)
    np.save(os.path.join(args.out, "prompt.npy"), codes[:PROMPT])
    with open(os.path.join(args.out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(vocab))
    print("%s: %d characters, %d distinct; %d windows of %d" % (args.text, len(codes), len(vocab), len(windows),
                                                              WINDOW), file=sys.stderr)


if __name__ == "__main__":
    main()
