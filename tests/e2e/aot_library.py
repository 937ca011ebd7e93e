#!/usr/bin/python3
"""Libraries made ahead of time (tgc compile --emit=lib) print what tgc run prints.

For each training example: compile it to a library, build examples/aot (a C++ program, with CMake) against
it, run both it and `tgc run` for the same steps, and compare every number printed (relative 1e-5: the same
kernels, so they agree to the last digit in practice). The program must not link LLVM or ANTLR (ldd). A C
program using the typed API of logreg.h (compiled as C, so the header is C) trains the params as tgc run
does (--out w=...), and the library's errors carry the script's locations.

  /usr/bin/python3 tests/e2e/aot_library.py --tgc build/tgc [--fake-cuda build/tests/libtgc_fake_cuda.so
      --fake-cublas build/tests/libtgc_fake_cublas.so]
"""
import argparse
import ctypes
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

RUNS = [
    ("logreg.tg", ["X=logreg_X.npy", "y=logreg_y.npy"], 200, 50),
    ("mlp.tg", ["X=spiral_X.npy", "labels=spiral_y.npy"], 300, 100),
    ("embedding.tg", [], 40, 10),
    ("cnn.tg", ["x=fashion32_x.npy", "labels=fashion32_y.npy"], 4, 2),
    ("char_rnn.tg", ["seq=gpl64_windows.npy", "prompt=gpl_prompt.npy"], 2, 1),
]



