#!/usr/bin/python3
"""A run split across ranks (mpirun -np P tgc run ...) gives the single process's outputs and params.

Each case is a script and its inputs: scripts that exercise every rule of the shard pass (opt/Shard.h) on
their outputs, and the training examples (trained for some steps, whole or in batches). Each runs once alone
and then under mpirun on 2 and 3 ranks (3: blocks of unequal size) on the CPU, and on 2 ranks on the simulated
device; every output and param, saved with --out, must equal the single run's: integers exactly, floats
within relative 1e-4 (the ranks sum in another order: training for a hundred steps keeps the difference near
1e-6, while after some hundreds of the MLP's steps at rate 1 it has grown to 1e-4). Then the MLP example's
documented run, 2000 steps on 2 ranks, prints the single run's losses within relative 1e-3, and logreg
trained from Python (tgc.compile under mpirun, each rank stepping on tgc.block of the data) ends with the
single process's params. A rank that dies or hangs ends the run with an error naming it. On CUDA (the fake
driver) the collectives go through NCCL (a fake one on MPI), or are staged through host memory without it.
As root, two hosts on one machine (network namespaces joined by a veth pair, Open MPI over TCP) train the MLP
to the single process's losses. Skipped (exit 77) where mpirun is not installed.

  /usr/bin/python3 tests/e2e/distributed.py --tgc build/tgc [--ranks 2 3] [--only NAME]
      [--fake-cuda build/tests/libtgc_fake_cuda.so --fake-nccl build/tests/libtgc_fake_nccl.so]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numcheck  # noqa: E402 (beside this file)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "examples", "data")
RTOL, ATOL = 1e-4, 1e-5

RULES = """
input X : f32[n, 4]
input Y : f32[n, 3]
input W : f32[4, 3]
input labels : i64[n]
input words : i64[n, 2]
input E : f32[10, 3]
input T : f32[3, n]

# elementwise and row-wise work stays local; a whole operand spanning the axis is cut
let rows = sum(X * X[:, 0:1], axis=1)
let withWhole = X + f32(arange(n))[:, None]
# reductions over the split axis: sum, mean (a count across the ranks), max, min, prod, any, all
let colsum = sum(X, axis=0)
let total = mean(X)
let colmean = mean(X, axis=0)
let top = max(X, axis=0)
let low = min(X)
let pr = prod(1.0 + 0.01 * X, axis=0)
let anyBig = any(X > 1.5)
let allSmall = all(X < 10.0)
let size = n
let avg = sum(Y, axis=0) / n
# needs the whole axis: argmax along it, sorts and cumsums along it; along another axis: local
let arg = argmax(X, axis=0)
let argflat = argmin(X)
let sorted0 = sort(X, axis=0)
let sorted1 = sort(X, axis=1)
let order1 = argsort(Y, axis=1)
let run0 = cumsum(Y, axis=0)
let run1 = cumsum(Y, axis=1)
# products: rows stay split; a contraction over the split axis sums across the ranks
let h = X @ W
let g = transpose(X) @ Y
let mv = X @ W[:, 0]
let vm = Y[:, 0] @ X
let bat = X[:, :, None] @ Y[:, None, :]
# views: kept, moved, or merged (then gathered)
let cube = reshape(X, [-1, 2, 2])
let flat = reshape(X, [-1])
let t = transpose(X) * 2.0
let cols = X[:, 1:3]
let head = X[1:3]
let e = X[:, None, :] + 1.0
let st = stack([X, X * 2.0], axis=1)
let down = concat([X, X], axis=0)
let across = concat([X, Y], axis=1)
# indexing: into the split axis (gathered), by split indices (split), along an axis (take_along_axis)
let picked = X[arange(n), labels]
let emb = E[words]
let along = take_along_axis(X, labels[:, None], 1)
let byLabel = X[labels]
let twoCols = take(X, [0, 2], axis=1)
let counts = inc_subtensor(zeros_like(E)[words], 1.0)
# random numbers of the split shape: each element the single process's
let noise = rand([n, 2], seed=7) + X[:, 0:2]
# split along axis 1: indexed there (gathered), reduced there, contracted
let pickT = T[:, [0, 2]]
let rowsT = sum(T, axis=1)
let TX = T @ X

