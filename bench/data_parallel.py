#!/usr/bin/python3
"""bench/data_parallel: a training step split across ranks (mpirun -np N tgc run ...), against one process.

Two models: bench/train.py's large MLP (a batch of 4096 x 256 -> 1024 -> 10) and bench/cnn.py's small CNN
(a batch of 64 Fashion-MNIST-shaped images, conv 32 and 64 channels). Each runs --steps steps alone and on
2 ranks, with the same number of threads per rank (--threads, 1 by default: one rank per core, as mpirun
binds them), the runs taking turns --repeat times; the table shows each one's best step time (the first
step, which compiles, left out), each rank's time in collectives per step and the speed-up over one rank.

Then the projection (docs/distributed.md): a step on N ranks costs its compute divided by N plus a ring
allreduce of the gradients, 2 (N - 1) / N x bytes / bandwidth + 2 (N - 1) x latency (opt/CostModel.cpp's
collective cost). First checked against the 2-rank measurement (compute from the 1-rank step, bandwidth and
latency of shared memory measured by the runs' own collectives), then for 8 to 1,024 GPUs on a stated
interconnect, each GPU's compute from tgc's cost model of the step placed on an H200.

    bash bench/data_parallel.sh [--steps 20] [--repeat 3] [--threads 1] [--interconnect-gbps 50]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
from train import LARGE  # noqa: E402 (bench/train.py's large MLP)
from cnn import NETWORKS, SCRIPT as CNN_SCRIPT  # noqa: E402 (bench/cnn.py's networks)


def cnn_script():
    net = NETWORKS["small"]
    a, b = net["widths"]
    side = net["size"] // 4
    script = CNN_SCRIPT.format(c=net["channels"], s=net["size"], a=a, b=b, f=b * side * side)
    # bench/cnn.py sets its params from the host; here they start random, as a script's would.
    return re.sub(r"= zeros\(\[([^\]]*)\]\)", lambda m: "= randn([%s], seed=1) * 0.05" % m.group(1), script)


def models(folder, rng):
    """(name, script path, --in arguments) of each model, with its data written to `folder`."""
    net = NETWORKS["small"]
    data = {
        "mlp": {"X": rng.standard_normal((4096, 256)).astype(np.float32),
                "labels": rng.integers(0, 10, 4096).astype(np.int64)},
        "cnn": {"x": rng.standard_normal((net["batch"], net["channels"], net["size"], net["size"])).astype(np.float32),
                "labels": rng.integers(0, 10, net["batch"]).astype(np.int64)},
    }
    result = []
    for name, script, label in [("mlp", LARGE, "MLP 4096 x 256 -> 1024 -> 10"),
                                ("cnn", cnn_script(), "CNN 64 x 1 x 28 x 28, conv 32, 64")]:
        path = os.path.join(folder, name + ".tg")
        with open(path, "w") as f:
            f.write(script)
        inputs = []
        for input_name, value in data[name].items():
            np.save(os.path.join(folder, f"{name}_{input_name}.npy"), value)
            inputs += ["--in", f"{input_name}={os.path.join(folder, f'{name}_{input_name}.npy')}"]
        result.append((label, path, inputs))
    return result


def measure(tgc, path, inputs, ranks, threads, steps):
    """(seconds per step after the first, [collective seconds per step of each rank], bytes per step, calls
    per step)."""
    command = [tgc, "run", path] + inputs + ["--steps", str(steps), "-v"]
    if ranks == 1:
        command = ["taskset", "-c", ",".join(str(c) for c in range(threads))] + command
    else:
        command = ["mpirun", "-np", str(ranks), "--bind-to", "core", "--map-by", f"slot:PE={threads}",
                   "--allow-run-as-root", "--mca", "btl_vader_single_copy_mechanism", "none"] + command
    result = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    if result.returncode != 0:
        sys.exit(f"$ {' '.join(command)}\n{result.stdout}{result.stderr}")
    step = float(re.search(r"the others ([0-9.e-]+) s each", result.stderr).group(1))
    collectives = [(float(s), int(b), int(c)) for _, c, b, s in
                   re.findall(r"tgc: rank (\d+): collectives: (\d+) calls, (\d+) bytes, ([0-9.e-]+) s", result.stderr)]
    if not collectives:
        return step, [], 0, 0
    return step, [s / steps for s, _, _ in collectives], collectives[0][1] / steps, collectives[0][2] / steps


def ring_seconds(ranks, payload, calls, bandwidth, latency):
    """`calls` ring allreduces of `payload` bytes in all on `ranks` ranks (opt/CostModel.cpp's
    collectiveSeconds, summed)."""
    return 0 if ranks == 1 else 2 * (ranks - 1) * (calls * latency + payload / ranks / bandwidth)


def gpu_compute_seconds(tgc, path, rows):
    """The step placed on an H200 (the cost model's default GPU), as the cost model prices it."""
    result = subprocess.run([tgc, "compile", path, "--emit=json", "--device=sim", "--dim", f"n={rows}"],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)["placement"]["estimated_seconds"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", default=os.path.join(ROOT, "build", "tgc"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="threads per rank")
    parser.add_argument("--interconnect-gbps", type=float, default=50.0,
                        help="each GPU's ring bandwidth in GB/s for the projection (default: InfiniBand NDR, "
                             "400 Gb/s)")
    parser.add_argument("--interconnect-latency-us", type=float, default=5.0)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        runs = models(folder, rng)
        print(f"data-parallel training steps, {args.threads} thread(s) per rank, best of {args.repeat} "
              f"rounds of {args.steps} steps (the first left out)\n")
        print(f"{'model':34} {'ranks':>5} {'step ms':>9} {'collectives ms/step (each rank)':>32} "
              f"{'bytes/step':>11} {'speed-up':>8}")
        measured = {}
        for label, path, inputs in runs:
            best = {}
            for _ in range(args.repeat):
                for ranks in (1, 2):
                    figures = measure(args.tgc, path, inputs, ranks, args.threads, args.steps)
                    if ranks not in best or figures[0] < best[ranks][0]:
                        best[ranks] = figures
            measured[label] = best
            for ranks in (1, 2):
                step, collectives, payload, _ = best[ranks]
                each = ", ".join(f"{1e3 * c:.2f}" for c in collectives) or "-"
                print(f"{label:34} {ranks:>5} {1e3 * step:>9.2f} {each:>32} {payload:>11.0f} "
                      f"{best[1][0] / step:>8.2f}")
        print("\nthe model checked against 2 ranks: compute = the 1-rank step / 2, plus the collectives' time "
              "of the rank that waited least in them (the other's includes waiting for it)")
        for label, (one, two) in ((label, (best[1], best[2])) for label, best in measured.items()):
            step2, collectives2 = two[0], two[1]
            transfer = min(collectives2)
            predicted = one[0] / 2 + transfer
            print(f"  {label:34} predicted {1e3 * predicted:7.2f} ms, measured {1e3 * step2:7.2f} ms "
                  f"(ratio {step2 / predicted:.2f})")
        bandwidth, latency = args.interconnect_gbps * 1e9, args.interconnect_latency_us * 1e-6
        sizes = (1, 8, 64, 256, 1024)
        print(f"\nprojection on N GPUs (H200, cost model) over a ring of {args.interconnect_gbps:g} GB/s and "
              f"{args.interconnect_latency_us:g} us per message")
        print(f"  {'model':34} {'':24}" + "".join(f"{n:>9}" for n in sizes))
        for (label, path, inputs), best in zip(runs, measured.values()):
            rows = 4096 if "MLP" in label else NETWORKS["small"]["batch"]
            compute = gpu_compute_seconds(args.tgc, path, rows)
            # Every collective of a step: the gradients' allreduces, the loss's and the counts'.
            payload, calls = best[2][2], best[2][3]
            comm = [ring_seconds(n, payload, calls, bandwidth, latency) for n in sizes]
            # The global batch fixed (each GPU computes 1/N of it), and the batch per GPU fixed (N times the
            # rows per step).
            strong = [compute / n + c for n, c in zip(sizes, comm)]
            weak = [n * compute / (compute + c) for n, c in zip(sizes, comm)]
            print(f"  {label:34} {'step us, batch fixed':24}" + "".join(f"{1e6 * s:>9.1f}" for s in strong))
            print(f"  {f'({calls:.0f} allreduces, {payload / 1e6:.2f} MB)':34} {'speed-up':24}" +
                  "".join(f"{strong[0] / s:>9.2f}" for s in strong))
            print(f"  {'':34} {'rows/s x, batch per GPU':24}" + "".join(f"{w:>9.1f}" for w in weak))
    return 0


if __name__ == "__main__":
    sys.exit(main())
