#!/usr/bin/python3
"""Converts Fashion-MNIST, as Debian's dataset-fashion-mnist installs it (idx files, gzipped, under
/usr/share/datasets/fashion-mnist), into the .npy files examples/cnn.tg reads: train_x.npy f32[60000, 1, 28, 28]
and test_x.npy f32[10000, 1, 28, 28] (pixels scaled to [0, 1], then standardized by the training set's mean
0.2860 and deviation 0.3530), train_y.npy and test_y.npy i64 labels 0-9.

  python3 examples/data/fashion_mnist.py OUT_FOLDER [--source /usr/share/datasets/fashion-mnist]
"""
import argparse
import gzip
import os
import struct

import numpy as np

MEAN, DEVIATION = 0.2860, 0.3530


def read_idx(path):
    """An idx file (gzipped): a magic number giving the element type (0x08: unsigned bytes) and the rank, the
    sizes as big-endian 32-bit integers, then the elements in C order."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    zero, kind, rank = struct.unpack(">HBB", data[:4])
    if zero != 0 or kind != 0x08:
        raise SystemExit("%s: not an idx file of unsigned bytes" % path)
    shape = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    values = np.frombuffer(data, np.uint8, offset=4 + 4 * rank)
    if values.size != int(np.prod(shape)):
        raise SystemExit("%s: %d elements for a shape %s" % (path, values.size, shape))
    return values.reshape(shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--source", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for part, prefix in (("train", "train"), ("test", "t10k")):
        images = read_idx(os.path.join(args.source, prefix + "-images-idx3-ubyte.gz"))
        labels = read_idx(os.path.join(args.source, prefix + "-labels-idx1-ubyte.gz"))
        x = ((images.astype(np.float32) / 255 - MEAN) / DEVIATION).astype(np.float32)[:, None]
        np.save(os.path.join(args.out, part + "_x.npy"), x)
        np.save(os.path.join(args.out, part + "_y.npy"), labels.astype(np.int64))
        print("%s: %d images %s, labels %s" % (part, len(x), x.shape[1:], np.bincount(labels).tolist()))


if __name__ == "__main__":
    main()
