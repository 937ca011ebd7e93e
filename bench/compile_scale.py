#!/usr/bin/python3
"""Compile time at scale: how tgc's cold compile grows with the size of a script, side by side with CPython.

  build/tgc-python bench/compile_scale.py [--tgc build/tgc] [--repeat 3] [--quick]

Two tables:

- Chains: `let aI = aI-1 * 1.0001 + x` over an f32[1000] input, from 1,000 to 100,000 ops (two ops a line),
  alone, followed by `grad(sum(aN), x)`, and with a different constant on every line ("distinct": no two
  kernels alike, so that none comes from the kernel cache). Each is run cold (`tgc run --no-cache`, a process of its own);
  "JIT" is that run's wall time less the same script's `tgc compile --emit=opt` (parsing, building and
  optimizing), so it is the kernels' compilation and the run. Kernels: the fused nodes of the optimized graph.
- Front end: scripts of 10,000 and 100,000 lines `let vI = op(vI-1)` compiled to the optimized graph in this
  process (`tgc.compile`, which also prepares the run but compiles no kernel), against CPython's `compile()`
  of the Python file of the same shape (`vI = op(vI-1)`): the best of 5 x --repeat rounds after one warm-up
  call, tgc and CPython taking turns in each round.

Times are best-of where repeated; the machine is shared, so compare the ratios of one run.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNARY = ("exp", "tanh", "sin", "cos", "neg", "abs")


def chain_script(lets, with_grad, distinct=False):
    lines = ["input x : f32[1000]", "let a0 = x"]
    lines += ["let a%d = a%d * %s + x" % (i, i - 1, "%.7f" % (1 + i * 1e-7) if distinct else "1.0001")
              for i in range(1, lets + 1)]
    if with_grad:
        lines += ["let s = sum(a%d)" % lets, "let g = grad(s, x)", "output s, g"]
    else:
        lines.append("output a%d" % lets)
    return "\n".join(lines) + "\n"


def wall(command):
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def chains(tgc, folder, sizes, repeat):
    x = os.path.join(folder, "x.npy")
    np.save(x, np.full(1000, 0.5, np.float32))
    print("%-26s %8s %10s %10s %10s %12s" % ("chain", "ops", "kernels", "front (s)", "JIT (s)",
                                            "JIT us/op"))
    for kind in ("chain", "with grad", "distinct"):
        with_grad = kind == "with grad"
        for ops in sizes:
            lets = ops // 2
            path = os.path.join(folder, "chain%d_%s.tg" % (lets, kind.replace(" ", "_")))
            with open(path, "w") as f:
                f.write(chain_script(lets, with_grad, distinct=kind == "distinct"))
            graph = json.loads(subprocess.run([tgc, "compile", path, "--emit=json"], check=True,
                                              capture_output=True, text=True).stdout)
            kernels = sum(node["op"] == "fused" for node in graph["nodes"])
            outputs = ["--out", "s=%s" % os.path.join(folder, "s.npy"), "--out",
                       "g=%s" % os.path.join(folder, "g.npy")] if with_grad else \
                ["--out", "a%d=%s" % (lets, os.path.join(folder, "a.npy"))]
            front = min(wall([tgc, "compile", path, "--emit=opt", "-o", os.devnull]) for _ in range(repeat))
            run = min(wall([tgc, "run", path, "--in", "x=" + x, "--no-cache"] + outputs)
                      for _ in range(repeat))
            jit = max(run - front, 0.0)
            print("%-26s %8d %10d %10.2f %10.2f %12.1f" % (kind, ops, kernels, front, jit, jit / ops * 1e6))


def front_end(sizes, repeat):
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    import tgc

    def best_of_turns(ours, theirs, rounds):
        """Best times of `ours` and `theirs` called in turn, so that both see the same load on the machine."""
        ours(), theirs()  # warm-up: ANTLR's prediction cache, CPython's allocator
        best = [float("inf"), float("inf")]
        for _ in range(rounds):
            for side, call in enumerate((ours, theirs)):
                start = time.perf_counter()
                call()
                best[side] = min(best[side], time.perf_counter() - start)
        return best

    print("\n%-26s %12s %12s %12s %14s" % ("front end", "tgc (ms)", "us/line", "CPython (ms)",
                                           "tgc/CPython"))
    for lines in sizes:
        body = ["let v%d = %s(v%d)" % (i, UNARY[i % len(UNARY)], i - 1) for i in range(1, lines + 1)]
        script = "input x : f32[4]\nlet v0 = x\n" + "\n".join(body) + "\noutput v%d\n" % lines
        python = "v0 = x\n" + "\n".join(line[4:] for line in body) + "\n"
        ours, theirs = best_of_turns(lambda: tgc.compile(script, device="cpu"),
                                     lambda: compile(python, "script.py", "exec"), 5 * repeat)
        print("%-26s %12.1f %12.2f %12.1f %14.2f" % ("%d lines" % lines, ours * 1e3, ours / lines * 1e6,
                                                      theirs * 1e3, ours / theirs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", default=os.path.join(ROOT, "build", "tgc"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="chains up to 20,000 ops, 10,000 lines")
    args = parser.parse_args()
    chain_sizes = (1000, 5000, 10000, 20000) if args.quick else (1000, 5000, 10000, 20000, 40000, 100000)
    with tempfile.TemporaryDirectory() as folder:
        chains(args.tgc, folder, chain_sizes, args.repeat)
    front_end((10000,) if args.quick else (10000, 100000), args.repeat)


if __name__ == "__main__":
    main()
