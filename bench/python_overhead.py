#!/usr/bin/python3
"""What a call from Python costs: one call of a tiny compiled program, against one NumPy ufunc call doing the
same work and against one step of `tgc run --steps` (the same program stepped inside tgc, no Python), side by
side in one run; then the same for a training step of examples/logreg.tg.

  build/tgc-python bench/python_overhead.py [--tgc build/tgc] [--repeat 5]

Each figure is the best of --repeat rounds, the rounds interleaved so that a noisy neighbour slows all alike. The
`tgc run` step is (time of N+1 steps - time of 1 step) / N, so start-up and compilation cancel out.
"""
import argparse
import os
import subprocess
import tempfile
import time
import timeit

import numpy as np

import tgc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = "input x : f32[n]\nlet y = x * 2.0\noutput y\n"


def per_call(function, seconds=0.2):
    """Seconds per call of `function`, timed over about `seconds`."""
    timer = timeit.Timer(function)
    count, _ = timer.autorange()
    count = max(count, int(count * seconds / 0.2))
    return timer.timeit(count) / count


def per_cli_step(tgc_path, script, inputs, steps):
    """Seconds per step of `tgc run --steps`, start-up and compilation cancelled out."""
    def run(count):
        args = [tgc_path, "run", script, "--device", "cpu", "--steps", str(count)]
        for name, path in inputs.items():
            args += ["--in", "%s=%s" % (name, path)]
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True)
        return time.perf_counter() - start
    return (run(steps + 1) - run(1)) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", default=os.path.join(ROOT, "build", "tgc"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    folder = tempfile.mkdtemp(prefix="tgc-overhead-")
    tiny_path = os.path.join(folder, "tiny.tg")
    with open(tiny_path, "w") as script:
        script.write(TINY)
    x = np.ones(16, np.float32)
    np.save(os.path.join(folder, "x.npy"), x)
    tiny = tgc.compile(TINY, device="cpu")
    tiny(x=x)

    logreg_path = os.path.join(ROOT, "examples", "logreg.tg")
    data = {name: os.path.join(ROOT, "examples", "data", "logreg_%s.npy" % name) for name in ("X", "y")}
    X, y = np.load(data["X"]), np.load(data["y"])
    logreg = tgc.compile(logreg_path, device="cpu")
    logreg.step(X=X, y=y)

    best = {}
    for _ in range(args.repeat):
        rounds = {
            "tiny: tgc from Python": per_call(lambda: tiny(x=x)),
            "tiny: NumPy ufunc": per_call(lambda: np.multiply(x, 2.0)),
            "tiny: tgc run --steps": per_cli_step(args.tgc, tiny_path, {"x": os.path.join(folder, "x.npy")}, 20000),
            "logreg step: tgc from Python": per_call(lambda: logreg.step(X=X, y=y)),
            "logreg step: tgc run --steps": per_cli_step(args.tgc, logreg_path, data, 2000),
        }
        for name, seconds in rounds.items():
            best[name] = min(best.get(name, seconds), seconds)

    print("%-32s %10s" % ("call (x: f32[16] for tiny)", "us"))
    for name, seconds in best.items():
        print("%-32s %10.2f" % (name, seconds * 1e6))
    print("tiny, tgc from Python / NumPy ufunc:         %.1fx" % (best["tiny: tgc from Python"] /
                                                                   best["tiny: NumPy ufunc"]))
    print("tiny, tgc from Python / tgc run step:        %.1fx" % (best["tiny: tgc from Python"] /
                                                                   best["tiny: tgc run --steps"]))
    print("logreg, tgc from Python / tgc run step:      %.2fx" % (best["logreg step: tgc from Python"] /
                                                                   best["logreg step: tgc run --steps"]))


if __name__ == "__main__":
    main()
