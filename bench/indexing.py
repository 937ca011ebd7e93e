#!/usr/bin/python3
"""bench/indexing: an embedding lookup and its gradient, tgc against NumPy and PyTorch, side by side in one run.

The table E is f32[100000, 128], the indices 1,000,000 i64 uniform over its rows (so rows repeat).
  gather       tgc `E[idx]`, NumPy `E[idx]`, PyTorch `torch.index_select(E, 0, idx)`
  scatter-add  tgc `inc_subtensor(zeros_like(E)[idx], G)` (a gather's gradient), NumPy `np.add.at(Z, idx, G)` on
               a zeroed table, PyTorch `Z.zero_().index_add_(0, idx, G)`; G is f32[1000000, 128]
  gather-relu  a lookup feeding elementwise work: tgc `relu(E[idx])` (the gather fused into the relu's kernel as an
               indexed load), the same without fusion ("unfused"), NumPy `np.maximum(E[idx], 0)`, PyTorch
               `torch.relu(torch.index_select(E, 0, idx))`
  bag-mean     an embedding bag: 125,000 documents of 8 ids, each document's mean row: tgc `mean(E[docs], axis=1)`
               (the gather fused into the reduction), unfused, NumPy `E[docs].mean(axis=1)`, PyTorch
               `torch.nn.functional.embedding_bag(docs, E, mode="mean")`
  sgd-step     one step of plain SGD on the table: tgc `update E = E - 0.1 * grad(sum(E[idx] * G), E)` (a param;
               the optimizer turns it into a scatter into E), NumPy `np.add.at(E, idx, -0.1 * G)`, PyTorch
               `E.index_add_(0, idx, G, alpha=-0.1)`
Prints each one's best time of --repeat rounds (the rounds interleaved, so that a noisy neighbour slows all alike),
the bytes it must move at least (indices read, rows read or added, the result written), and tgc's speed-up over
each peer. tgc runs through its Python module, on the CPU, on all cores; PyTorch on as many threads.

    bash bench/indexing.sh                       # installs the peers if missing, builds, runs this
    build/tgc-python bench/indexing.py [--rows 100000] [--width 128] [--lookups 1000000]
"""
import argparse
import os
import time

import numpy as np

import tgc

