#!/usr/bin/python3
"""The installed CMake package works where the build's packages are not installed.

`cmake --install BUILD --prefix P`, then, in a mount namespace where LLVM, ANTLR's runtime, OpenBLAS with
libgfortran, oneDNN with libgomp and libOpenCL, and libedit are hidden (an empty folder or /dev/null over each:
unshare --mount, as root), with the compiler, CMake and the C library's headers still there:
  1. examples/embed, configured with find_package(tgc) against P and built, compiles and trains
     examples/logreg.tg and prints what the build's tgc run prints (numbers compared as numbers), and its
     train_logreg (logreg.tg made a library at build time by tgc_add_library) reaches tgc run's loss;
  2. P/bin/tgc runs examples/mlp.tg as the build's tgc does;
  3. P/bin/tgc compile --emit=lib writes a library (it finds the AOT runtime in P/lib);
  4. every library P's binaries load comes from P/lib or the base system.
Where a mount namespace cannot be made (not root), the same checks run with nothing hidden, and it says so.

  /usr/bin/python3 tests/e2e/cmake_package.py --build build
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numcheck  # noqa: E402 (beside this file)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "examples", "data")
LIB = "/usr/lib/x86_64-linux-gnu"
HIDDEN = ["/usr/lib/llvm-19", LIB + "/libLLVM*", LIB + "/libantlr4*", "/usr/include/antlr4-runtime",
          LIB + "/libopenblas*", LIB + "/openblas-pthread", LIB + "/libblas*", LIB + "/liblapack*",
          LIB + "/libgfortran*", LIB + "/libquadmath*", LIB + "/libdnnl*", "/usr/include/oneapi",
          LIB + "/libgomp*", LIB + "/libOpenCL*", LIB + "/libedit*", "/usr/bin/antlr4", "/usr/bin/llvm-config*"]
BASE_SYSTEM = re.compile(r"^(linux-vdso|ld-linux-x86-64|libc|libm|libmvec|libdl|librt|libpthread|libutil|libresolv|"
                         r"libstdc\+\+|libgcc_s|libz|libzstd|liblzma|libtinfo)\.so")

LOGREG = ["--in", "X=" + os.path.join(DATA, "logreg_X.npy"), "--in", "y=" + os.path.join(DATA, "logreg_y.npy"),
          "--steps", "100", "--print-every", "25"]
MLP = ["--in", "X=" + os.path.join(DATA, "spiral_X.npy"), "--in", "labels=" + os.path.join(DATA, "spiral_y.npy"),
       "--steps", "100", "--print-every", "50", "--device=cpu"]


def run(args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError("failed (%d): %s\n%s%s" % (result.returncode, " ".join(args), result.stdout, result.stderr))
    return result.stdout


def same_numbers(expected, actual):
    """Whether two printouts say the same, numbers compared as numbers (tests/e2e/numcheck.py)."""
    return numcheck.text_matches(expected, actual, rtol=1e-5, atol=1e-7)


CHECKS = r"""
import os, re, subprocess, sys
prefix, work, root, base = sys.argv[1:5]
def run(args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("failed (%d): %s\n%s%s" % (result.returncode, " ".join(args), result.stdout, result.stderr))
    return result.stdout
build = os.path.join(work, "embed-build")
run(["cmake", "-S", os.path.join(root, "examples", "embed"), "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix])
run(["cmake", "--build", build])
logreg = sys.argv[5:5 + int(sys.argv[5]) + 1][1:]
mlp = sys.argv[6 + int(sys.argv[5]):]
open(os.path.join(work, "embed.out"), "w").write(run([os.path.join(build, "embed"), os.path.join(root, "examples", "logreg.tg")] + logreg))
data = os.path.join(root, "examples", "data")
open(os.path.join(work, "train_logreg.out"), "w").write(run([os.path.join(build, "train_logreg"), os.path.join(data, "logreg_X.npy"), os.path.join(data, "logreg_y.npy")]))
tgc = os.path.join(prefix, "bin", "tgc")
open(os.path.join(work, "tgc.out"), "w").write(run([tgc, "run", os.path.join(root, "examples", "mlp.tg")] + mlp))
run([tgc, "compile", os.path.join(root, "examples", "logreg.tg"), "--emit=lib", "-o", os.path.join(work, "lib", "logreg")])
assert os.path.getsize(os.path.join(work, "lib", "liblogreg.a")) > 0
for binary in [tgc, os.path.join(prefix, "lib", "libtgc.so"), os.path.join(build, "embed"), os.path.join(build, "train_logreg")]:
    for line in run(["ldd", binary]).splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] != "=>":
            continue
        soname, path = parts[0], os.path.realpath(parts[2])
        if path.startswith(os.path.realpath(prefix) + "/lib/") or re.match(base, soname):
            continue
        sys.exit("%s takes %s from %s, not from the prefix or the base system" % (binary, soname, path))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="the build folder to install")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    for tool in ("cmake", "c++", "ldd"):
        if not shutil.which(tool):
            print("skipped: %s is not installed" % tool)
            return 0
    with tempfile.TemporaryDirectory() as work:
        prefix = os.path.join(work, "prefix")
        run(["cmake", "--install", build, "--prefix", prefix])
        expected_logreg = run([os.path.join(build, "tgc"), "run", os.path.join(ROOT, "examples", "logreg.tg"),
                               "--device=cpu"] + LOGREG)
        expected_mlp = run([os.path.join(build, "tgc"), "run", os.path.join(ROOT, "examples", "mlp.tg")] + MLP)
        expected_loss = run([os.path.join(build, "tgc"), "run", os.path.join(ROOT, "examples", "logreg.tg"),
                             "--device=cpu", "--steps", "50"] + LOGREG[:4])
        checks = os.path.join(work, "checks.py")
        with open(checks, "w") as f:
            f.write(CHECKS)
        command = [sys.executable, checks, prefix, work, ROOT, BASE_SYSTEM.pattern, str(len(LOGREG))] + LOGREG + MLP
        empty = os.path.join(work, "empty")
        os.mkdir(empty)
        script = "set -e\nfor path in %s; do\n  [ -e \"$path\" ] || continue\n" \
                 "  if [ -d \"$path\" ]; then mount --bind %s \"$path\"; else mount --bind /dev/null \"$path\"; fi\n" \
                 "done\nexec %s\n" % (" ".join(HIDDEN), empty, " ".join("'%s'" % arg for arg in command))
        hidden = os.geteuid() == 0 and subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode == 0
        if hidden:
            result = subprocess.run(["unshare", "--mount", "bash", "-c", script], capture_output=True, text=True)
        else:
            print("note: no mount namespace here (not root): the checks run with the build's packages visible")
            result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            print(result.stdout + result.stderr)
            return 1
        embed_out = open(os.path.join(work, "embed.out")).read()
        tgc_out = open(os.path.join(work, "tgc.out")).read()
        assert same_numbers(expected_logreg, embed_out), "embed printed\n%s\ntgc run printed\n%s" % (embed_out, expected_logreg)
        trained = open(os.path.join(work, "train_logreg.out")).read()
        assert numcheck.line_matches(expected_loss.strip().replace(" = ", " "), trained.splitlines()[0], 1e-5, 1e-6), (
            expected_loss, trained)
        assert same_numbers(expected_mlp, tgc_out), "P/bin/tgc printed\n%s\nbuild/tgc printed\n%s" % (tgc_out, expected_mlp)
        where = "with LLVM, ANTLR, OpenBLAS, oneDNN and libedit hidden" if hidden else "with nothing hidden"
        print("ok: %s: examples/embed (find_package(tgc)) trains logreg.tg as tgc run does, through the library "
              "and through tgc_add_library's; P/bin/tgc runs mlp.tg and compiles a library; every library comes "
              "from the prefix or the base system" % where)
    return 0


if __name__ == "__main__":
    sys.exit(main())