def run(args, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise RuntimeError("failed (%d): %s\n%s%s" % (result.returncode, " ".join(args), result.stdout, result.stderr))
    return result.stdout


def same_numbers(expected, actual):
    """Whether two printouts say the same, numbers compared as numbers (tests/e2e/numcheck.py)."""
    return numcheck.text_matches(expected, actual, rtol=1e-5, atol=1e-7)


def build(model, work):
    """Configures and builds examples/aot against the library `model` (DIR/NAME); returns the program."""
    build_dir = os.path.join(work, os.path.basename(model) + "-build")
    run(["cmake", "-S", os.path.join(ROOT, "examples", "aot"), "-B", build_dir, "-DMODEL=" + model,
         "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", build_dir])
    return os.path.join(build_dir, "run_model")


def check_links_no_compiler(program):
    libraries = run(["ldd", program])
    for forbidden in ("libLLVM", "antlr"):
        assert forbidden not in libraries, "%s links %s:\n%s" % (program, forbidden, libraries)


def check_examples(tgc, work):
    for example, inputs, steps, every in RUNS:
        model = os.path.join(work, example.split(".")[0])
        run([tgc, "compile", os.path.join(ROOT, "examples", example), "--emit=lib", "-o", model])
        program = build(model, work)
        check_links_no_compiler(program)
        args = ["--steps", str(steps), "--print-every", str(every)]
        for assignment in inputs:
            name, file = assignment.split("=")
            args += ["--in", "%s=%s" % (name, os.path.join(DATA, file))]
        expected = run([tgc, "run", os.path.join(ROOT, "examples", example), "--device=cpu"] + args)
        actual = run([program] + args)
        assert same_numbers(expected, actual), "%s: the library printed\n%s\ntgc run printed\n%s" % (
            example, actual, expected)
        print("ok: %s, %d steps: the library prints what tgc run prints" % (example, steps))


def check_typed_c(tgc, work):
    """examples/aot/train_logreg.c (built with the logreg library by check_examples): the typed C API."""
    program = os.path.join(work, "logreg-build", "train_logreg")
    X, y = os.path.join(DATA, "logreg_X.npy"), os.path.join(DATA, "logreg_y.npy")
    out = run([program, X, y])
    w_file, b_file = os.path.join(work, "w.npy"), os.path.join(work, "b.npy")
    expected = run([tgc, "run", os.path.join(ROOT, "examples", "logreg.tg"), "--device=cpu", "--in", "X=" + X,
                    "--in", "y=" + y, "--steps", "50", "--out", "w=" + w_file, "--out", "b=" + b_file])
    loss = float(re.search(r"loss = (\S+)", expected).group(1))
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert np.isclose(float(lines["loss"]), loss, rtol=1e-5), out
    assert np.allclose([float(v) for v in lines["w"].split()], np.load(w_file), rtol=1e-5), out
    assert np.isclose(float(lines["b"]), np.load(b_file), rtol=1e-5), out
    assert re.search(r"wrong shape: 1 .*logreg\.tg:6:8: input 'X': dimension 1 is 3", out), out
    assert "set: 0 0 0 0" in out, out
    assert re.search(r"device cuda: 3 device cuda: the library has no device code", out), out
    print("ok: train_logreg.c, over the typed C API of logreg.h, trains the params as tgc run does; errors "
          "say where")


def check_device(tgc, work, fake_cuda, fake_cublas):
    """Libraries with device code (--device=auto), one per training example: where no GPU answers they run on the
    CPU and print what tgc run prints; asked for cuda, they say why not; on the fake CUDA driver
    (tests/fake_cuda) they launch what `tgc run --device=cuda` launches, primitive for primitive
    (TGC_DEVICE_TRACE), every kernel found in the library."""
    missing = dict(os.environ, TGC_CUDA_DRIVER="/nonexistent/libcuda.so.1")
    for example, inputs, steps, every in RUNS:
        script = os.path.join(ROOT, "examples", example)
        model = os.path.join(work, "device", example.split(".")[0])
        run([tgc, "compile", script, "--emit=lib", "--device=auto", "-o", model])
        program = build(model, work)
        args = []
        for assignment in inputs:
            name, file = assignment.split("=")
            args += ["--in", "%s=%s" % (name, os.path.join(DATA, file))]
        expected = run([tgc, "run", script, "--device=cpu", "--steps", "2"] + args)
        actual = run([program, "--steps", "2"] + args, env=missing)
        assert same_numbers(expected, actual), "%s: auto without a GPU printed\n%s\ntgc run printed\n%s" % (
            example, actual, expected)
        result = subprocess.run([program, "--device", "cuda"] + args, capture_output=True, text=True, env=missing)
        assert result.returncode == 1 and "device cuda: " in result.stderr, result
        if not fake_cuda:
            continue
        traces = []
        for command in ([tgc, "run", script, "--device=cuda"], [program, "--device", "cuda"]):
            trace = os.path.join(work, "trace%d.txt" % len(traces))
            env = dict(os.environ, TGC_CUDA_DRIVER=fake_cuda, TGC_DEVICE_TRACE=trace)
            if fake_cublas:
                env["TGC_CUBLAS"] = fake_cublas
            run(command + args + ["--steps", "2"], env=env)
            traces.append(open(trace).read().splitlines())
        assert len(traces[0]) > 10 and traces[0] == traces[1], "%s: the library's device trace differs from tgc " \
            "run's:\n%s" % (example, "\n".join(line for line in traces[1] if line not in traces[0])[:2000])
        print("ok: %s with device code: on the CPU where no GPU answers; on the fake CUDA driver it launches what "
              "tgc run --device=cuda launches (%d trace lines)" % (example, len(traces[0])))
    if not fake_cuda:
        print("ok: libraries with device code run on the CPU where no GPU answers (no fake driver given)")


class TgcArray(ctypes.Structure):  # tgc_array (runtime/aot/tgc_aot.h)
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int32), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("data", ctypes.c_void_p)]