GATHER = """input E : f32[v, d]
input idx : i64[n]
let rows = E[idx]
output rows
"""
SCATTER = """input E : f32[v, d]
input idx : i64[n]
input G : f32[n, d]
let table = inc_subtensor(zeros_like(E)[idx], G)
output table
"""
GATHER_RELU = """input E : f32[v, d]
input idx : i64[n]
let rows = relu(E[idx])
output rows
"""
BAG_MEAN = """input E : f32[v, d]
input docs : i64[n, w]
let bags = mean(E[docs], axis=1)
output bags
"""
SGD = """input idx : i64[n]
input G : f32[n, %d]
param E : f32[%d, %d] = zeros([%d, %d])
update E = E - 0.1 * grad(sum(E[idx] * G), E)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100000)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--lookups", type=int, default=1000000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    rng = np.random.default_rng(1)
    E = rng.standard_normal((args.rows, args.width), dtype=np.float32)
    idx = rng.integers(0, args.rows, args.lookups, dtype=np.int64)
    G = rng.standard_normal((args.lookups, args.width), dtype=np.float32)
    Z = np.zeros_like(E)

    docs = idx.reshape(-1, 8)
    gather = tgc.compile(GATHER, device="cpu")
    gather_relu = tgc.compile(GATHER_RELU, device="cpu")
    gather_relu_unfused = tgc.compile(GATHER_RELU, device="cpu", opt_exclude="fusion")
    bag_mean = tgc.compile(BAG_MEAN, device="cpu")
    bag_mean_unfused = tgc.compile(BAG_MEAN, device="cpu", opt_exclude="fusion")
    want_relu = np.maximum(want_rows := E[idx], 0)
    want_bags = E[docs].mean(axis=1)
    for program in (gather_relu, gather_relu_unfused):
        assert np.array_equal(program(E=E, idx=idx)["rows"], want_relu), "tgc's relu(E[idx]) differs from NumPy's"
    for program in (bag_mean, bag_mean_unfused):
        got_bags = program(E=E, docs=docs)["bags"]
        assert np.allclose(got_bags, want_bags, rtol=1e-5, atol=1e-6), "tgc's embedding bag differs from NumPy's"

    scatter = tgc.compile(SCATTER, device="cpu")
    want_table = np.zeros_like(E)
    np.add.at(want_table, idx, G)
    assert np.array_equal(gather(E=E, idx=idx)["rows"], want_rows), "tgc's gather differs from NumPy's"
    got = scatter(E=E, idx=idx, G=G)["table"]
    assert np.allclose(got, want_table, rtol=1e-5, atol=1e-4), "tgc's scatter-add differs from NumPy's"

    def numpy_scatter():
        Z.fill(0)
        np.add.at(Z, idx, G)

    sgd = tgc.compile(SGD % (args.width, args.rows, args.width, args.rows, args.width), device="cpu")
    sgd.params["E"] = E
    sgd.step(idx=idx, G=G)
    want_step = E.copy()
    np.add.at(want_step, idx, np.float32(-0.1) * G)
    assert np.allclose(sgd.params["E"], want_step, rtol=1e-4, atol=1e-4), "tgc's SGD step differs from NumPy's"
    E_numpy = E.copy()
    scaled = np.float32(-0.1) * G

    contenders = {
        "gather": {"tgc": lambda: gather(E=E, idx=idx), "NumPy": lambda: E[idx]},
        "scatter-add": {"tgc": lambda: scatter(E=E, idx=idx, G=G), "NumPy": numpy_scatter},
        "gather-relu": {"tgc": lambda: gather_relu(E=E, idx=idx), "unfused": lambda: gather_relu_unfused(E=E, idx=idx),
                        "NumPy": lambda: np.maximum(E[idx], 0)},
        "bag-mean": {"tgc": lambda: bag_mean(E=E, docs=docs), "unfused": lambda: bag_mean_unfused(E=E, docs=docs),
                     "NumPy": lambda: E[docs].mean(axis=1)},
        "sgd-step": {"tgc": lambda: sgd.step(idx=idx, G=G), "NumPy": lambda: np.add.at(E_numpy, idx, scaled)},
    }
    try:
        import torch
        torch.set_num_threads(os.cpu_count())
        tE, tidx, tG, tZ = (torch.from_numpy(a) for a in (E, idx, G, Z))
        assert torch.equal(torch.index_select(tE, 0, tidx), torch.from_numpy(want_rows))
        contenders["gather"]["PyTorch"] = lambda: torch.index_select(tE, 0, tidx)
        contenders["scatter-add"]["PyTorch"] = lambda: tZ.zero_().index_add_(0, tidx, tG)
        contenders["gather-relu"]["PyTorch"] = lambda: torch.relu(torch.index_select(tE, 0, tidx))
        tdocs = torch.from_numpy(docs)
        contenders["bag-mean"]["PyTorch"] = lambda: torch.nn.functional.embedding_bag(tdocs, tE, mode="mean")
        tE_step = torch.from_numpy(E.copy())
        contenders["sgd-step"]["PyTorch"] = lambda: tE_step.index_add_(0, tidx, tG, alpha=-0.1)
        torch_version = torch.__version__
    except ImportError:
        torch_version = None

    row_bytes = args.width * 4
    moved = {"gather": args.lookups * (8 + 2 * row_bytes),  # index, row read, row written
             "scatter-add": args.lookups * (8 + row_bytes) + args.rows * row_bytes,  # index, update; the table
             "gather-relu": args.lookups * (8 + 2 * row_bytes),
             "bag-mean": args.lookups * (8 + row_bytes) + args.lookups // 8 * row_bytes,  # rows read, bags written
             "sgd-step": args.lookups * (8 + 3 * row_bytes)}  # index, update; each row read and written
    best = {(op, who): float("inf") for op in contenders for who in contenders[op]}
    for _ in range(args.repeat):
        for op, peers in contenders.items():
            for who, run in peers.items():
                start = time.perf_counter()
                run()
                best[op, who] = min(best[op, who], time.perf_counter() - start)

    print("embedding lookup: E f32[%d, %d], %d indices; %d cores; best of %d; NumPy %s, PyTorch %s"
          % (args.rows, args.width, args.lookups, os.cpu_count(), args.repeat, np.__version__,
             torch_version or "not installed"))
    print("%-12s %-8s %10s %8s %12s" % ("op", "who", "ms", "GB/s", "tgc speed-up"))
    for op, peers in contenders.items():
        for who in peers:
            seconds = best[op, who]
            ratio = "" if who == "tgc" else "%.2fx" % (seconds / best[op, "tgc"])
            print("%-12s %-8s %10.1f %8.1f %12s" % (op, who, seconds * 1e3, moved[op] / seconds / 1e9, ratio))


if __name__ == "__main__":
    main()
