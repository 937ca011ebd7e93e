#!/usr/bin/python3
"""Regenerates the small data sets the examples ship with (deterministic: fixed seeds).

  /usr/bin/python3 examples/data/make_data.py
"""
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def save(name, array):
    np.save(os.path.join(here, name), array)


# points.npy: five 3-D points for matrix.tg and normalize.tg.
save("points.npy", np.array([[1, 0, 0], [0, 2, 0], [1, 1, 1], [0.5, -1, 2], [-1, 0.25, 0]], dtype=np.float32))

# logreg: 200 points in 4-D, labelled by a noisy linear rule.
rng = np.random.RandomState(0)
X = rng.randn(200, 4).astype(np.float32)
w_true = np.array([1.5, -2.0, 0.5, 1.0], dtype=np.float32)
y = (X @ w_true + 0.5 + 0.5 * rng.randn(200) > 0).astype(np.float32)
save("logreg_X.npy", X)
save("logreg_y.npy", y)

# spiral: three interleaved spiral arms in 2-D (100 points each), not linearly separable; labels are i64.
rng = np.random.RandomState(1)
points, labels = [], []
for arm in range(3):
    r = np.linspace(0.05, 1.0, 100)
    t = np.linspace(arm * 4.0, (arm + 1) * 4.0, 100) + 0.2 * rng.randn(100)
    points.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
    labels.append(np.full(100, arm))
save("spiral_X.npy", np.concatenate(points).astype(np.float32))
save("spiral_y.npy", np.concatenate(labels).astype(np.int64))

# fashion32: the first 32 images of Fashion-MNIST's test set and their labels, as examples/data/fashion_mnist.py
# converts them (Debian's dataset-fashion-mnist): a sample cnn.tg runs on in the tests. The full sets come from
# that script.
source = "/usr/share/datasets/fashion-mnist"
if os.path.isdir(source):
    import importlib.util
    spec = importlib.util.spec_from_file_location("fashion_mnist", os.path.join(here, "fashion_mnist.py"))
    fashion = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fashion)
    images = fashion.read_idx(os.path.join(source, "t10k-images-idx3-ubyte.gz"))[:32]
    labels = fashion.read_idx(os.path.join(source, "t10k-labels-idx1-ubyte.gz"))[:32]
    save("fashion32_x.npy", ((images.astype(np.float32) / 255 - fashion.MEAN) / fashion.DEVIATION)
         .astype(np.float32)[:, None])
    save("fashion32_y.npy", labels.astype(np.int64))