def check_shared(tgc, work):
    """--shared: libNAME.so, opened with ctypes, trains as tgc run does; inputs without data, or with a negative
    rank, are the caller's errors (TGC_ERROR_INPUT), said in words."""
    model = os.path.join(work, "shared", "logreg")
    run([tgc, "compile", os.path.join(ROOT, "examples", "logreg.tg"), "--emit=lib", "--shared", "-o", model])
    shared = os.path.join(work, "shared", "liblogreg.so")
    check_links_no_compiler(shared)
    library = ctypes.CDLL(shared)
    library.tgc_last_error.restype = ctypes.c_char_p
    table = ctypes.c_void_p.in_dll(library, "logreg_library")
    handle = ctypes.c_void_p()
    assert library.tgc_model_open(ctypes.byref(table), None, ctypes.byref(handle)) == 0, library.tgc_last_error()
    X, y = np.load(os.path.join(DATA, "logreg_X.npy")), np.load(os.path.join(DATA, "logreg_y.npy"))
    shapes = [(ctypes.c_int64 * 2)(*X.shape), (ctypes.c_int64 * 1)(*y.shape)]
    inputs = (TgcArray * 2)(TgcArray(0, 2, shapes[0], X.ctypes.data), TgcArray(0, 1, shapes[1], y.ctypes.data))
    outputs = (TgcArray * 1)()
    for _ in range(50):
        assert library.tgc_model_step(handle, inputs, outputs) == 0, library.tgc_last_error()
    loss = ctypes.cast(outputs[0].data, ctypes.POINTER(ctypes.c_float))[0]
    expected = run([tgc, "run", os.path.join(ROOT, "examples", "logreg.tg"), "--device=cpu", "--steps", "50", "--in",
                    "X=" + os.path.join(DATA, "logreg_X.npy"), "--in", "y=" + os.path.join(DATA, "logreg_y.npy")])
    assert np.isclose(loss, float(expected.split("=")[1]), rtol=1e-5), (loss, expected)
    inputs[0].data = None
    assert library.tgc_model_run(handle, inputs, outputs) == 1
    assert b"missing input 'X'" in library.tgc_last_error(), library.tgc_last_error()
    inputs[0].data, inputs[0].rank = X.ctypes.data, -1
    assert library.tgc_model_run(handle, inputs, outputs) == 1
    assert b"input 'X': rank -1 is negative" in library.tgc_last_error(), library.tgc_last_error()
    library.tgc_model_close(handle)
    print("ok: --shared: liblogreg.so through ctypes trains as tgc run does; bad arrays are input errors")


def check_usage_errors(tgc, work):
    script = os.path.join(ROOT, "examples", "logreg.tg")
    for args, message in [
        (["--emit=lib"], "--emit=lib needs -o DIR/NAME"),
        (["--emit=lib", "-o", os.path.join(work, "x"), "--host-cpu", "pentium9"], "unknown host CPU 'pentium9'"),
        (["--emit=ir", "--shared"], "--shared goes with --emit=lib"),
    ]:
        result = subprocess.run([tgc, "compile", script] + args, capture_output=True, text=True)
        assert result.returncode == 2 and message in result.stderr, (args, result.returncode, result.stderr)
    result = subprocess.run([os.path.join(work, "mlp-build", "run_model"), "--device", "gpu"], capture_output=True,
                            text=True)
    assert result.returncode == 1 and "unknown device 'gpu'; expected cpu, cuda or auto" in result.stderr, result
    # Compiled for another CPU level than this machine's: the library is written (it need not run here).
    run([tgc, "compile", script, "--emit=lib", "-o", os.path.join(work, "v2", "logreg"), "--host-cpu", "x86-64-v2"])
    assert os.path.getsize(os.path.join(work, "v2", "liblogreg.a")) > 0
    print("ok: usage errors; a library for x86-64-v2")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", required=True)
    parser.add_argument("--fake-cuda", help="the fake CUDA driver (tests/fake_cuda) for the device library's trace")
    parser.add_argument("--fake-cublas", help="the fake cuBLAS, with --fake-cuda")
    args = parser.parse_args()
    tgc = os.path.abspath(args.tgc)
    for tool in ("cmake", "ldd"):
        if not shutil.which(tool):
            print("skipped: %s is not installed" % tool)
            return 0
    with tempfile.TemporaryDirectory() as work:
        check_examples(tgc, work)
        check_typed_c(tgc, work)
        check_device(tgc, work, args.fake_cuda and os.path.abspath(args.fake_cuda),
                     args.fake_cublas and os.path.abspath(args.fake_cublas))
        check_shared(tgc, work)
        check_usage_errors(tgc, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