output rows, withWhole, colsum, total, colmean, top, low, pr, anyBig, allSmall, size, avg, arg, argflat
output sorted0, sorted1, order1, run0, run1, h, g, mv, vm, bat, cube, flat, t, cols, head, e, st, down
output across, picked, emb, along, byLabel, twoCols, counts, noise, pickT, rowsT, TX
"""

CONV = """
import nn
input x : f32[n, 2, 6, 6]
input labels : i64[n]
param w : f32[3, 2, 3, 3] = randn([3, 2, 3, 3], seed=1) * 0.3
param b : f32[3] = zeros([3])
param v : f32[12, 4] = randn([12, 4], seed=2) * 0.3
let y = relu(conv2d(x, w, padding=1) + b[None, :, None, None])
let p = max_pool2d(y, 3)
let a = avg_pool2d(y, 3)
let logits = reshape(p + a, [-1, 12]) @ v
let loss = -mean(take_along_axis(nn.log_softmax(logits, 1), labels[:, None], 1))
let gw, gb, gv = grad(loss, w, b, v)
update w = w - 0.5 * gw
update b = b - 0.5 * gb
update v = v - 0.5 * gv
output loss, y
"""

RNN = """
input xs : f32[n, 6, 3]
param Wx : f32[3, 4] = randn([3, 4], seed=1) * 0.5
param Wh : f32[4, 4] = randn([4, 4], seed=2) * 0.5
def step(h, x) = tanh(x @ Wx + h @ Wh)
# a loop over the batch's rows: each rank steps its own rows (and its gradient, a reverse loop, likewise)
let hs = scan(step, zeros([n, 4]), transpose(xs, [1, 0, 2]))
# a carry reducing over the batch inside the loop: summed across the ranks at every step
def total(s, x) = s + sum(x, axis=0)
let sums = scan(total, zeros([3]), transpose(xs, [1, 0, 2]))
# a loop over the split dimension itself: it runs whole
def running(s, x) = s + x
let along = scan(running, zeros([6, 3]), xs)
let loss = mean(hs[-1] ** 2)
let gWx, gWh = grad(loss, Wx, Wh)
update Wx = Wx - 0.5 * gWx
update Wh = Wh - 0.5 * gWh
output loss, hs, sums, along
"""

# Found by review: take_along_axis's gradient into a whole value of the split shape; NaNs in max and min over
# the split axis (MPI's max skips them, tgc's propagates them); a value whose split axis has a static size
# (n unified with a param's), reshaped and trained.
EDGES = """
input X : f32[n, 4]
input labels : i64[n]
input y : f32[n]
param w : f32[4] = zeros([4])
param B : f32[11] = zeros([11])
let A = zeros([n, 4])
let g = grad(sum(take_along_axis(A, labels[:, None], 1) * X[:, 0:1]), A)
let nans = where(X > 1.2, X * 0.0 / 0.0, X)
let top = max(nans, axis=0)
let low = min(nans)
let pred = X @ w + B
let r = reshape(X[:, 0:2] + B[:, None], [11, 1, -1])
let loss = mean((pred - y) ** 2) + sum(pred[:, None] * X[:, 0:2])
let gw, gB = grad(loss, w, B)
update w = w - 0.01 * gw
update B = B - 0.01 * gB
output g, top, low, r, loss, pred
"""


def edges_inputs(rng, n):
    return {"X": rng.standard_normal((n, 4)).astype(np.float32),
            "labels": rng.integers(0, 4, n).astype(np.int64),
            "y": rng.standard_normal(n).astype(np.float32)}


def rnn_inputs(rng, n):
    return {"xs": rng.standard_normal((n, 6, 3)).astype(np.float32)}


def rules_inputs(rng, n):
    return {
        "X": rng.standard_normal((n, 4)).astype(np.float32),
        "Y": rng.standard_normal((n, 3)).astype(np.float32),
        "W": rng.standard_normal((4, 3)).astype(np.float32),
        "labels": rng.integers(0, 4, n).astype(np.int64),
        "words": rng.integers(0, 10, (n, 2)).astype(np.int64),
        "E": rng.standard_normal((10, 3)).astype(np.float32),
        "T": rng.standard_normal((3, n)).astype(np.float32),
    }


def conv_inputs(rng, n):
    return {
        "x": rng.standard_normal((n, 2, 6, 6)).astype(np.float32),
        "labels": rng.integers(0, 4, n).astype(np.int64),
    }


RULE_OUTPUTS = [name.strip() for line in RULES.splitlines() if line.startswith("output ")
                for name in line[len("output "):].split(",")]

# (name, script: text or an example's file, inputs: (generator, rows) or example data files, saved names,
#  extra run arguments)
CASES = [
    ("rules", RULES, (rules_inputs, 11), RULE_OUTPUTS, []),
    ("conv", CONV, (conv_inputs, 7), ["loss", "y", "w", "b", "v"], ["--steps", "5"]),
    ("rnn", RNN, (rnn_inputs, 7), ["loss", "hs", "sums", "along", "Wx", "Wh"], ["--steps", "5"]),
    ("edges", EDGES, (edges_inputs, 11), ["g", "top", "low", "r", "loss", "pred", "w", "B"], ["--steps", "3"]),
    ("mlp", "mlp.tg", ["X=spiral_X.npy", "labels=spiral_y.npy"], ["loss", "accuracy", "W1", "b2"],
     ["--steps", "100"]),
    ("logreg batches", "logreg.tg", ["X=logreg_X.npy", "y=logreg_y.npy"], ["loss", "w", "b"],
     ["--batch", "7", "--epochs", "2", "--shuffle", "1"]),
    ("cnn batches", "cnn.tg", ["x=fashion32_x.npy", "labels=fashion32_y.npy"], ["loss", "accuracy", "w1", "b3"],
     ["--batch", "16"]),
    ("char_rnn batches", "char_rnn.tg", ["seq=gpl64_windows.npy", "prompt=gpl_prompt.npy"],
     ["loss", "sample", "E", "bo"], ["--batch", "32"]),
    ("embedding", "embedding.tg", [], ["loss", "E"], ["--steps", "20"]),
]


def mpirun(ranks):
    # As root (CI containers), oversubscribing the cores, over shared memory without the single-copy
    # mechanism that containers often forbid (ptrace).
    return ["mpirun", "-np", str(ranks), "--oversubscribe", "--allow-run-as-root",
            "--mca", "btl_vader_single_copy_mechanism", "none"]


def run(command, what):
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        sys.exit(f"FAIL {what}: exit {result.returncode}\n$ {' '.join(command)}\n{result.stdout}{result.stderr}")
    return result


def saved(folder, names):
    return {name: np.load(os.path.join(folder, name + ".npy")) for name in names}


def verdict(what, problems):
    """Prints `ok WHAT`, or `FAIL WHAT` and the problems; whether there were none."""
    print(f"{'FAIL' if problems else 'ok'} {what}")
    for problem in problems:
        print("    " + problem)
    return not problems


def differences(want, got):
    problems = []
    for name, expected in want.items():
        actual = got[name]
        if expected.shape != actual.shape or expected.dtype != actual.dtype:
            problems.append(f"{name}: {actual.dtype}{list(actual.shape)}, alone {expected.dtype}{list(expected.shape)}")
        elif expected.dtype.kind == "f":
            if not np.allclose(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True):
                worst = np.max(np.abs(actual - expected) / (ATOL + RTOL * np.abs(expected)))
                problems.append(f"{name}: differs, at worst {worst:.3g} times the tolerance")
        elif not np.array_equal(actual, expected):
            problems.append(f"{name}: differs")
    return problems


PYTHON_SCRIPT = """
import sys
import numpy as np
import tgc
X, y = np.load(sys.argv[1]), np.load(sys.argv[2])
program = tgc.compile(sys.argv[3], device="cpu")
for _ in range(50):
    outputs = program.step(X=tgc.block(X), y=tgc.block(y))
