#!/usr/bin/python3
"""Which BLAS runs tgc's matmuls best on this CPU: single-precision GEMM GFLOP/s of each candidate at 64^3,
256^3, 1024^3 and 4096^3, side by side, with every core.

  python3 bench/blas.py [--repeat 3]

Candidates (Debian packages): OpenBLAS as it loads (libopenblas-dev; it names the core it chose), OpenBLAS with
the core named from the CPU's features (OPENBLAS_CORETYPE: SkylakeX with AVX-512, Haswell with AVX2; a second
process, as the variable is read when the library loads), BLIS (libblis-dev; it names the configuration it
dispatched to) and oneDNN (libdnnl-dev), each with its own threads and called through ctypes (the call's own
cost, about a microsecond, is in every figure alike); then tgc's own f32 matmul, as it runs in a compiled
program (`a @ b`, with build/python on PYTHONPATH): oneDNN one call per thread on tgc's threads, tgc's
direct kernel up to 96^3 (runtime/Blas.h). Its figures include a program call and the result's allocation.
A library that is not installed is skipped.
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import subprocess
import sys
import time

import numpy as np

SIZES = (64, 256, 1024, 4096)
ROW_MAJOR, NO_TRANS = 101, 111


def core_from_features():
    flags = open("/proc/cpuinfo").read()
    if " avx512f " in flags and " avx512bw " in flags:
        return "SkylakeX"
    if " avx2 " in flags and " fma " in flags:
        return "Haswell"
    return None


def load(name):
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def pointers(*arrays):
    return [x.ctypes.data_as(ctypes.POINTER(ctypes.c_float)) for x in arrays]


def gemm_caller(library):
    """(prepare, what it picked) for a library, or None when absent: prepare(a, b, c) gives a function of
    no arguments that computes a @ b (square, f32, C order) and returns it."""
    float_p = ctypes.POINTER(ctypes.c_float)
    if library == "tgc":
        try:
            import tgc
        except ImportError:
            return None
        program = tgc.compile("input a : f32[n, n]\ninput b : f32[n, n]\noutput a @ b\n", device="cpu")

        def prepare(a, b, c):
            return lambda: next(iter(program(a=a, b=b).values()))
        return prepare, "oneDNN/tgc"
    if library == "oneDNN":
        dnnl = load("libdnnl.so.2")
        if not dnnl:
            return None
        dnnl.dnnl_sgemm.argtypes = [ctypes.c_char, ctypes.c_char, ctypes.c_int64, ctypes.c_int64,
                                    ctypes.c_int64, ctypes.c_float, float_p, ctypes.c_int64, float_p,
                                    ctypes.c_int64, ctypes.c_float, float_p, ctypes.c_int64]

        def prepare(a, b, c):
            n, (pa, pb, pc) = len(a), pointers(a, b, c)

            def call():
                if dnnl.dnnl_sgemm(b"N", b"N", n, n, n, 1.0, pa, n, pb, n, 0.0, pc, n) != 0:
                    raise SystemExit("dnnl_sgemm failed")
                return c
            return call
        return prepare, "dnnl_sgemm"
    lib = load("libblis.so.4" if library == "BLIS" else "libopenblas.so.0")
    if not lib:
        return None
    lib.cblas_sgemm.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                ctypes.c_int, ctypes.c_float, float_p, ctypes.c_int, float_p, ctypes.c_int,
                                ctypes.c_float, float_p, ctypes.c_int]
    if library == "BLIS":
        lib.bli_arch_string.restype = ctypes.c_char_p
        lib.bli_thread_set_num_threads(os.cpu_count())
        picked = lib.bli_arch_string(lib.bli_arch_query_id()).decode()
    else:
        lib.openblas_get_corename.restype = ctypes.c_char_p
        picked = lib.openblas_get_corename().decode()

    def prepare(a, b, c):
        n, (pa, pb, pc) = len(a), pointers(a, b, c)

        def call():
            lib.cblas_sgemm(ROW_MAJOR, NO_TRANS, NO_TRANS, n, n, n, 1.0, pa, n, pb, n, 0.0, pc, n)
            return c
        return call
    return prepare, picked


def measure(library, repeat):
    """{size: GFLOP/s} and what the library picked, in this process."""
    found = gemm_caller(library)
    if not found:
        return None
    prepare, picked = found
    rates = {}
    for n in SIZES:
        a, b = (np.random.default_rng(n).standard_normal((n, n)).astype(np.float32) for _ in range(2))
        call = prepare(a, b, np.zeros((n, n), np.float32))
        np.testing.assert_allclose(call(), a @ b, rtol=1e-3, atol=1e-3 * n)
        calls = max(1, int(2e9 / (2 * n ** 3)))  # about a second's work at 2 GFLOP/s, at least one call
        best = 1e30
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(calls):
                call()
            best = min(best, (time.perf_counter() - start) / calls)
        rates[n] = 2 * n ** 3 / best / 1e9
    return {"picked": picked, "rates": rates}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # measure one library in this process, print JSON
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.repeat)))
        return
    core = core_from_features()
    candidates = [("OpenBLAS as it loads", "OpenBLAS", {}),
                  ("OpenBLAS, core %s" % core, "OpenBLAS", {"OPENBLAS_CORETYPE": core}) if core else None,
                  ("BLIS", "BLIS", {}), ("oneDNN", "oneDNN", {}), ("tgc's matmul", "tgc", {})]
    print("%-28s %-12s %s" % ("library", "picked", " ".join("%10s" % ("%d^3" % n) for n in SIZES)))
    for candidate in filter(None, candidates):
        label, library, environment = candidate
        result = subprocess.run([sys.executable, __file__, "--one", library, "--repeat", str(args.repeat)],
                                capture_output=True, text=True, env=dict(os.environ, **environment))
        measured = json.loads(result.stdout) if result.returncode == 0 else None
        if not measured:
            print("%-28s %s" % (label, "absent" if result.returncode == 0 else result.stderr.strip()[-200:]))
            continue
        print("%-28s %-12s %s" % (label, measured["picked"],
                                  " ".join("%10.1f" % measured["rates"][str(n)] for n in SIZES)))


if __name__ == "__main__":
    main()
