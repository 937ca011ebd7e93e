#!/usr/bin/python3
"""The simulated device does what the CUDA device does: the same primitives, line for line.

Every example (with the data and steps of sim_matches_cpu.py) and every group of the NumPy comparison suite
(numpy_compare.py) runs twice with TGC_DEVICE_TRACE set: on --device=sim, and on --device=cuda over the fake
CUDA driver and fake cuBLAS the tests build (tests/fake_cuda; its launches run nothing, so only the trace is
compared, not the results: numpy_compare_sim and sim_matches_cpu check the sim's numbers). The fake driver is
given the simulated GPU's 132 multiprocessors, so that launch shapes agree. Without --fake-cuda, the CUDA device
is the machine's own GPU (bench/gpu.sh): its traces must equal the sim's too, when it has 132 multiprocessors
(an H100 SXM or H200) and cuBLAS. The two traces must be equal line
for line (allocations, copies and their sizes, kernel names and grids, gemm shapes, synchronizations), both runs must
exit with the same status, and an example with inputs must launch kernels.

  /usr/bin/python3 tests/e2e/device_trace.py --tgc build/tgc --fake-cuda build/tests/libtgc_fake_cuda.so \\
      --fake-cublas build/tests/libtgc_fake_cublas.so [-k SUBSTRING] [-v]
  python3 tests/e2e/device_trace.py --tgc bin/tgc        (on a GPU machine)

Exits 77 (skipped) when libdevice, which the CUDA device's PTX needs, is not installed. The last line printed
is exactly `N passed, M failed`; the exit status is non-zero on any failure.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import numpy_compare  # noqa: E402
import sim_matches_cpu  # noqa: E402

LIBDEVICE = os.environ.get("TGC_LIBDEVICE", "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc")
SIM_MULTIPROCESSORS = 132


def environments(args, folder, name):
    """The environment of the sim run and of the CUDA run, each with its own trace file."""
    common = dict(os.environ)
    if args.fake_cuda:
        common.update(TGC_CUDA_DRIVER=args.fake_cuda, TGC_CUBLAS=args.fake_cublas,
                      TGC_FAKE_CUDA_SMS=str(SIM_MULTIPROCESSORS))
    return {device: dict(common, TGC_DEVICE_TRACE=os.path.join(folder, "%s.%s.trace" % (name, device)))
            for device in ("sim", "cuda")}


def compare(name, runs, envs, must_launch=False):
    """None when both runs exited alike and wrote the same trace (with a kernel launch, where `must_launch`),
    else what differs."""
    (sim_args, sim), (cuda_args, cuda) = runs["sim"], runs["cuda"]
    if sim.returncode != cuda.returncode:
        return "exit status %d on sim, %d on cuda (fake driver)\n  sim: %s\n  cuda: %s" % (
            sim.returncode, cuda.returncode, sim.stderr.strip()[-500:], cuda.stderr.strip()[-500:])
    traces = {}
    for device in ("sim", "cuda"):
        path = envs[device]["TGC_DEVICE_TRACE"]
        traces[device] = open(path).read().splitlines() if os.path.exists(path) else []
    if traces["sim"] == traces["cuda"]:
        if must_launch and not any(line.startswith("launch ") for line in traces["sim"]):
            return "no kernel was launched on the device"
        return None
    for line, (a, b) in enumerate(zip(traces["sim"], traces["cuda"]), 1):
        if a != b:
            return "traces differ at line %d: sim '%s', cuda '%s'\n  command: %s" % (line, a, b, " ".join(sim_args))
    return "traces differ in length: %d lines on sim, %d on cuda" % (len(traces["sim"]), len(traces["cuda"]))


def example_jobs(args, folder):
    for path in sorted(os.listdir(sim_matches_cpu.EXAMPLES)):
        if not path.endswith(".tg") or (args.filter and args.filter not in path):
            continue
        full = os.path.join(sim_matches_cpu.EXAMPLES, path)
        inputs = sim_matches_cpu.INPUTS.get(path, [])
        steps = sim_matches_cpu.TRAINING_STEPS if sim_matches_cpu.trains(full) else 0

        def job(path=path, full=full, inputs=inputs, steps=steps):
            envs = environments(args, folder, path)
            runs = {}
            for device in ("sim", "cuda"):
                command = [args.tgc, "run", full, "--device", device, "-v"]
                for assignment in inputs:
                    name, file = assignment.split("=", 1)
                    command += ["--in", "%s=%s" % (name, os.path.join(sim_matches_cpu.DATA, file))]
                if steps:
                    command += ["--steps", str(steps), "--print-every", str(sim_matches_cpu.PRINT_EVERY)]
                runs[device] = (command, subprocess.run(command, capture_output=True, text=True, timeout=600,
                                                        env=envs[device]))
            # An example with inputs has its work lifted to the device.
            return "example " + path, compare(path, runs, envs, must_launch=bool(inputs))
        yield job


def numpy_jobs(args, folder):
    for group in numpy_compare.groups():
        if args.filter and args.filter not in group.name:
            continue

        def job(group=group):
            group_folder = os.path.join(folder, group.name)
            os.makedirs(group_folder, exist_ok=True)
            for name, array in group.inputs.items():
                np.save(os.path.join(group_folder, "in_%s.npy" % name), array)
            for name, array in group.files.items():
                np.save(os.path.join(group_folder, name), array)
            envs = environments(args, folder, group.name)
            runs = {}
            for device in ("sim", "cuda"):
                runner = numpy_compare.Runner(SimpleNamespace(tgc=args.tgc, device=device, verbose=False,
                                                             run_options=["-v"]), folder)
                cases = [case for case in group.cases if not case.computed_index]
                process, _ = runner.invoke(group, cases, group_folder, env=envs[device])
                runs[device] = (process.args, process)
            return "numpy group " + group.name, compare(group.name, runs, envs)
        yield job


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tgc", required=True, help="the tgc binary")
    parser.add_argument("--fake-cuda", help="the fake CUDA driver (tests/fake_cuda); without it, the real GPU")
    parser.add_argument("--fake-cublas", help="the fake cuBLAS (tests/fake_cuda), with --fake-cuda")
    parser.add_argument("-k", dest="filter", help="only the examples and groups whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every comparison")
    parser.add_argument("-j", dest="jobs", type=int, default=2, help="comparisons run at once (default 2)")
    args = parser.parse_args()
    if not os.path.exists(LIBDEVICE):
        print("skipped: libdevice (%s) is not installed, and the CUDA device's PTX needs it" % LIBDEVICE)
        return 77
    if not args.fake_cuda:
        probe = subprocess.run([args.tgc, "run", os.path.join(sim_matches_cpu.EXAMPLES, "softmax.tg"), "--device",
                                "cuda", "-v"], capture_output=True, text=True, timeout=300)
        found = re.search(r"cuda: .*\(sm_\d+, (\d+) SMs", probe.stderr)
        if probe.returncode != 0 or not found:
            print("skipped: no GPU: %s" % probe.stderr.strip()[-300:])
            return 77
        if "no cuBLAS" in probe.stderr:
            print("skipped: the GPU runs matmul without cuBLAS, the simulated device with gemm")
            return 77
        if int(found.group(1)) != SIM_MULTIPROCESSORS:
            print("skipped: the GPU has %s multiprocessors, the simulated one %d: launch shapes differ"
                  % (found.group(1), SIM_MULTIPROCESSORS))
            return 77
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="tgc_trace_") as folder:
        jobs = list(example_jobs(args, folder)) + list(numpy_jobs(args, folder))
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for what, problem in pool.map(lambda job: job(), jobs):
                if problem:
                    failed += 1
                    print("FAIL %s: %s" % (what, problem))
                else:
                    passed += 1
                    if args.verbose:
                        print("ok   %s" % what)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