# A run without an input that only the updates read (the program without its updates): split all the same.
scaled = tgc.compile(source="input X : f32[n, 4]\\ninput rate : f32\\nparam w : f32[4] = ones([4])\\n"
                            "let loss = mean(X @ w)\\nupdate w = w - rate * grad(loss, w)\\noutput loss\\n")
partial = scaled(X=tgc.block(X))["loss"]
if tgc.rank() == 0:
    np.savez(sys.argv[4], loss=outputs["loss"], w=program.params["w"], partial=partial, ranks=tgc.ranks())
"""


def python_matches(tgc, ranks, tmp):
    """From Python (tgc.compile under mpirun, each rank stepping on tgc.block of the data): logreg's loss
    and params are the single process's, and so is a run that leaves out an input only the updates read."""
    python = os.path.join(os.path.dirname(tgc), "tgc-python")
    if not os.path.exists(python):
        print("SKIP python: no tgc-python beside tgc (a build without the Python module)")
        return True
    script = os.path.join(tmp, "logreg.py")
    with open(script, "w") as f:
        f.write(PYTHON_SCRIPT)
    args = [os.path.join(DATA, "logreg_X.npy"), os.path.join(DATA, "logreg_y.npy"),
            os.path.join(ROOT, "examples", "logreg.tg")]
    run([python, script] + args + [os.path.join(tmp, "alone.npz")], "python alone")
    run(mpirun(ranks) + [python, script] + args + [os.path.join(tmp, "split.npz")], f"python on {ranks} ranks")
    alone, split = np.load(os.path.join(tmp, "alone.npz")), np.load(os.path.join(tmp, "split.npz"))
    problems = differences({name: alone[name] for name in ("loss", "w", "partial")},
                           {name: split[name] for name in ("loss", "w", "partial")})
    if int(split["ranks"]) != ranks:
        problems.append(f"tgc.ranks() is {int(split['ranks'])}, not {ranks}")
    return verdict(f"python: {ranks} ranks", problems)


