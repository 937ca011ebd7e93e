#!/usr/bin/python3
"""Every example prints the same on the simulated device as on the CPU, and the device is really used.

For each examples/*.tg: `tgc run` with --device=cpu and with --device=sim (the training examples with their
data, --steps 20 --print-every 5; the others with the data they name, once), both with -v. Checks:
  - both runs succeed and print the same stdout: the same text, and numbers equal to a few float32 ulps
    (relative 1e-6): the host's generated kernels call libmvec's vector math functions, the simulated
    device's kernels (the device kernel code, compiled for the host) call scalar libm, and the two differ in
    the last bits of exp, tanh, ... as a GPU's libdevice would. cnn.tg is allowed 1e-4: its convolutions are
    oneDNN's primitives on the CPU (their own order of sums, in blocked layouts) and column matrices and gemms
    on the device, a few 1e-7 apart per step, about 2e-6 after 20 steps of training here;
  - the sim run reports `tgc: transfers: N to the device, M to the host, B bytes` on stderr, with N > 0 when the
    example has inputs (a script without inputs may stay on the host entirely);
  - the cpu run reports no transfer at all.

  /usr/bin/python3 tests/e2e/sim_matches_cpu.py --tgc build/tgc [-k SUBSTRING] [-v]

The last line printed is exactly `N passed, M failed`; the exit status is non-zero on any failure.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
DATA = os.path.join(EXAMPLES, "data")

# The data each example with inputs runs on (as in train_examples.py and the examples' own headers).
INPUTS = {
    "logreg.tg": ["X=logreg_X.npy", "y=logreg_y.npy"],
    "mlp.tg": ["X=spiral_X.npy", "labels=spiral_y.npy"],
    "normalize.tg": ["X=points.npy"],
    "cnn.tg": ["x=fashion32_x.npy", "labels=fashion32_y.npy"],
    "char_rnn.tg": ["seq=gpl64_windows.npy", "prompt=gpl_prompt.npy"],
}
TRAINING_STEPS, PRINT_EVERY = 20, 5

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf")
RELATIVE_TOLERANCE = 1e-6
# Examples whose CPU and device sum in different orders (see above), and what they are allowed.
EXAMPLE_TOLERANCE = {"cnn.tg": 1e-4}


def same_output(a, b, tolerance=RELATIVE_TOLERANCE):
    """The same text, with numbers equal within `tolerance`, relative (and integers, nan and inf exactly)."""
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False
    for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)):
        if x == y:
            continue
        try:
            u, v = float(x), float(y)
        except ValueError:
            return False
        if abs(u - v) > tolerance * max(abs(u), abs(v)):
            return False
    return True


DEVICE = "sim"  # the device compared with the CPU (--device)
TRANSFERS = re.compile(r"^tgc: transfers: (\d+) to the device, (\d+) to the host, (\d+) bytes$", re.M)


def declared_inputs(path):
    with open(path) as source:
        return re.findall(r"^\s*input\s+(\w+)\s*:", source.read(), re.M)


def trains(path):
    with open(path) as source:
        return re.search(r"^\s*update\s+\w+\s*=", source.read(), re.M) is not None


def run(tgc, path, device, inputs, steps):
    args = [tgc, "run", path, "--device", device, "-v"]
    for assignment in inputs:
        name, file = assignment.split("=", 1)
        args += ["--in", "%s=%s" % (name, os.path.join(DATA, file))]
    if steps:
        args += ["--steps", str(steps), "--print-every", str(PRINT_EVERY)]
    return args, subprocess.run(args, capture_output=True, text=True, timeout=600)


def check_example(tgc, path, verbose):
    """Returns a list of (description, ok, detail)."""
    name = os.path.basename(path)
    wanted = declared_inputs(path)
    inputs = INPUTS.get(name, [])
    given = [assignment.split("=", 1)[0] for assignment in inputs]
    if sorted(given) != sorted(wanted):
        return [("data for inputs %s" % wanted, False,
                 "sim_matches_cpu.py gives %s; add the example to INPUTS" % (given or "nothing"))]
    steps = TRAINING_STEPS if trains(path) else 0
    checks = []
    results = {}
    for device in ("cpu", DEVICE):
        args, result = run(tgc, path, device, inputs, steps)
        results[device] = result
        ok = result.returncode == 0
        checks.append(("runs on %s" % device, ok,
                       "" if ok else "exit %d: %s\n%s" % (result.returncode, " ".join(args), result.stderr.strip())))
        if verbose and ok:
            print("  %s %s: %s" % (name, device, " ".join(args[1:])))
    if not all(ok for _, ok, _ in checks):
        return checks

    cpu, sim = results["cpu"], results[DEVICE]
    tolerance = EXAMPLE_TOLERANCE.get(name, RELATIVE_TOLERANCE)
    same = same_output(cpu.stdout, sim.stdout, tolerance) and cpu.stdout.strip() != ""
    detail = ""
    if not same:
        cpu_lines, sim_lines = cpu.stdout.splitlines(), sim.stdout.splitlines()
        for i in range(max(len(cpu_lines), len(sim_lines))):
            a = cpu_lines[i] if i < len(cpu_lines) else "<none>"
            b = sim_lines[i] if i < len(sim_lines) else "<none>"
            if not same_output(a, b, tolerance):
                detail = "first difference, line %d:\n    cpu: %s\n    %s: %s" % (i + 1, a, DEVICE, b)
                break
        if not detail:
            detail = "no output"
    checks.append(("%s prints what cpu prints (%d lines)" % (DEVICE, len(cpu.stdout.splitlines())), same, detail))

    reports = TRANSFERS.findall(sim.stderr)
    if not reports:
        checks.append(("%s reports its transfers" % DEVICE, False, "stderr:\n" + sim.stderr.strip()))
    else:
        to_device, to_host, size = (int(n) for n in reports[-1])
        if wanted:
            checks.append(("%s moves data to the device (%d to the device, %d to the host, %d bytes)"
                           % (DEVICE, to_device, to_host, size), to_device > 0,
                           "expected N > 0 for an example with inputs"))
        else:
            checks.append(("%s reports its transfers (%d to the device, %d to the host; no inputs)"
                           % (DEVICE, to_device, to_host), True, ""))
    cpu_reports = TRANSFERS.findall(cpu.stderr)
    no_transfer = bool(cpu_reports) and all(int(n) == 0 for report in cpu_reports for n in report)
    checks.append(("cpu makes no transfer", no_transfer, "stderr:\n" + cpu.stderr.strip()))
    return checks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", required=True, help="the tgc binary")
    parser.add_argument("--device", default="sim",
                        help="the device compared with the CPU (default sim; bench/gpu.sh passes cuda)")
    parser.add_argument("-k", dest="filter", help="run only the examples whose file name contains this text")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the commands")
    args = parser.parse_args()
    global DEVICE
    DEVICE = args.device
    tgc = os.path.abspath(args.tgc)
    examples = sorted(glob.glob(os.path.join(EXAMPLES, "*.tg")))
    if args.filter:
        examples = [path for path in examples if args.filter in os.path.basename(path)]
    passed = failed = 0
    if not examples:
        print("no examples found in %s" % EXAMPLES)
        failed += 1
    for path in examples:
        name = os.path.basename(path)
        try:
            checks = check_example(tgc, path, args.verbose)
        except (OSError, subprocess.SubprocessError) as error:
            checks = [("runs", False, str(error))]
        for description, ok, detail in checks:
            print("%s %s: %s" % ("ok  " if ok else "FAIL", name, description))
            if not ok and detail:
                print("     " + detail.replace("\n", "\n     "))
            passed += ok
            failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