# Rank 1 of a long run dies (SIGKILL) or stops answering (SIGSTOP) a second in; rank 0 goes on.
DIES = """#!/bin/sh
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec timeout -s KILL 1 "$@"; else exec "$@"; fi
"""
HANGS = """#!/bin/sh
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then "$@" & pid=$!; sleep 1; kill -STOP $pid; wait $pid; else exec "$@"; fi
"""


def faults_reported(tgc, tmp):
    """A rank that dies or hangs ends the run with an error naming it (mpirun's, or the collective's
    deadline, here 3 s), not a hang."""
    command = [tgc, "run", os.path.join(ROOT, "examples", "mlp.tg"), "--in", "X=" + os.path.join(DATA, "spiral_X.npy"),
               "--in", "labels=" + os.path.join(DATA, "spiral_y.npy"), "--steps", "100000000"]
    ok = True
    for fault, wrapper, expected in [("dies", DIES, "process rank 1"), ("hangs", HANGS, "allreduce waited 3 s")]:
        path = os.path.join(tmp, fault + ".sh")
        with open(path, "w") as f:
            f.write(wrapper)
        os.chmod(path, 0o755)
        env = dict(os.environ, TGC_COLLECTIVE_TIMEOUT="3")
        try:
            result = subprocess.run(mpirun(2) + ["-x", "TGC_COLLECTIVE_TIMEOUT", path] + command,
                                    capture_output=True, text=True, timeout=120, env=env)
            output = result.stdout + result.stderr
            good = result.returncode != 0 and expected in output
        except subprocess.TimeoutExpired:
            output, good = "(still running after 120 s)", False
        print(f"{'ok' if good else 'FAIL'} a rank that {fault}: the run ends with an error naming it")
        if not good:
            print(output)
        ok = ok and good
    return ok


def nccl_used(tgc, fake_cuda, fake_nccl, tmp):
    """On CUDA (the fake driver, whose kernels compute nothing) the collectives go to NCCL (a fake one on MPI):
    rank 0 makes the unique id, every rank joins the communicator and the allreduces are NCCL's; with
    TGC_NCCL=none they are staged through host memory, and -v says why."""
    log = os.path.join(tmp, "nccl.log")
    command = mpirun(2) + ["-x", "TGC_CUDA_DRIVER", "-x", "TGC_NCCL", "-x", "TGC_FAKE_NCCL_LOG", tgc, "run",
                           os.path.join(ROOT, "examples", "logreg.tg"), "--in", "X=" + os.path.join(DATA, "logreg_X.npy"),
                           "--in", "y=" + os.path.join(DATA, "logreg_y.npy"), "--steps", "3", "--device", "cuda", "-v"]
    problems = []
    for nccl, expected in [(fake_nccl, "collectives on the device"),
                           ("none", "collectives staged through host memory (NCCL turned off by TGC_NCCL=none)")]:
        env = dict(os.environ, TGC_CUDA_DRIVER=fake_cuda, TGC_NCCL=nccl, TGC_FAKE_NCCL_LOG=log)
        result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
        if result.returncode != 0 or expected not in result.stderr:
            problems.append(f"TGC_NCCL={nccl}: exit {result.returncode}, no '{expected}' in\n{result.stderr}")
    calls = open(log).read() if os.path.exists(log) else ""
    for line in ["ncclGetUniqueId", "ncclCommInitRank rank 0 of 2: fake nccl id", "ncclCommInitRank rank 1 of 2: fake nccl id",
                 "ncclAllReduce"]:
        if line not in calls:
            problems.append(f"the fake NCCL's log has no '{line}':\n{calls}")
    if calls.count("ncclGetUniqueId") != 1:
        problems.append(f"{calls.count('ncclGetUniqueId')} unique ids made, not 1 (rank 0's)")
    return verdict("nccl: collectives on CUDA memory through NCCL, else staged", problems)


NETNS_AGENT = """#!/bin/sh
# Open MPI's launcher agent (in place of ssh): runs the command on host $1, an address, in the network
# namespace that holds it.
host=$1; shift
case "$host" in
  10.77.0.1) exec ip netns exec {a} sh -c "$*" ;;
  10.77.0.2) exec ip netns exec {b} sh -c "$*" ;;
esac
echo "no namespace holds $host" >&2
exit 1
"""


def two_hosts_match(tgc, tmp):
    """Two hosts on one machine: network namespaces joined by a veth pair, 10.77.0.1 and 10.77.0.2, one rank
    in each, Open MPI over TCP between them (its launcher entering the other namespace instead of ssh). The
    MLP trains to the single process's losses. Needs root and iproute2's ip; skipped otherwise."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        print("SKIP two hosts: network namespaces need root and iproute2's ip")
        return True
    a, b = f"tgc_a{os.getpid()}", f"tgc_b{os.getpid()}"
    veth = f"tgcv{os.getpid() % 100000}"
    setup = [["ip", "netns", "add", a], ["ip", "netns", "add", b],
             ["ip", "link", "add", veth + "a", "type", "veth", "peer", "name", veth + "b"],
             ["ip", "link", "set", veth + "a", "netns", a], ["ip", "link", "set", veth + "b", "netns", b],
             ["ip", "netns", "exec", a, "ip", "addr", "add", "10.77.0.1/24", "dev", veth + "a"],
             ["ip", "netns", "exec", b, "ip", "addr", "add", "10.77.0.2/24", "dev", veth + "b"]]
    for ns, link in ((a, veth + "a"), (b, veth + "b")):
        setup += [["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"],
                  ["ip", "netns", "exec", ns, "ip", "link", "set", link, "up"]]
    agent = os.path.join(tmp, "netns_agent.sh")
    with open(agent, "w") as f:
        f.write(NETNS_AGENT.format(a=a, b=b))
    os.chmod(agent, 0o755)
    command = [tgc, "run", os.path.join(ROOT, "examples", "mlp.tg"), "--in", "X=" + os.path.join(DATA, "spiral_X.npy"),
               "--in", "labels=" + os.path.join(DATA, "spiral_y.npy"), "--steps", "300", "--print-every", "100"]
    try:
        for step in setup:
            made = subprocess.run(step, capture_output=True, text=True)
            if made.returncode != 0:
                print(f"SKIP two hosts: cannot make the namespaces ({' '.join(step)}: {made.stderr.strip()})")
                return True
        alone = run(command, "two hosts: alone").stdout
        where = run(["ip", "netns", "exec", a, "mpirun", "-np", "2", "--host", "10.77.0.1,10.77.0.2",
                     "--allow-run-as-root", "--mca", "plm_rsh_agent", agent, "--mca", "btl", "tcp,self",
                     "--mca", "btl_tcp_if_include", "10.77.0.0/24", "--mca", "oob_tcp_if_include", "10.77.0.0/24",
                     "sh", "-c", "echo rank $OMPI_COMM_WORLD_RANK in $(ip netns identify $$)"], "two hosts: where").stdout
        split = run(["ip", "netns", "exec", a, "mpirun", "-np", "2", "--host", "10.77.0.1,10.77.0.2",
                     "--allow-run-as-root", "--mca", "plm_rsh_agent", agent, "--mca", "btl", "tcp,self",
                     "--mca", "btl_tcp_if_include", "10.77.0.0/24", "--mca", "oob_tcp_if_include", "10.77.0.0/24"]
                    + command, "two hosts").stdout
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    placed = f"rank 0 in {a}" in where and f"rank 1 in {b}" in where
    same = numcheck.text_matches(alone, split, rtol=1e-4, atol=1e-6)
    print(f"{'ok' if same and placed else 'FAIL'} two hosts: 2 ranks in two network namespaces over TCP")
    if not placed:
        print("the ranks ran in\n" + where)
    if not same:
        print("alone:\n" + alone + "two hosts:\n" + split)
    return same and placed


def printed_losses_match(tgc, ranks):
    """examples/mlp.tg's documented run prints the same losses on `ranks` ranks as alone."""
    command = [tgc, "run", os.path.join(ROOT, "examples", "mlp.tg"), "--in", "X=" + os.path.join(DATA, "spiral_X.npy"),
               "--in", "labels=" + os.path.join(DATA, "spiral_y.npy"), "--steps", "2000", "--print-every", "500"]
    alone = run(command, "mlp printed alone").stdout
    split = run(mpirun(ranks) + command, f"mlp printed on {ranks} ranks").stdout
    same = numcheck.text_matches(alone, split, rtol=1e-3, atol=1e-6)
    print(f"{'ok' if same else 'FAIL'} mlp printed: {ranks} ranks, {len(alone.splitlines())} lines")
    if not same:
        print("alone:\n" + alone + f"on {ranks} ranks:\n" + split)
    return same


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", required=True)
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--only")
    parser.add_argument("--fake-cuda", help="tests/fake_cuda's driver (the NCCL test runs with it)")
    parser.add_argument("--fake-nccl", help="tests/fake_cuda's NCCL")
    args = parser.parse_args()
    if not shutil.which("mpirun"):
        print("SKIP: mpirun is not installed (Debian's openmpi-bin)")
        return 77
    tgc = os.path.abspath(args.tgc)
    os.environ.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    rng = np.random.default_rng(37)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, script, inputs, names, extra in CASES:
            if args.only and args.only != name:
                continue
            case = os.path.join(tmp, name.replace(" ", "_"))
            os.makedirs(case)
            if script.endswith(".tg"):
                path = os.path.join(ROOT, "examples", script)
                bound = [f"{pair.split('=')[0]}={os.path.join(DATA, pair.split('=')[1])}" for pair in inputs]
            else:
                path = os.path.join(case, "script.tg")
                with open(path, "w") as f:
                    f.write(script)
                make, rows = inputs
                bound = []
                for input_name, value in make(rng, rows).items():
                    np.save(os.path.join(case, input_name + ".npy"), value)
                    bound.append(f"{input_name}={os.path.join(case, input_name + '.npy')}")
            command = [tgc, "run", path] + [a for b in bound for a in ("--in", b)] + extra

            def outputs(folder):
                os.makedirs(folder)
                return [a for n in names for a in ("--out", f"{n}={os.path.join(folder, n + '.npy')}")]

            run(command + outputs(os.path.join(case, "alone")), f"{name} alone")
            alone = saved(os.path.join(case, "alone"), names)
            runs = [(ranks, "cpu") for ranks in args.ranks] + [(args.ranks[0], "sim")]
            for ranks, device in runs:
                folder = os.path.join(case, f"{ranks}_{device}")
                run(mpirun(ranks) + command + ["--device", device] + outputs(folder),
                    f"{name} on {ranks} ranks ({device})")
                problems = differences(alone, saved(folder, names))
                failures += not verdict(f"{name}: {ranks} ranks ({device}), {len(names)} values", problems)
        if not args.only or args.only == "python":
            failures += not python_matches(tgc, args.ranks[-1], tmp)
        if not args.only or args.only == "faults":
            failures += not faults_reported(tgc, tmp)
        if not args.only or args.only == "two hosts":
            failures += not two_hosts_match(tgc, tmp)
        if args.fake_cuda and args.fake_nccl and (not args.only or args.only == "nccl"):
            failures += not nccl_used(tgc, os.path.abspath(args.fake_cuda), os.path.abspath(args.fake_nccl), tmp)
    if not args.only or args.only == "mlp printed":
        failures += not printed_losses_match(tgc, args.ranks[0])
    if failures:
        print(f"{failures} split runs differ from the single process's")
        return 1
    print("every split run gives the single process's values")
    return 0


if __name__ == "__main__":
    sys.exit(main())
