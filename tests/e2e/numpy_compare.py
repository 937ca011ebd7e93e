#!/usr/bin/env python3
"""End-to-end test: tgc scripts against NumPy.

Each case is a tgc expression over named inputs and an equivalent NumPy expression. Cases that share inputs form a
group; a group becomes ONE script (`let case01 = ...` per case, one `output` line) and ONE `tgc run`, with the inputs
saved as .npy files (fixed `RandomState` seeds; value ranges chosen so that every function is defined where it is
meant to be). If a group's run fails, each of its cases is run alone, so that every failure is reported against its
own expression.

A result must match NumPy's exactly in dtype and shape, and in value:
  integers and bools   exactly;
  f32                  np.allclose(rtol=1e-5, atol=1e-6);
  f64                  np.allclose(rtol=1e-12, atol=1e-12);
  transcendental       (TRANS) f32 rtol=1e-4 atol=1e-6, f64 rtol=1e-10 atol=1e-10: exp/sin/cos/pow/... of larger
                       arguments, where libm, NumPy's SIMD loops and LLVM's math may differ by a few ulps;
  accumulating         (ACCUM) f32 rtol=1e-5 atol=1e-5, f64 rtol=1e-12 atol=1e-12: sums, means and matmuls, whose
                       rounding error scales with the summed magnitudes rather than with the result (the order of
                       accumulation is not specified);
  a few cases set their own tolerance (e.g. atol=0 for log1p/expm1 of tiny arguments, to test their precision).
NaN positions must match (equal_nan=True); infinities must match in sign.

The language follows NumPy's promotion with NEP 50-style weak literals (`x * 2.0` keeps x's dtype), while the
NumPy 1.24 used here applies value-based casting to Python scalars and 0-d arrays. Where the two disagree, or where
tgc's defaults differ from NumPy's (float creation ops default to f32), the reference is computed with explicit
dtypes and a comment says so.

Usage: numpy_compare.py --tgc build/tgc [--device cpu] [--run-option=OPTION]... [-k SUBSTRING] [-v] [--keep]
The last line printed is exactly `N passed, M failed`; the exit status is non-zero on any failure.
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from types import SimpleNamespace

import numpy as np

TGC_DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.int32): "i32",
              np.dtype(np.int64): "i64", np.dtype(np.bool_): "bool"}

# Tolerances (rtol, atol) by result dtype; see the module docstring.
DEFAULT = {"f32": (1e-5, 1e-6), "f64": (1e-12, 1e-12)}
TRANS = {"f32": (1e-4, 1e-6), "f64": (1e-10, 1e-10)}
ACCUM = {"f32": (1e-5, 1e-5), "f64": (1e-12, 1e-12)}

F32, F64, I32, I64, BOOL = np.float32, np.float64, np.int32, np.int64, np.bool_

# NumPy has no erf: math.erf elementwise, in f64, cast to the input's float dtype by the cases.
_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x, dtype=None):
    return _erf(x).astype(dtype or (x.dtype if x.dtype.kind == "f" else np.float64))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def inc_subtensor(x, index, value):
    """Theano's inc_subtensor(x[index], value): NumPy's add.at on a copy (repeated indices accumulate)."""
    y = x.copy()
    np.add.at(y, index, value)
    return y


def set_subtensor(x, index, value):
    y = x.copy()
    y[index] = value
    return y


def one_hot(indices, classes, dtype=np.float32):
    return (indices[..., None] == np.arange(classes)).astype(dtype)


def stable_argsort(x, axis=-1):
    return np.argsort(x, axis=axis, kind="stable")


class Case:
    """One expression. `ref(v)` computes the expected array from the inputs (v.NAME); or, for properties that have
    no reference (random numbers), `check(got, outs)` returns an error message or None (`outs`: the group's results
    by case name). `tol` is DEFAULT, TRANS, ACCUM or a (rtol, atol) pair. `computed_index`: the case indexes with
    values computed in the script, which may be computed on the device (device_trace.py leaves it out: the fake
    CUDA driver runs no kernel, so such an index holds whatever its buffer held)."""

    def __init__(self, expr, ref=None, check=None, tol=None, name=None, computed_index=False):
        assert (ref is None) != (check is None)
        self.expr, self.ref, self.check, self.tol, self.name = expr, ref, check, tol, name
        self.computed_index = computed_index


C = Case


class Group:
    """Cases sharing inputs, run as one script. `inputs` maps names to arrays; `types` overrides the declared type
    of some inputs (symbolic dimensions); `files` are .npy files written next to the script (for load())."""

    def __init__(self, name, cases, inputs=None, types=None, files=None):
        self.name, self.cases = name, cases
        self.inputs, self.types, self.files = inputs or {}, types or {}, files or {}
        for i, case in enumerate(cases):
            case.name = case.name or "case%02d" % (i + 1)
            case.group = self

    def declared_type(self, name):
        if name in self.types:
            return self.types[name]
        array = self.inputs[name]
        dtype = TGC_DTYPES[array.dtype]
        return dtype if array.ndim == 0 else "%s[%s]" % (dtype, ", ".join(str(d) for d in array.shape))

    def used_inputs(self, cases):
        """The inputs that `cases` name, or whose symbolic dimensions they name, in declaration order."""
        def named(word):
            return any(re.search(r"\b%s\b" % re.escape(word), case.expr) for case in cases)
        return [name for name in self.inputs
                if named(name) or any(named(dim) for dim in re.findall(r"[A-Za-z_]\w*", self.types.get(name, "")))]

    def source(self, cases):
        """The script computing `cases`, declaring the inputs they use."""
        lines = ["# numpy_compare.py, group %s" % self.name]
        lines += ["input %s : %s" % (name, self.declared_type(name)) for name in self.used_inputs(cases)]
        lines += ["let %s = %s" % (case.name, case.expr) for case in cases]
        lines.append("output " + ", ".join(case.name for case in cases))
        return "\n".join(lines) + "\n"


# ---- Input data --------------------------------------------------------------------------------------------------

def uniform(rs, lo, hi, shape, dtype=F32):
    return np.asarray(rs.uniform(lo, hi, shape)).astype(dtype)


def integers(rs, lo, hi, shape, dtype=I32):
    return np.asarray(rs.randint(lo, hi, shape)).astype(dtype)


def booleans(rs, shape, p=0.5):
    return np.asarray(rs.uniform(size=shape) < p)


def nonzero(rs, lo, hi, shape, dtype=F32):
    """Uniform magnitudes in [lo, hi) with random signs: safe divisors."""
    return (uniform(rs, lo, hi, shape, np.float64) * rs.choice([-1.0, 1.0], shape)).astype(dtype)


HALVES = [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997, -0.51, 4.5, 1e-3]


def groups():
    out = []

    # -- Elementwise functions, f32 ------------------------------------------------------------------------------
    rs = np.random.RandomState(1)
    x = uniform(rs, -3, 3, (3, 4))
    v = dict(x=x,
             p=uniform(rs, 0.1, 5, (3, 4)),                        # positive: log, sqrt, rsqrt
             big=uniform(rs, -10, 10, (3, 4)),                     # larger arguments: TRANS
             tiny=uniform(rs, 1e-7, 1e-3, (8,)),                   # log1p/expm1 precision
             h=np.array(HALVES, F32),                              # round: half to even
             z=np.array([-2, -0.0, 0, 3, -1e-3, 5], F32))          # sign and abs at zero
    out.append(Group("unary_f32", inputs=v, cases=[
        C("neg(x)", lambda v: -v.x),
        C("-x", lambda v: -v.x),
        C("abs(z)", lambda v: np.abs(v.z)),
        C("exp(x)", lambda v: np.exp(v.x)),
        C("exp(big)", lambda v: np.exp(v.big), tol=TRANS),
        C("log(p)", lambda v: np.log(v.p)),
        C("log1p(p)", lambda v: np.log1p(v.p)),
        C("log1p(tiny)", lambda v: np.log1p(v.tiny), tol=(1e-5, 0)),
        C("expm1(x)", lambda v: np.expm1(v.x)),
        C("expm1(tiny)", lambda v: np.expm1(v.tiny), tol=(1e-5, 0)),
        C("sqrt(p)", lambda v: np.sqrt(v.p)),
        C("rsqrt(p)", lambda v: 1 / np.sqrt(v.p)),
        C("sin(x)", lambda v: np.sin(v.x)),
        C("sin(big)", lambda v: np.sin(v.big), tol=TRANS),
        C("cos(big)", lambda v: np.cos(v.big), tol=TRANS),
        C("tanh(big)", lambda v: np.tanh(v.big)),
        C("sigmoid(big)", lambda v: sigmoid(v.big), tol=TRANS),
        C("relu(x)", lambda v: np.maximum(v.x, F32(0))),
        C("softplus(big)", lambda v: np.logaddexp(F32(0), v.big), tol=TRANS),
        C("floor(x)", lambda v: np.floor(v.x)),
        C("ceil(x)", lambda v: np.ceil(v.x)),
        C("round(h)", lambda v: np.round(v.h)),
        C("sign(z)", lambda v: np.sign(v.z)),
        C("erf(x)", lambda v: erf(v.x)),
        C("tan(x * 0.4)", lambda v: np.tan(v.x * F32(0.4)), tol=TRANS),
        C("atan(big)", lambda v: np.arctan(v.big), tol=TRANS),
        C("sinh(x)", lambda v: np.sinh(v.x), tol=TRANS),
        C("cosh(x)", lambda v: np.cosh(v.x), tol=TRANS),
        C("log2(p)", lambda v: np.log2(v.p), tol=TRANS),
        C("exp2(big)", lambda v: np.exp2(v.big), tol=TRANS),
        C("exp(-x) * sqrt(p) + 1.0", lambda v: np.exp(-v.x) * np.sqrt(v.p) + 1.0),
    ]))

    # -- Elementwise functions, f64 ------------------------------------------------------------------------------
    rs = np.random.RandomState(2)
    v = dict(x=uniform(rs, -3, 3, (4, 5), F64),
             p=uniform(rs, 0.01, 20, (4, 5), F64),
             big=uniform(rs, -40, 40, (4, 5), F64),
             tiny=uniform(rs, 1e-12, 1e-6, (8,), F64),
             h=np.array(HALVES, F64),
             z=np.array([-2, -0.0, 0, 3, -1e-300, 5], F64))
    out.append(Group("unary_f64", inputs=v, cases=[
        C("neg(x)", lambda v: -v.x),
        C("abs(z)", lambda v: np.abs(v.z)),
        C("exp(x)", lambda v: np.exp(v.x), tol=TRANS),
        C("exp(big)", lambda v: np.exp(v.big), tol=TRANS),
        C("log(p)", lambda v: np.log(v.p), tol=TRANS),
        C("log1p(x * x)", lambda v: np.log1p(v.x * v.x), tol=TRANS),
        C("log1p(tiny)", lambda v: np.log1p(v.tiny), tol=(1e-12, 0)),
        C("expm1(x)", lambda v: np.expm1(v.x), tol=TRANS),
        C("expm1(tiny)", lambda v: np.expm1(v.tiny), tol=(1e-12, 0)),
        C("sqrt(p)", lambda v: np.sqrt(v.p)),
        C("rsqrt(p)", lambda v: 1 / np.sqrt(v.p)),
        C("sin(big)", lambda v: np.sin(v.big), tol=TRANS),
        C("cos(x)", lambda v: np.cos(v.x), tol=TRANS),
        C("tanh(x)", lambda v: np.tanh(v.x), tol=TRANS),
        C("sigmoid(big)", lambda v: sigmoid(v.big), tol=TRANS),
        C("relu(x)", lambda v: np.maximum(v.x, 0.0)),
        C("softplus(big)", lambda v: np.logaddexp(0.0, v.big), tol=TRANS),
        C("floor(big)", lambda v: np.floor(v.big)),
        C("ceil(big)", lambda v: np.ceil(v.big)),
        C("round(h)", lambda v: np.round(v.h)),
        C("sign(z)", lambda v: np.sign(v.z)),
        C("erf(x)", lambda v: erf(v.x), tol=TRANS),
        C("tan(x * 0.4)", lambda v: np.tan(v.x * 0.4), tol=TRANS),
        C("atan(big)", lambda v: np.arctan(v.big), tol=TRANS),
        C("sinh(x)", lambda v: np.sinh(v.x), tol=TRANS),
        C("cosh(x)", lambda v: np.cosh(v.x), tol=TRANS),
        C("log2(p)", lambda v: np.log2(v.p), tol=TRANS),
        C("exp2(big)", lambda v: np.exp2(v.big), tol=TRANS),
    ]))

    # -- Elementwise functions of integers and bools --------------------------------------------------------------
    rs = np.random.RandomState(3)
    v = dict(ai=integers(rs, -10, 10, (3, 4)),
             bi=integers(rs, -1000, 1000, (5,), I64),
             pi=integers(rs, 1, 50, (6,)),
             m=booleans(rs, (3, 4)),
             n=booleans(rs, (3, 4)))
    out.append(Group("unary_int", inputs=v, cases=[
        C("neg(ai)", lambda v: -v.ai),
        C("-bi", lambda v: -v.bi),
        C("abs(ai)", lambda v: np.abs(v.ai)),
        C("abs(bi)", lambda v: np.abs(v.bi)),
        C("sign(ai)", lambda v: np.sign(v.ai)),
        C("relu(ai)", lambda v: np.maximum(v.ai, 0)),
        C("round(ai)", lambda v: np.round(v.ai)),
        C("floor(ai)", lambda v: np.floor(v.ai)),                   # NumPy 1.24: f64
        C("ceil(bi)", lambda v: np.ceil(v.bi)),
        # Float-only functions of integers compute in f64, as NumPy does for i32/i64.
        C("exp(ai)", lambda v: np.exp(v.ai), tol=TRANS),
        C("sqrt(pi)", lambda v: np.sqrt(v.pi)),
        C("log(pi)", lambda v: np.log(v.pi), tol=TRANS),
        C("sin(bi)", lambda v: np.sin(v.bi), tol=TRANS),
        C("sigmoid(ai)", lambda v: sigmoid(v.ai.astype(F64)), tol=TRANS),
        C("erf(ai)", lambda v: erf(v.ai), tol=TRANS),
        C("log2(pi)", lambda v: np.log2(v.pi), tol=TRANS),
        C("exp2(ai)", lambda v: np.exp2(v.ai), tol=TRANS),
        C("atan(bi)", lambda v: np.arctan(v.bi), tol=TRANS),
        # NumPy 1.24 computes exp of bool in float16; tgc in its default float, f64.
        C("exp(m)", lambda v: np.exp(v.m.astype(F64)), tol=TRANS),
        C("abs(m)", lambda v: np.abs(v.m)),
        C("maximum(m, n)", lambda v: np.maximum(v.m, v.n)),
        C("m + n", lambda v: v.m + v.n),                            # NumPy: logical or
        C("m * n", lambda v: v.m * v.n),                            # NumPy: logical and
        C("m < n", lambda v: v.m < v.n),
        C("minimum(m, n)", lambda v: np.minimum(v.m, v.n)),
    ]))

    # -- Binary operators, broadcasting and promotion --------------------------------------------------------------
    rs = np.random.RandomState(4)
    v = dict(a=uniform(rs, -2, 2, (3, 4)),
             b=uniform(rs, -2, 2, (4,)),                     # a row
             c=nonzero(rs, 0.5, 2, (3, 1)),                  # a column, never zero
             d=uniform(rs, -1, 1, (3, 1, 4)),
             e=uniform(rs, -1, 1, (5, 1)),
             s=np.asarray(F32(1.75)),                         # a 0-d input
             s64=np.asarray(F64(-0.3)),
             pos=uniform(rs, 0.1, 3, (3, 4)),
             ad=uniform(rs, -2, 2, (3, 4), F64),
             bd=uniform(rs, -2, 2, (4,), F64),
             ia=integers(rs, -20, 20, (3, 4)),
             ib=np.array([-7, 3, -2, 5], I32),               # divisors of both signs, never zero
             ic=integers(rs, -100, 100, (3, 1), I64),
             ip=integers(rs, 0, 4, (3, 4)),                   # non-negative integer exponents
             m=booleans(rs, (3, 4)),
             n=booleans(rs, (4,)))
    out.append(Group("binary", inputs=v, cases=[
        C("a + b", lambda v: v.a + v.b),
        C("a - c", lambda v: v.a - v.c),
        C("b * c", lambda v: v.b * v.c),                      # row with column: (4,) * (3, 1) -> (3, 4)
        C("a / c", lambda v: v.a / v.c),
        C("d + e", lambda v: v.d + v.e),                      # (3, 1, 4) + (5, 1) -> (3, 5, 4)
        C("d * e - d", lambda v: v.d * v.e - v.d),
        C("s * a", lambda v: v.s * v.a),                      # 0-d input with a matrix
        C("a - s", lambda v: v.a - v.s),
        C("a ** 2.0", lambda v: v.a ** 2.0),
        C("-a**2", lambda v: -(v.a ** 2)),                    # -x**2 is -(x**2)
        C("+a - -b", lambda v: v.a + v.b),
        C("pos ** b", lambda v: v.pos ** v.b, tol=TRANS),
        C("pow(pos, c)", lambda v: np.power(v.pos, v.c), tol=TRANS),
        C("2.0 ** a", lambda v: F32(2.0) ** v.a, tol=TRANS),
        C("1.0 / pos", lambda v: 1.0 / v.pos),
        C("a % c", lambda v: np.mod(v.a, v.c)),               # % takes the divisor's sign
        C("a % 0.75", lambda v: np.mod(v.a, F32(0.75))),
        C("a % -0.75", lambda v: np.mod(v.a, F32(-0.75))),
        C("ia % ib", lambda v: np.mod(v.ia, v.ib)),
        C("ia % -3", lambda v: np.mod(v.ia, -3)),
        C("a // c", lambda v: np.floor_divide(v.a, v.c)),     # // rounds toward -inf, as NumPy's
        C("a // -0.75", lambda v: np.floor_divide(v.a, F32(-0.75))),
        C("ia // ib", lambda v: np.floor_divide(v.ia, v.ib)),
        C("ia // -3", lambda v: np.floor_divide(v.ia, -3)),
        C("7 // 2", lambda v: np.int64(3)),
        C("ia // ib * ib + ia % ib", lambda v: v.ia),         # a == b * (a // b) + a % b
        C("ia / ib", lambda v: v.ia / v.ib),                  # integer / gives f64
        C("ia / 2", lambda v: v.ia / 2),
        C("ia ** ip", lambda v: v.ia ** v.ip),
        C("2 ** ip", lambda v: 2 ** v.ip),
        C("ad * bd - ad / 3.0", lambda v: v.ad * v.bd - v.ad / 3.0),
        # Promotion.
        C("ia + a", lambda v: v.ia + v.a),                    # i32 + f32 -> f64
        C("ia + ic", lambda v: v.ia + v.ic),                  # i32 + i64 -> i64
        C("m + ia", lambda v: v.m + v.ia),                    # bool + i32 -> i32
        C("a * 2", lambda v: v.a * 2),                        # f32 * weak int -> f32
        C("a * 2.0", lambda v: v.a * 2.0),                    # f32 * weak float -> f32
        C("ia * 2", lambda v: v.ia * 2),                      # i32 * weak int -> i32
        C("ia * 2.5", lambda v: v.ia * 2.5),                  # i32 * weak float -> f64
        C("m * 2.5", lambda v: v.m * 2.5),                    # bool * weak float -> f64
        C("m + 1", lambda v: v.m.astype(I64) + 1),            # bool + weak int -> i64
        C("a + ad", lambda v: v.a + v.ad),                    # f32 + f64 -> f64
        C("ic * 3 + 1", lambda v: v.ic * 3 + 1),
        # A 0-d f64 input is a strong operand (NEP 50): f32 matrix + f64 scalar is f64. NumPy 1.24 would
        # give f32 (value-based casting of 0-d arrays), so the reference widens explicitly.
        C("a + s64", lambda v: v.a.astype(F64) + v.s64),
        # maximum, minimum, where, clip.
        C("maximum(a, b)", lambda v: np.maximum(v.a, v.b)),
        C("minimum(a, c)", lambda v: np.minimum(v.a, v.c)),
        C("maximum(ia, ic)", lambda v: np.maximum(v.ia, v.ic)),
        C("maximum(a, 0.5)", lambda v: np.maximum(v.a, F32(0.5))),
        C("minimum(ia, 3)", lambda v: np.minimum(v.ia, 3)),
        C("maximum(ia, 2.5)", lambda v: np.maximum(v.ia, 2.5)),
        C("where(m, a, b)", lambda v: np.where(v.m, v.a, v.b)),
        C("where(a > 0.0, a, 0.0)", lambda v: np.where(v.a > 0, v.a, F32(0))),
        C("where(m, ia, a)", lambda v: np.where(v.m, v.ia, v.a)),          # i32 with f32 -> f64
        C("where(c > 0.0, b, s)", lambda v: np.where(v.c > 0, v.b, v.s)),  # (3,1), (4,), () -> (3, 4)
        C("clip(a, -0.5, 0.5)", lambda v: np.clip(v.a, F32(-0.5), F32(0.5))),
        C("clip(ia, -5, 5)", lambda v: np.clip(v.ia, -5, 5)),
        C("clip(a, b - 1.0, b + 1.0)", lambda v: np.clip(v.a, v.b - 1, v.b + 1)),
        # Comparisons and logic.
        C("a < b", lambda v: v.a < v.b),
        C("a <= c", lambda v: v.a <= v.c),
        C("a > 0.5", lambda v: v.a > 0.5),
        C("a >= s", lambda v: v.a >= v.s),
        C("ia == ic", lambda v: v.ia == v.ic),
        C("ia != 0", lambda v: v.ia != 0),
        C("m == n", lambda v: v.m == v.n),
        C("m != n", lambda v: v.m != v.n),
        C("m and n", lambda v: v.m & v.n),
        C("m or n", lambda v: v.m | v.n),
        C("not m", lambda v: ~v.m),
        C("m and not n", lambda v: v.m & ~v.n),
        C("not a > 0.0", lambda v: ~(v.a > 0)),              # `not` is looser than comparisons
        C("a > -1.0 and a < 1.0 or m", lambda v: ((v.a > -1) & (v.a < 1)) | v.m),
        C("m or true", lambda v: v.m | True),
    ]))

    # -- NaN and infinities ------------------------------------------------------------------------------------------
    nan, inf = np.nan, np.inf
    v = dict(xn=np.array([1, nan, -2, 0, inf, -inf, 0.5], F64),
             yn=np.array([nan, 2, 3, nan, 1, -1, -0.5], F64),
             fn=np.array([-100, -1, -0.0, 0, 89, 100, inf, -inf, nan], F32))
    out.append(Group("nan_inf", inputs=v, cases=[
        C("xn + yn", lambda v: v.xn + v.yn),
        C("xn * 0.0", lambda v: v.xn * 0.0),
        C("maximum(xn, yn)", lambda v: np.maximum(v.xn, v.yn)),   # NaN propagates
        C("minimum(xn, yn)", lambda v: np.minimum(v.xn, v.yn)),
        C("log(xn)", lambda v: np.log(v.xn)),                     # log(0) = -inf, log(<0) = nan
        C("sqrt(xn)", lambda v: np.sqrt(v.xn)),
        C("exp(xn)", lambda v: np.exp(v.xn)),
        C("tanh(xn)", lambda v: np.tanh(v.xn), tol=TRANS),
        C("sigmoid(xn)", lambda v: sigmoid(v.xn), tol=TRANS),
        C("sign(xn)", lambda v: np.sign(v.xn)),
        C("floor(xn)", lambda v: np.floor(v.xn)),
        C("clip(xn, -1.0, 1.0)", lambda v: np.clip(v.xn, -1.0, 1.0)),
        C("xn < yn", lambda v: v.xn < v.yn),
        C("xn == xn", lambda v: v.xn == v.xn),
        C("xn != yn", lambda v: v.xn != v.yn),
        C("bool(xn)", lambda v: v.xn.astype(BOOL)),
        C("sum(xn)", lambda v: np.sum(v.xn)),
        C("max(yn)", lambda v: np.max(v.yn)),
        C("min(xn)", lambda v: np.min(v.xn)),
        C("argmax(xn)", lambda v: np.argmax(v.xn)),                 # the first NaN wins, as in NumPy
        C("sort(xn)", lambda v: np.sort(v.xn)),                     # NaN sorts last
        C("argsort(xn)", lambda v: stable_argsort(v.xn)),
        C("relu(xn)", lambda v: np.maximum(v.xn, 0.0)),             # relu(x) = maximum(x, 0): NaN propagates
        C("round(xn)", lambda v: np.round(v.xn)),
        C("softplus(xn)", lambda v: np.logaddexp(0.0, v.xn), tol=TRANS),
        C("erf(xn)", lambda v: erf(v.xn), tol=TRANS),
        C("exp(fn)", lambda v: np.exp(v.fn), tol=TRANS),            # overflows to inf in f32
        C("softplus(fn)", lambda v: np.logaddexp(F32(0), v.fn), tol=TRANS),
        C("sigmoid(fn)", lambda v: sigmoid(v.fn), tol=TRANS),
        C("tanh(fn)", lambda v: np.tanh(v.fn)),
        C("sqrt(fn)", lambda v: np.sqrt(v.fn)),
        C("rsqrt(fn)", lambda v: 1 / np.sqrt(v.fn)),                # rsqrt(0) = inf, rsqrt(-0.0) = -inf
        C("log1p(fn)", lambda v: np.log1p(v.fn)),                   # log1p(-1) = -inf
        C("expm1(fn)", lambda v: np.expm1(v.fn), tol=TRANS),        # expm1(-inf) = -1
        C("fn / 0.0", lambda v: v.fn / F32(0)),
    ]))

    # -- Weak float literals in f64 arithmetic keep their full precision ---------------------------------------------
    # (a literal is f32 only when nothing else decides its dtype: `x_f64 * 0.1` multiplies by the double 0.1)
    rs = np.random.RandomState(11)
    v = dict(ad=uniform(rs, -5, 5, (6,), F64),
             ia=integers(rs, -50, 50, (6,)),
             m=booleans(rs, (6,)))
    out.append(Group("f64_literals", inputs=v, cases=[
        C("ad * 0.1", lambda v: v.ad * 0.1),
        C("ad + 1.1", lambda v: v.ad + 1.1),
        C("0.3 - ad", lambda v: 0.3 - v.ad),
        C("ad / 1e-3", lambda v: v.ad / 1e-3),
        C("ia * 0.1", lambda v: v.ia * 0.1),                        # i32 * weak float -> f64
        C("m * 0.7", lambda v: v.m * 0.7),
        C("ia / 3 + 0.2", lambda v: v.ia / 3 + 0.2),
        C("maximum(ad, 0.1)", lambda v: np.maximum(v.ad, 0.1)),
        C("where(m, ad, 0.1)", lambda v: np.where(v.m, v.ad, 0.1)),
        C("clip(ad, -0.3, 0.7)", lambda v: np.clip(v.ad, -0.3, 0.7)),
        C("ad ** 0.3", lambda v: v.ad ** 0.3, tol=TRANS),                # NaN for negative bases
        C("ad > 0.1", lambda v: v.ad > 0.1),
        C("full([3], 0.1, dtype=f64)", lambda v: np.full(3, 0.1, F64)),
        C("arange(0, 1, 0.1, dtype=f64)", lambda v: np.arange(0, 1, 0.1, dtype=F64)),
        C("arange(0.5, -0.7, -0.3, dtype=f64)", lambda v: np.arange(0.5, -0.7, -0.3, dtype=F64)),
    ]))

    # -- 64-bit integers beyond 2**53 stay exact; fixed-width integers wrap as in NumPy ------------------------------
    v = dict(xl=np.array([2**53 + 1, 2**60 + 3, -2**62 - 1, 123456789012, 2**53], I64),
             yl=np.array([2**53, 2**60 + 4, -2**62 - 1, 123456789013, 2**53 + 1], I64),
             ia=np.array([7, -7, 0, -2**31, 2**31 - 1], I32),
             ib=np.array([0, 3, 0, -1, 0], I32))
    out.append(Group("int_exact", inputs=v, cases=[
        C("xl + 1", lambda v: v.xl + 1),
        C("xl - yl", lambda v: v.xl - v.yl),
        C("xl * 3", lambda v: v.xl * 3),
        C("xl % 1000000007", lambda v: np.mod(v.xl, 1000000007)),
        C("xl == yl", lambda v: v.xl == v.yl),
        C("xl < yl", lambda v: v.xl < v.yl),
        C("maximum(xl, yl)", lambda v: np.maximum(v.xl, v.yl)),
        C("sum(xl)", lambda v: np.sum(v.xl)),
        C("max(xl)", lambda v: np.max(v.xl)),
        C("min(yl)", lambda v: np.min(v.yl)),
        C("argmax(xl - yl)", lambda v: np.argmax(v.xl - v.yl)),
        C("sort(xl)", lambda v: np.sort(v.xl)),
        C("argsort(yl)", lambda v: stable_argsort(v.yl)),
        C("cumsum(xl)", lambda v: np.cumsum(v.xl)),
        C("where(xl > yl, xl, yl)", lambda v: np.where(v.xl > v.yl, v.xl, v.yl)),
        C("clip(xl, 0, 1152921504606846977)", lambda v: np.clip(v.xl, 0, 1152921504606846977)),
        C("full([2], 9007199254740992)", lambda v: np.full(2, 9007199254740992, I64)),  # 2**53: exact
        C("i32(xl)", lambda v: v.xl.astype(I32)),                  # wraps modulo 2**32
        C("ia * 1000000000", lambda v: v.ia * 1000000000),         # i32 overflow wraps
        C("abs(ia)", lambda v: np.abs(v.ia)),                      # abs(-2**31) = -2**31
        C("-ia", lambda v: -v.ia),
        C("ia % ib", lambda v: np.mod(v.ia, v.ib)),                # NumPy: x % 0 = 0 (with a warning)
        C("ia // ib", lambda v: np.floor_divide(v.ia, v.ib)),      # x // 0 = 0, INT_MIN // -1 = INT_MIN
        C("ia + ia", lambda v: v.ia + v.ia),
        C("sum(ia)", lambda v: np.sum(v.ia)),                      # i64: no overflow
    ]))

    # -- Empty arrays and 0-d values ------------------------------------------------------------------------------
    v = dict(e=np.zeros((4, 0), F32),
             x=np.arange(8, dtype=F32).reshape(4, 2),
             s=np.asarray(F64(-1.25)))
    out.append(Group("empty_and_0d", inputs=v, cases=[
        C("sum(e, axis=1)", lambda v: np.sum(v.e, axis=1)),
        C("prod(e, axis=1)", lambda v: np.prod(v.e, axis=1)),
        C("exp(e) + 1.0", lambda v: np.exp(v.e) + F32(1)),
        C("x[3:1]", lambda v: v.x[3:1]),
        C("concat([x[0:0], x], axis=0)", lambda v: np.concatenate([v.x[0:0], v.x])),
        C("mean(x[0:0], axis=0)", lambda v: np.mean(v.x[0:0], axis=0)),   # 0/0: NaN
        C("reshape(s, [1])", lambda v: v.s.reshape(1)),
        C("reshape(x[1, 1], [1, 1])", lambda v: v.x[1, 1].reshape(1, 1)),
        C("broadcast_to(s, [2, 3])", lambda v: np.broadcast_to(v.s, (2, 3))),
        C("s * x", lambda v: v.s * v.x.astype(F64)),               # a strong 0-d f64 widens (NEP 50)
        C("exp(s)", lambda v: np.exp(v.s)),
        C("sum(s)", lambda v: np.sum(v.s)),
        C("where(true, s, 0.0)", lambda v: np.asarray(v.s)),
        C("pow(0.0, 0.0)", lambda v: np.asarray(F32(1))),          # a literal alone is f32
        C("sqrt(-0.0)", lambda v: np.sqrt(F32(-0.0))),
        C("2 + 3", lambda v: np.asarray(5, I64)),                  # an integer literal alone is i64
        C("7 % -2", lambda v: np.asarray(-1, I64)),
        C("1.5 * 2", lambda v: np.asarray(3, F32)),
    ]))

    # -- Casts ---------------------------------------------------------------------------------------------------------
    v = dict(x=np.array([-2.7, -1.5, -0.5, -0.0, 0.3, 1.5, 2.9, 100.6], F32),
             xd=np.array([-1e9, -3.99, 0.0, 7.5, 1.0 / 3.0, 2.5e9], F64),
             xi=np.array([-3, 0, 1, 2, 2147483647], I32),
             xl=np.array([-5, 0, 7, 123456789012], I64),
             m=np.array([True, False, True], BOOL))
    out.append(Group("cast", inputs=v, cases=[
        C("i32(x)", lambda v: v.x.astype(I32)),              # truncates toward zero
        C("i64(x)", lambda v: v.x.astype(I64)),
        C("f64(x)", lambda v: v.x.astype(F64)),
        C("bool(x)", lambda v: v.x.astype(BOOL)),
        C("f32(xd)", lambda v: v.xd.astype(F32)),
        C("i64(xd)", lambda v: v.xd.astype(I64)),
        C("i32(xd[1:5])", lambda v: v.xd[1:5].astype(I32)),
        C("f32(xi)", lambda v: v.xi.astype(F32)),
        C("f64(xi)", lambda v: v.xi.astype(F64)),
        C("i64(xi)", lambda v: v.xi.astype(I64)),
        C("bool(xi)", lambda v: v.xi.astype(BOOL)),
        C("i32(xl[0:3])", lambda v: v.xl[0:3].astype(I32)),
        C("f64(xl)", lambda v: v.xl.astype(F64)),
        C("f32(m)", lambda v: v.m.astype(F32)),
        C("i32(m)", lambda v: v.m.astype(I32)),
        C("i64(m)", lambda v: v.m.astype(I64)),
        C("bool(m)", lambda v: v.m),
        C("f32(x)", lambda v: v.x),
    ]))

    # -- Reductions ------------------------------------------------------------------------------------------------
    rs = np.random.RandomState(5)
    v = dict(x3=uniform(rs, -1, 1, (3, 4, 5)),
             xd=uniform(rs, -5, 5, (4, 6), F64),
             xi=integers(rs, -5, 6, (4, 6)),
             xl=integers(rs, -1000, 1000, (7,), I64),
             xb=booleans(rs, (4, 6)),
             dup=integers(rs, 0, 3, (3, 4)).astype(F32))     # ties for argmax/argmin
    out.append(Group("reduce", inputs=v, cases=[
        C("sum(x3)", lambda v: np.sum(v.x3), tol=ACCUM),
        C("sum(x3, axis=1)", lambda v: np.sum(v.x3, axis=1), tol=ACCUM),
        C("sum(x3, axis=-1)", lambda v: np.sum(v.x3, axis=-1), tol=ACCUM),
        C("sum(x3, axis=[0, 2])", lambda v: np.sum(v.x3, axis=(0, 2)), tol=ACCUM),
        C("sum(x3, axis=[0, 2], keepdims=true)", lambda v: np.sum(v.x3, axis=(0, 2), keepdims=True), tol=ACCUM),
        C("sum(x3, keepdims=true)", lambda v: np.sum(v.x3, keepdims=True), tol=ACCUM),
        C("sum(xd, axis=0)", lambda v: np.sum(v.xd, axis=0), tol=ACCUM),
        C("sum(xi)", lambda v: np.sum(v.xi)),                                # integer sums are i64
        C("sum(xi, axis=0)", lambda v: np.sum(v.xi, axis=0)),
        C("sum(xb)", lambda v: np.sum(v.xb)),                                # bool sums are i64
        C("sum(xb, axis=1)", lambda v: np.sum(v.xb, axis=1)),
        C("sum(xl)", lambda v: np.sum(v.xl)),
        C("mean(x3)", lambda v: np.mean(v.x3), tol=ACCUM),
        C("mean(x3, axis=0)", lambda v: np.mean(v.x3, axis=0), tol=ACCUM),
        C("mean(x3, axis=[1, 2], keepdims=true)", lambda v: np.mean(v.x3, axis=(1, 2), keepdims=True), tol=ACCUM),
        C("mean(xd, axis=-1)", lambda v: np.mean(v.xd, axis=-1), tol=ACCUM),
        C("mean(xi)", lambda v: np.mean(v.xi), tol=ACCUM),                   # integer means are f64
        C("mean(xi, axis=1)", lambda v: np.mean(v.xi, axis=1), tol=ACCUM),
        C("mean(xb, axis=0)", lambda v: np.mean(v.xb, axis=0), tol=ACCUM),
        C("var(x3)", lambda v: np.var(v.x3), tol=ACCUM),
        C("var(x3, axis=[0, 2], keepdims=true)", lambda v: np.var(v.x3, axis=(0, 2), keepdims=True), tol=ACCUM),
        C("std(xd, axis=-1)", lambda v: np.std(v.xd, axis=-1), tol=ACCUM),
        C("std(x3, axis=1, ddof=1)", lambda v: np.std(v.x3, axis=1, ddof=1), tol=ACCUM),
        C("var(xi, axis=1)", lambda v: np.var(v.xi, axis=1), tol=ACCUM),               # integers: f64
        C("var(xb)", lambda v: np.var(v.xb), tol=ACCUM),
        C("prod(xi, axis=1)", lambda v: np.prod(v.xi, axis=1)),              # integer products are i64
        C("prod(x3, axis=2)", lambda v: np.prod(v.x3, axis=2)),
        C("prod(xd)", lambda v: np.prod(v.xd), tol=ACCUM),
        C("max(x3, axis=1)", lambda v: np.max(v.x3, axis=1)),
        C("min(x3, axis=-1, keepdims=true)", lambda v: np.min(v.x3, axis=-1, keepdims=True)),
        C("max(xi)", lambda v: np.max(v.xi)),
        C("min(xi, axis=0)", lambda v: np.min(v.xi, axis=0)),
        C("max(xd, axis=[0, 1])", lambda v: np.max(v.xd, axis=(0, 1))),
        C("min(xl)", lambda v: np.min(v.xl)),
        C("argmax(dup)", lambda v: np.argmax(v.dup)),                        # flat index; ties: the first
        C("argmax(dup, axis=1)", lambda v: np.argmax(v.dup, axis=1)),
        C("argmin(dup, axis=0)", lambda v: np.argmin(v.dup, axis=0)),
        C("argmin(dup)", lambda v: np.argmin(v.dup)),
        C("argmax(x3, axis=-1)", lambda v: np.argmax(v.x3, axis=-1)),
        C("argmin(xi, axis=1, keepdims=true)", lambda v: np.argmin(v.xi, axis=1, keepdims=True)),
        C("argmax(dup, keepdims=true)", lambda v: np.argmax(v.dup, keepdims=True)),
        C("argmax(xl)", lambda v: np.argmax(v.xl)),
        C("any(xb)", lambda v: np.any(v.xb)),
        C("all(xb, axis=0)", lambda v: np.all(v.xb, axis=0)),
        C("any(xb, axis=1, keepdims=true)", lambda v: np.any(v.xb, axis=1, keepdims=True)),
        C("all(xi)", lambda v: np.all(v.xi)),                                # non-bool: nonzero is true
        C("any(xi, axis=-1)", lambda v: np.any(v.xi, axis=-1)),
        C("any(x3 > 0.9, axis=[0, 1])", lambda v: np.any(v.x3 > 0.9, axis=(0, 1))),
        C("all(xd > -10.0)", lambda v: np.all(v.xd > -10)),
        C("sum(x3 * x3, axis=2) / 5.0", lambda v: np.sum(v.x3 * v.x3, axis=2) / F32(5), tol=ACCUM),
    ]))

    # -- Matrix products ----------------------------------------------------------------------------------------------
    rs = np.random.RandomState(6)
    v = dict(A=uniform(rs, -1, 1, (3, 4)),
             B=uniform(rs, -1, 1, (4, 5)),
             u=uniform(rs, -1, 1, (4,)),
             w=uniform(rs, -1, 1, (3,)),
             T=uniform(rs, -1, 1, (2, 3, 4)),
             T2=uniform(rs, -1, 1, (2, 4, 5)),
             Ad=uniform(rs, -1, 1, (3, 4), F64),
             Bd=uniform(rs, -1, 1, (4, 5), F64),
             Ai=integers(rs, -10, 10, (3, 4)),
             Bi=integers(rs, -10, 10, (4, 2)))
    out.append(Group("matmul", inputs=v, cases=[
        C("A @ B", lambda v: v.A @ v.B, tol=ACCUM),
        C("matmul(A, B)", lambda v: np.matmul(v.A, v.B), tol=ACCUM),
        C("u @ B", lambda v: v.u @ v.B, tol=ACCUM),                          # 1-D @ 2-D -> (5,)
        C("A @ u", lambda v: v.A @ v.u, tol=ACCUM),                          # 2-D @ 1-D -> (3,)
        C("u @ u", lambda v: np.asarray(v.u @ v.u), tol=ACCUM),              # 1-D @ 1-D -> 0-d
        C("w @ A", lambda v: v.w @ v.A, tol=ACCUM),
        C("T @ B", lambda v: v.T @ v.B, tol=ACCUM),                          # batched 3-D @ 2-D
        C("T @ T2", lambda v: v.T @ v.T2, tol=ACCUM),                        # batched 3-D @ 3-D
        C("T @ u", lambda v: v.T @ v.u, tol=ACCUM),                          # 3-D @ 1-D -> (2, 3)
        C("Ad @ Bd", lambda v: v.Ad @ v.Bd, tol=ACCUM),
        C("Ai @ Bi", lambda v: v.Ai @ v.Bi),                                 # integers: exact, i32
        C("A @ Bd", lambda v: v.A.astype(F64) @ v.Bd, tol=ACCUM),            # f32 @ f64 -> f64
        C("transpose(A) @ A", lambda v: v.A.T @ v.A, tol=ACCUM),
        C("A @ B + 1.0", lambda v: v.A @ v.B + F32(1), tol=ACCUM),
    ]))

    # -- Shapes: transpose, reshape, broadcast_to, concat, stack, slicing --------------------------------------------
    rs = np.random.RandomState(7)
    v = dict(x=uniform(rs, -1, 1, (3, 4)),
             y=uniform(rs, -1, 1, (3, 4)),
             x3=uniform(rs, -1, 1, (2, 3, 4)),
             xi=integers(rs, -50, 50, (6,)),
             yi=integers(rs, -50, 50, (3, 4)),
             row=uniform(rs, -1, 1, (3,)),
             col=uniform(rs, -1, 1, (3, 1)),
             m=booleans(rs, (2, 3)))
    out.append(Group("shape", inputs=v, cases=[
        C("transpose(x)", lambda v: v.x.T),
        C("transpose(x3)", lambda v: np.transpose(v.x3)),                    # reverses the axes
        C("transpose(x3, [1, 0, 2])", lambda v: np.transpose(v.x3, (1, 0, 2))),
        C("transpose(x3, [2, 0, 1])", lambda v: np.transpose(v.x3, (2, 0, 1))),
        C("reshape(x, [2, -1])", lambda v: v.x.reshape(2, -1)),
        C("reshape(x, [-1])", lambda v: v.x.reshape(-1)),
        C("reshape(x3, [4, 6])", lambda v: v.x3.reshape(4, 6)),
        C("reshape(transpose(x), [2, 6])", lambda v: v.x.T.reshape(2, 6)),  # of a non-contiguous view
        C("reshape(xi, [-1, 3])", lambda v: v.xi.reshape(-1, 3)),
        C("reshape(m, [3, 2])", lambda v: v.m.reshape(3, 2)),
        C("broadcast_to(row, [4, 3])", lambda v: np.broadcast_to(v.row, (4, 3))),
        C("broadcast_to(col, [2, 3, 5])", lambda v: np.broadcast_to(v.col, (2, 3, 5))),
        C("broadcast_to(yi, [2, 3, 4])", lambda v: np.broadcast_to(v.yi, (2, 3, 4))),
        C("concat([x, y], axis=0)", lambda v: np.concatenate([v.x, v.y], axis=0)),
        C("concat([x, y], axis=1)", lambda v: np.concatenate([v.x, v.y], axis=1)),
        C("concat([x, y, x], axis=-1)", lambda v: np.concatenate([v.x, v.y, v.x], axis=-1)),
        C("concat([x, yi])", lambda v: np.concatenate([v.x, v.yi])),        # default axis 0; f32 + i32 -> f64
        C("concat([x3, x3[:, 0:1, :]], axis=1)", lambda v: np.concatenate([v.x3, v.x3[:, 0:1, :]], axis=1)),
        C("stack([x, y], axis=0)", lambda v: np.stack([v.x, v.y], axis=0)),
        C("stack([x, y], axis=1)", lambda v: np.stack([v.x, v.y], axis=1)),
        C("stack([x, y], axis=-1)", lambda v: np.stack([v.x, v.y], axis=-1)),
        C("stack([row, row, row])", lambda v: np.stack([v.row] * 3)),
        C("stack([xi, xi], axis=-2)", lambda v: np.stack([v.xi, v.xi], axis=-2)),
        C("x[1:3, ::2]", lambda v: v.x[1:3, ::2]),
        C("x[-1]", lambda v: v.x[-1]),
        C("x[::-1]", lambda v: v.x[::-1]),
        C("x3[0, :, 1]", lambda v: v.x3[0, :, 1]),
        C("x[:, -2:]", lambda v: v.x[:, -2:]),
        C("x[::-2, 1]", lambda v: v.x[::-2, 1]),
        C("x3[1, 1:, ::-2]", lambda v: v.x3[1, 1:, ::-2]),
        C("x[1:-1]", lambda v: v.x[1:-1]),
        C("x[2, 3]", lambda v: np.asarray(v.x[2, 3])),                      # 0-d
        C("xi[::2]", lambda v: v.xi[::2]),
        C("xi[4:100]", lambda v: v.xi[4:100]),                              # stops clamp, as in Python
        C("transpose(x)[1:3]", lambda v: v.x.T[1:3]),
        C("x[0:2] + y[1:3]", lambda v: v.x[0:2] + v.y[1:3]),
    ]))

    # -- Creation ---------------------------------------------------------------------------------------------------
    # tgc's float creation defaults are f32 (a float literal alone is f32), NumPy's are f64: the references name
    # the dtype explicitly. Integer defaults are i64 in both.
    rs = np.random.RandomState(8)
    v = dict(x=uniform(rs, -1, 1, (2, 3)),
             xi=integers(rs, -5, 5, (4,)),
             xd=uniform(rs, -1, 1, (2, 2), F64))
    const = uniform(rs, -1, 1, (2, 3), F64)
    out.append(Group("creation", inputs=v, files={"const.npy": const}, cases=[
        C("zeros([2, 3])", lambda v: np.zeros((2, 3), F32)),
        C("zeros([4], dtype=i64)", lambda v: np.zeros(4, I64)),
        C("ones([3])", lambda v: np.ones(3, F32)),
        C("ones([2, 2], dtype=i32)", lambda v: np.ones((2, 2), I32)),
        C("ones([3], dtype=bool)", lambda v: np.ones(3, BOOL)),
        C("zeros([2, 0])", lambda v: np.zeros((2, 0), F32)),
        C("full([2, 3], 7.0)", lambda v: np.full((2, 3), 7.0, F32)),
        C("full([2, 2], 3)", lambda v: np.full((2, 2), 3, I64)),
        C("full([3], 2.5, dtype=f64)", lambda v: np.full(3, 2.5, F64)),
        C("full([2], true)", lambda v: np.full(2, True)),
        C("full([2, 2], -1, dtype=i32)", lambda v: np.full((2, 2), -1, I32)),
        C("eye(3)", lambda v: np.eye(3, dtype=F32)),
        C("eye(3, dtype=i64)", lambda v: np.eye(3, dtype=I64)),
        C("eye(2, 4)", lambda v: np.eye(2, 4, dtype=F32)),
        C("arange(5)", lambda v: np.arange(5)),
        C("arange(2, 11, 3)", lambda v: np.arange(2, 11, 3)),
        C("arange(-3, 3)", lambda v: np.arange(-3, 3)),
        C("arange(10, 0, -3)", lambda v: np.arange(10, 0, -3)),
        C("arange(0.5, 2.5, 0.5)", lambda v: np.arange(0.5, 2.5, 0.5, dtype=F32)),
        C("arange(1.0, 0.0, -0.25)", lambda v: np.arange(1.0, 0.0, -0.25, dtype=F32)),
        C("arange(0, 1, 0.1)", lambda v: np.arange(0, 1, 0.1, dtype=F32)),
        C("arange(6, dtype=f64)", lambda v: np.arange(6, dtype=F64)),
        C("arange(4, dtype=i32)", lambda v: np.arange(4, dtype=I32)),
        C("zeros_like(xi)", lambda v: np.zeros_like(v.xi)),
        C("ones_like(xd)", lambda v: np.ones_like(v.xd)),
        C("zeros_like(x) + 1.5", lambda v: np.zeros_like(v.x) + F32(1.5)),
        C("ones_like(x > 0.0)", lambda v: np.ones_like(v.x > 0)),
        C("x + full([2, 3], 2.0)", lambda v: v.x + np.full((2, 3), 2, F32)),
        C("reshape(arange(6), [2, 3]) * x", lambda v: np.arange(6).reshape(2, 3) * v.x),   # i64 * f32 -> f64
        C('load("const.npy")', lambda v: const),
        C('load("const.npy") * 2.0 + xd[0, 0]', lambda v: const * 2.0 + v.xd[0, 0]),
    ]))

    # -- sort, argsort, cumsum (host-only) ---------------------------------------------------------------------------
    rs = np.random.RandomState(9)
    v = dict(x=(integers(rs, -4, 5, (4, 6)) / 2).astype(F32),   # halves: duplicates, and exact sums
             xd=uniform(rs, -1, 1, (3, 5), F64),
             xi=np.array([3, -1, 3, 0, -1, 7, 3, 0, 2, -1], I32),
             m=booleans(rs, (3, 4)))
    out.append(Group("sort", inputs=v, cases=[
        C("sort(x)", lambda v: np.sort(v.x)),                               # default axis -1
        C("sort(x, axis=0)", lambda v: np.sort(v.x, axis=0)),
        C("sort(x, axis=-2)", lambda v: np.sort(v.x, axis=-2)),
        C("sort(xi)", lambda v: np.sort(v.xi)),
        C("sort(xd, axis=0)", lambda v: np.sort(v.xd, axis=0)),
        C("argsort(xi)", lambda v: stable_argsort(v.xi)),                   # stable: ties keep their order
        C("argsort(x)", lambda v: stable_argsort(v.x)),
        C("argsort(x, axis=0)", lambda v: stable_argsort(v.x, axis=0)),
        C("argsort(xd, axis=1)", lambda v: stable_argsort(v.xd, axis=1)),
        C("argsort(-x)", lambda v: stable_argsort(-v.x)),
        C("cumsum(x)", lambda v: np.cumsum(v.x)),                           # no axis: flattened
        C("cumsum(x, axis=1)", lambda v: np.cumsum(v.x, axis=1)),
        C("cumsum(x, axis=-2)", lambda v: np.cumsum(v.x, axis=-2)),
        C("cumsum(xd, axis=0)", lambda v: np.cumsum(v.xd, axis=0), tol=ACCUM),
        C("cumsum(xi)", lambda v: np.cumsum(v.xi)),                         # of ints: i64
        C("cumsum(reshape(xi, [2, 5]), axis=1)", lambda v: np.cumsum(v.xi.reshape(2, 5), axis=1)),
        C("cumsum(m)", lambda v: np.cumsum(v.m)),                           # of bools: i64
        C("cumsum(m, axis=0)", lambda v: np.cumsum(v.m, axis=0)),
        C("sort(exp(x))", lambda v: np.sort(np.exp(v.x))),
        C("exp(sort(x)) + 1.0", lambda v: np.exp(np.sort(v.x)) + F32(1)),
    ]))

    # -- List literals as constant tensors: f32 for floats, i64 for integers (so f32 + i64 list is f64, as NumPy's
    # array + np.array(list)), bool for bools ---------------------------------------------------------------------
    rs = np.random.RandomState(15)
    v = dict(x=uniform(rs, -2, 2, (3, 2)), i=integers(rs, -5, 5, (2,), I64))
    out.append(Group("list_literals", inputs=v, cases=[
        C("x * [0.5, -2.0]", lambda v: v.x * np.array([0.5, -2.0], F32)),
        C("x + [[1.0], [2.0], [3.0]]", lambda v: v.x + np.array([[1.0], [2.0], [3.0]], F32)),
        C("x + [1, 2]", lambda v: v.x + np.array([1, 2])),                       # i64 list: f64, as NumPy
        C("i * [-3, 4]", lambda v: v.i * np.array([-3, 4])),
        C("[[1, 2], [3, 4]] @ i", lambda v: np.array([[1, 2], [3, 4]]) @ v.i),
        C("sum([[1.5, 2], [3, 4]], axis=1)", lambda v: np.sum(np.array([[1.5, 2], [3, 4]], F32), axis=1)),
        C("where([true, false], i, 0)", lambda v: np.where([True, False], v.i, 0)),
        C("[true, false, true]", lambda v: np.array([True, False, True])),
    ]))

    # -- Symbolic dimensions -------------------------------------------------------------------------------------------
    rs = np.random.RandomState(10)
    v = dict(a=uniform(rs, -1, 1, (7, 4)),
             b=uniform(rs, -1, 1, (7,)),
             c=uniform(rs, -1, 1, (4,)))
    out.append(Group("symbolic", inputs=v, types={"a": "f32[n, 4]", "b": "f32[n]"}, cases=[
        C("a * c", lambda v: v.a * v.c),
        C("exp(b) * b", lambda v: np.exp(v.b) * v.b),
        C("sum(a, axis=0)", lambda v: np.sum(v.a, axis=0), tol=ACCUM),
        C("sum(a, axis=1)", lambda v: np.sum(v.a, axis=1), tol=ACCUM),
        C("mean(a, axis=0, keepdims=true)", lambda v: np.mean(v.a, axis=0, keepdims=True), tol=ACCUM),
        C("a - mean(a, axis=0)", lambda v: v.a - np.mean(v.a, axis=0), tol=ACCUM),
        C("var(a, axis=0, ddof=1)", lambda v: np.var(v.a, axis=0, ddof=1), tol=ACCUM),  # n counted at run time
        C("std(a)", lambda v: np.std(v.a), tol=ACCUM),
        C("max(b)", lambda v: np.max(v.b)),
        C("argmax(b)", lambda v: np.argmax(v.b)),
        C("a @ c", lambda v: v.a @ v.c, tol=ACCUM),
        C("transpose(a) @ b", lambda v: v.a.T @ v.b, tol=ACCUM),
        C("a + reshape(b, [-1, 1])", lambda v: v.a + v.b.reshape(-1, 1)),
        C("a[1:3]", lambda v: v.a[1:3]),
        C("a[-1]", lambda v: v.a[-1]),
        C("a[:, 0] * b", lambda v: v.a[:, 0] * v.b),
        C("b[:, None] * a", lambda v: v.b[:, None] * v.a),                 # None: NumPy's newaxis
        C("a[None, ..., None]", lambda v: v.a[None, ..., None]),
        C("a[..., 1]", lambda v: v.a[..., 1]),
        C("a[-1, ...]", lambda v: v.a[-1, ...]),
        C("a[1:3, None, ::2]", lambda v: v.a[1:3, None, ::2]),
        C("expand_dims(b, [0, -1])", lambda v: np.expand_dims(v.b, (0, -1))),
        C("expand_dims(c, 1) + c", lambda v: np.expand_dims(v.c, 1) + v.c),
        C("concat([a, a], axis=0)", lambda v: np.concatenate([v.a, v.a])),
        C("stack([b, b], axis=1)", lambda v: np.stack([v.b, v.b], axis=1)),
        C("sort(b)", lambda v: np.sort(v.b)),
        C("cumsum(b)", lambda v: np.cumsum(v.b), tol=ACCUM),
        C("zeros_like(a)", lambda v: np.zeros_like(v.a)),
        # A symbolic dimension's name is its size, an integer as a Python int is (weak): n = 7 here.
        C("sum(a) / n", lambda v: np.sum(v.a) / F32(7), tol=ACCUM),
        C("b * n", lambda v: v.b * F32(7)),
        C("n * 2 - 1", lambda v: np.int64(13)),
        C("zeros([n, 3])", lambda v: np.zeros((7, 3), F32)),
        C("ones([2, n, 1], dtype=i32)", lambda v: np.ones((2, 7, 1), np.int32)),
        C("full([n], 2.5) * b", lambda v: np.full(7, F32(2.5)) * v.b),
        C("full([n, 4], true)", lambda v: np.full((7, 4), True)),
        C("arange(n)", lambda v: np.arange(7)),
        C("eye(n) @ a", lambda v: v.a, tol=ACCUM),
        C("rand([n, 3], seed=4) == rand([7, 3], seed=4)", lambda v: np.full((7, 3), True)),  # the same numbers
        C("randn([2, n], seed=5, dtype=f64) == randn([2, 7], seed=5, dtype=f64)", lambda v: np.full((2, 7), True)),
        C("eye(3, m=n, dtype=i32)", lambda v: np.eye(3, 7, dtype=np.int32)),
        C("arange(n, dtype=f32) / n", lambda v: np.arange(7, dtype=F32) / F32(7)),
        C("a[n - 1]", lambda v: v.a[6]),                                     # a dynamic subscript
        C("one_hot(arange(n) % 4, 4)", lambda v: one_hot(np.arange(7) % 4, 4)),
        C("b[arange(n)[::-1]]", lambda v: v.b[::-1]),
        C("grad(sum(arange(n, dtype=f32) * b) + sum(zeros([n, 4]) * a) + sum(b) / n, b)",
          lambda v: np.arange(7, dtype=F32) + F32(1) / F32(7)),              # sizes have no gradient
    ]))
    # A dimension bound on a later axis of an input whose other axis is empty still has its size.
    out.append(Group("symbolic beside an empty axis", inputs=dict(e=np.zeros((0, 5), F32)),
                     types={"e": "f32[k, n]"}, cases=[
        C("arange(n)", lambda v: np.arange(5)),
        C("zeros([n, 2]) + k", lambda v: np.zeros((5, 2), F32)),
        C("full([2, n], true)", lambda v: np.full((2, 5), True)),
        C("rand([n], seed=3) == rand([5], seed=3)", lambda v: np.full(5, True)),
    ]))

    # -- Integer-array indexing (gather), dynamic subscripts -------------------------------------------------------------
    rs = np.random.RandomState(11)
    v = dict(E=uniform(rs, -1, 1, (6, 4)),
             T=uniform(rs, -1, 1, (3, 4, 5), F64),
             B=integers(rs, -5, 5, (4, 3)),
             idx=integers(rs, -6, 6, (3, 2), I64),
             labels=integers(rs, 0, 4, (5,), I64),
             P=uniform(rs, 0, 1, (5, 4)),
             i=np.asarray(I64(-2)),
             j=np.asarray(I32(3)))
    out.append(Group("gather", inputs=v, cases=[
        C("E[idx]", lambda v: v.E[v.idx]),                                 # an embedding lookup
        C("E[[0, 5, 0]]", lambda v: v.E[[0, 5, 0]]),
        C("E[:, [3, 0]]", lambda v: v.E[:, [3, 0]]),
        C("E[idx, 1:3]", lambda v: v.E[v.idx, 1:3]),
        C("E[1::2, idx % 4]", lambda v: v.E[1::2, v.idx % 4], computed_index=True),
        C("P[arange(5), labels]", lambda v: v.P[np.arange(5), v.labels]),  # each row's label
        C("T[[0, 2], :, [1, -1]]", lambda v: v.T[[0, 2], :, [1, -1]]),     # separated: index dims first
        C("T[:, [0, 3], [1, 4]]", lambda v: v.T[:, [0, 3], [1, 4]]),       # adjacent: in their place
        C("T[1, [0, 3], 2:]", lambda v: v.T[1, [0, 3], 2:]),               # an integer is a 0-d index array
        C("T[[[1], [2]], 0, [0, 1, 2]]", lambda v: v.T[[[1], [2]], 0, [0, 1, 2]]),  # broadcast together
        C("T[..., [4, 0]]", lambda v: v.T[..., [4, 0]]),
        C("T[[0], None, [1]]", lambda v: v.T[[0], None, [1]]),
        C("T[None, [0, 1], [1, 2]]", lambda v: v.T[None, [0, 1], [1, 2]]),
        C("B[labels % 4]", lambda v: v.B[v.labels % 4], computed_index=True),
        C("E[i]", lambda v: v.E[v.i]),                                     # dynamic subscripts
        C("E[j, :]", lambda v: v.E[v.j, :]),
        C("T[i, j, 1:]", lambda v: v.T[v.i, v.j, 1:]),
        C("E[labels[0] + 1, 2]", lambda v: v.E[v.labels[0] + 1, 2], computed_index=True),
        C("E[idx][:, 1]", lambda v: v.E[v.idx][:, 1]),
        C("exp(E[idx]) * 2.0", lambda v: np.exp(v.E[v.idx]) * F32(2), tol=TRANS),
    ]))
    out.append(Group("take", inputs=v, cases=[
        C("take(E, idx)", lambda v: np.take(v.E, v.idx, axis=0)),
        C("take(E, [3, -1, 0], axis=1)", lambda v: np.take(v.E, [3, -1, 0], axis=1)),
        C("take(T, labels % 3, axis=0)", lambda v: np.take(v.T, v.labels % 3, axis=0), computed_index=True),
        C("take(T, j, axis=-2)", lambda v: np.take(v.T, v.j, axis=-2)),
        C("take_along_axis(P, labels[:, None], 1)", lambda v: np.take_along_axis(v.P, v.labels[:, None], 1)),
        C("take_along_axis(E, argsort(E, axis=0), 0)",
          lambda v: np.take_along_axis(v.E, np.argsort(v.E, axis=0, kind="stable"), 0), computed_index=True),
        C("take_along_axis(T, [[[4, 0]]], 2)", lambda v: np.take_along_axis(v.T, np.array([[[4, 0]]]), 2)),
        C("take_along_axis(T, [[[1]], [[0]], [[3]]], 1)",
          lambda v: np.take_along_axis(v.T, np.array([[[1]], [[0]], [[3]]]), 1)),
        C("one_hot(labels, 4)", lambda v: one_hot(v.labels, 4)),
        C("one_hot(idx, 3, dtype=i32)", lambda v: one_hot(v.idx, 3, np.int32)),         # out of range: zeros
        C("one_hot(j, 5, dtype=bool)", lambda v: one_hot(v.j, 5, np.bool_)),
        C("sum(one_hot(labels, 4) * P, axis=1)", lambda v: np.sum(one_hot(v.labels, 4) * v.P, axis=1), tol=ACCUM),
    ]))
    out.append(Group("subtensor_updates", inputs=v, cases=[
        C("inc_subtensor(E[idx], 1.0)", lambda v: inc_subtensor(v.E, v.idx, F32(1))),   # repeats accumulate
        C("inc_subtensor(E[[0, 0, 5]], E[1:4])", lambda v: inc_subtensor(v.E, [0, 0, 5], v.E[1:4])),
        C("set_subtensor(E[1:3, 2], [7.0, 8.0])", lambda v: set_subtensor(v.E, (slice(1, 3), 2), [7, 8])),
        C("inc_subtensor(E[::-2], 0.5)", lambda v: inc_subtensor(v.E, slice(None, None, -2), F32(0.5))),
        C("set_subtensor(E[:, [3, 0]], E[:, :2])", lambda v: set_subtensor(v.E, (slice(None), [3, 0]), v.E[:, :2])),
        C("inc_subtensor(E[i, j], 10.0)", lambda v: inc_subtensor(v.E, (v.i, v.j), F32(10))),   # dynamic
        C("set_subtensor(E[i], P[0])", lambda v: set_subtensor(v.E, v.i, v.P[0])),
        C("inc_subtensor(P[arange(5), labels], -1.0)",
          lambda v: inc_subtensor(v.P, (np.arange(5), v.labels), F32(-1))),       # softmax minus one-hot
        C("set_subtensor(T[[0, 2], :, [1, -1]], 0.0)",
          lambda v: set_subtensor(v.T, ([0, 2], slice(None), [1, -1]), 0.0)),
        C("inc_subtensor(T[1:, [0, 3], 2:], T[:2, :2, :3])",
          lambda v: inc_subtensor(v.T, (slice(1, None), [0, 3], slice(2, None)), v.T[:2, :2, :3])),
        C("inc_subtensor(T[[0], None, [1]], 1.0)", lambda v: inc_subtensor(v.T, ([0], None, [1]), 1.0)),
        C("set_subtensor(E[None, 2:, None], 3.0)", lambda v: set_subtensor(v.E, (None, slice(2, None), None), 3)),
        C("set_subtensor(E[..., -1], 0)", lambda v: set_subtensor(v.E, (Ellipsis, -1), 0)),
        C("inc_subtensor(B[labels % 4, 1], 2)", lambda v: inc_subtensor(v.B, (v.labels % 4, 1), 2),
          computed_index=True),
        C("set_subtensor(B[1:3], i)", lambda v: set_subtensor(v.B, slice(1, 3), v.i)),  # i64 into i32: same kind
    ]))

    # -- Padding (NumPy's constant mode) ----------------------------------------------------------------------------------
    rs = np.random.RandomState(12)
    v = dict(x=uniform(rs, -1, 1, (2, 3)), k=integers(rs, -5, 5, (3,)), m=uniform(rs, -1, 1, (5, 2, 3)),
             b=np.array([True, False]))
    out.append(Group("pad", inputs=v, types={"m": "f32[n, 2, 3]"}, cases=[
        C("pad(x, 1)", lambda v: np.pad(v.x, 1)),
        C("pad(x, [2, 0])", lambda v: np.pad(v.x, (2, 0))),
        C("pad(x, [[0, 1], [3, 2]], value=-1.5)", lambda v: np.pad(v.x, ((0, 1), (3, 2)), constant_values=-1.5)),
        C("pad(k, [1, 2], value=7)", lambda v: np.pad(v.k, (1, 2), constant_values=7)),
        C("pad(b, 1, value=true)", lambda v: np.pad(v.b, 1, constant_values=True)),
        C("pad(x, 0)", lambda v: v.x),
        C("pad(m, [[0, 0], [1, 1], [0, 2]])", lambda v: np.pad(v.m, ((0, 0), (1, 1), (0, 2)))),  # n stays
        C("relu(pad(m, [[0, 0], [2, 0], [1, 1]], value=0.5)) * 2.0",
          lambda v: np.maximum(np.pad(v.m, ((0, 0), (2, 0), (1, 1)), constant_values=0.5), 0) * F32(2)),
    ]))
    v = dict(E=uniform(rs, -1, 1, (7, 3)), idx=integers(rs, 0, 7, (9,), I64))
    out.append(Group("gather_symbolic", inputs=v, types={"E": "f32[n, 3]", "idx": "i64[m]"}, cases=[
        C("E[idx]", lambda v: v.E[v.idx]),
        C("E[idx, 2] * 3.0", lambda v: v.E[v.idx, 2] * F32(3)),
        C("E[-1:, [2, 0]]", lambda v: v.E[-1:, [2, 0]]),
        C("inc_subtensor(E[idx], 1.0)", lambda v: inc_subtensor(v.E, v.idx, F32(1))),
        C("set_subtensor(E[1:, 1], E[:-1, 2])", lambda v: set_subtensor(v.E, (slice(1, None), 1), v.E[:-1, 2])),
        C("take_along_axis(E, argmax(E, axis=1, keepdims=true), 1)",
          lambda v: np.take_along_axis(v.E, np.argmax(v.E, axis=1)[:, None], 1), computed_index=True),
    ]))

    # -- Random numbers: properties only --------------------------------------------------------------------------------
    out.append(Group("random", cases=[
        C("rand([100, 100], seed=3)", name="r1", check=lambda got, outs: check_uniform(got, (100, 100), F32)),
        C("rand([100, 100], seed=3)", name="r2", check=lambda got, outs: same(got, outs.get("r1"))),
        C("rand([100, 100], seed=4)", name="r3", check=lambda got, outs: different(got, outs.get("r1"))),
        C("rand([1000], seed=1, dtype=f64)", name="r4", check=lambda got, outs: check_uniform(got, (1000,), F64)),
        C("randn([10000], seed=5)", name="n1", check=lambda got, outs: check_normal(got, (10000,), F32)),
        C("randn([10000], seed=5)", name="n2", check=lambda got, outs: same(got, outs.get("n1"))),
        C("randn([10000], seed=6)", name="n3", check=lambda got, outs: different(got, outs.get("n1"))),
        C("randn([100, 100], seed=7, dtype=f64)", name="n4",
          check=lambda got, outs: check_normal(got, (100, 100), F64)),
        C("rand([1000])", name="u1", check=lambda got, outs: check_uniform(got, (1000,), F32)),
        C("rand([1000])", name="u2", check=lambda got, outs: different(got, outs.get("u1"))),  # own seeds
        C("rand([3, 4], seed=3) * 0.0 + x0", name="r5",
          check=lambda got, outs: None if got.dtype == F32 and got.shape == (3, 4) and (got == 2.5).all()
          else "expected f32[3, 4] of 2.5, got %s %s" % (got.dtype, got.shape)),
    ], inputs=dict(x0=np.asarray(F32(2.5)))))
    return out


def check_uniform(got, shape, dtype):
    if got.dtype != dtype or got.shape != shape:
        return "expected %s%s, got %s%s" % (np.dtype(dtype), shape, got.dtype, got.shape)
    if not (got.min() >= 0 and got.max() < 1):
        return "values outside [0, 1): min %r, max %r" % (got.min(), got.max())
    if abs(got.mean() - 0.5) > 0.03:          # the mean of n >= 1000 uniforms: sigma <= 0.0092
        return "mean %r, expected about 0.5" % got.mean()
    return None


def check_normal(got, shape, dtype):
    if got.dtype != dtype or got.shape != shape:
        return "expected %s%s, got %s%s" % (np.dtype(dtype), shape, got.dtype, got.shape)
    if not np.isfinite(got).all():
        return "non-finite values"
    mean, std = float(np.mean(got, dtype=F64)), float(np.std(got, dtype=F64))
    if abs(mean) > 0.05 or abs(std - 1) > 0.05:   # 10000 samples: 5 sigma for the mean, ~7 for the std
        return "mean %r and std %r, expected about 0 and 1" % (mean, std)
    return None


def same(got, other):
    if other is None:
        return "its reference result is missing"
    return None if got.dtype == other.dtype and np.array_equal(got, other) else "differs from the same seed's numbers"


def different(got, other):
    if other is None:
        return "its reference result is missing"
    if got.shape != other.shape:
        return "shape %s differs from %s" % (got.shape, other.shape)
    equal = np.mean(got == other)
    return None if equal < 0.01 else "%.0f%% of the numbers equal those of another seed" % (100 * equal)


# ---- Comparison ----------------------------------------------------------------------------------------------------

def tolerance(case, dtype):
    if isinstance(case.tol, tuple):
        return case.tol
    return (case.tol or DEFAULT)[TGC_DTYPES.get(dtype, "f64")]


def compare(got, want, case):
    """An error message, or None when `got` matches `want`."""
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if got.shape != want.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    if want.dtype.kind in "biu":
        bad = got != want
        rtol = atol = 0
    else:
        rtol, atol = tolerance(case, want.dtype)
        close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        bad = ~close
    if not bad.any():
        return None
    index = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:5]] if want.ndim else [()]
    details = ", ".join("at %s got %r expected %r" % (list(ix), got[ix].item(), want[ix].item()) for ix in index)
    text = "%d of %d values differ (rtol=%g, atol=%g): %s" % (bad.sum(), bad.size, rtol, atol, details)
    if want.dtype.kind == "f":
        finite = np.isfinite(got) & np.isfinite(want)
        if finite.any():
            text += "; max abs error %.3g" % np.max(np.abs(got[finite].astype(F64) - want[finite]))
    return text


# ---- Running tgc ---------------------------------------------------------------------------------------------------

class Runner:
    def __init__(self, args, workdir):
        self.tgc, self.device, self.verbose, self.workdir = args.tgc, args.device, args.verbose, workdir
        self.invocations = 0
        self.run_options = list(getattr(args, "run_options", []))  # more options of `tgc run`

    def invoke(self, group, cases, folder, env=None):
        """Runs `cases` of `group` as one script (in `env`, default this process's environment); returns (process,
        {case name: array or load error})."""
        source = group.source(cases)
        script = os.path.join(folder, "case.tg")
        with open(script, "w") as f:
            f.write(source)
        command = [self.tgc, "run", script] + self.run_options
        if self.device:
            command += ["--device", self.device]
        for name in group.used_inputs(cases):
            command += ["--in", "%s=%s" % (name, os.path.join(self.workdir, group.name, "in_%s.npy" % name))]
        outputs = {}
        for case in cases:
            path = os.path.join(folder, "out_%s.npy" % case.name)
            if os.path.exists(path):
                os.remove(path)
            outputs[case.name] = path
            command += ["--out", "%s=%s" % (case.name, path)]
        self.invocations += 1
        try:
            process = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
        except subprocess.TimeoutExpired:
            process = subprocess.CompletedProcess(command, "a timeout", "", "killed after 300 s")
        results = {}
        for name, path in outputs.items():
            if os.path.exists(path):
                try:
                    results[name] = np.load(path)
                except Exception as error:          # a malformed .npy is a failure of that case
                    results[name] = error
        return process, results

    def run_group(self, group):
        """Yields (case, error message or None, source to reproduce it)."""
        folder = os.path.join(self.workdir, group.name)
        os.makedirs(folder, exist_ok=True)
        for name, array in group.inputs.items():
            np.save(os.path.join(folder, "in_%s.npy" % name), array)
        for name, array in group.files.items():
            np.save(os.path.join(folder, name), array)
        process, results = self.invoke(group, group.cases, folder)
        sources = {case.name: group.source([case]) for case in group.cases}
        failures = {}
        if len(group.cases) == 1 and (process.returncode != 0 or not results):
            failures[group.cases[0].name] = tgc_failure(process)
        elif process.returncode != 0 or len(results) != len(group.cases):
            # Run each case alone, so that every failure is attributed to its own expression.
            print("note: group %s: tgc exited with %s; running its %d cases one by one"
                  % (group.name, process.returncode, len(group.cases)))
            if self.verbose:
                print(indent(process.stderr))
            results = {}
            for case in group.cases:
                one, one_results = self.invoke(group, [case], folder)
                if one.returncode != 0 or case.name not in one_results:
                    failures[case.name] = tgc_failure(one)
                else:
                    results.update(one_results)
        inputs = SimpleNamespace(**group.inputs)
        for case in group.cases:
            message = failures.get(case.name)
            if message is None:
                got = results[case.name]
                if isinstance(got, Exception):
                    message = "cannot read the output: %s" % got
                elif case.check:
                    try:
                        message = case.check(got, results)
                    except Exception as error:
                        message = "the property check failed: %r" % error
                else:
                    try:
                        with np.errstate(all="ignore"), warnings.catch_warnings():
                            warnings.simplefilter("ignore", RuntimeWarning)      # e.g. the mean of nothing
                            want = np.asarray(case.ref(inputs))
                    except Exception as error:
                        message = "the NumPy reference failed: %r" % error
                    else:
                        message = compare(got, want, case)
                        if message:
                            message += "\n    expected:\n%s\n    got:\n%s" % (indent(show(want), 6),
                                                                           indent(show(got), 6))
            yield case, message, sources[case.name]


def tgc_failure(process):
    output = (process.stderr + process.stdout).strip() or "(no output)"
    if process.returncode == 0:
        return "tgc exited with 0 but wrote no output file\n" + indent(output)
    return "tgc exited with %s\n%s" % (process.returncode, indent(output))


def show(array):
    return np.array2string(array, threshold=60, precision=9) + "  (%s%s)" % (array.dtype, list(array.shape))


def indent(text, n=4):
    return "\n".join(" " * n + line for line in text.splitlines())


def describe_inputs(group, expr):
    lines = []
    for name, array in group.inputs.items():
        if re.search(r"\b%s\b" % re.escape(name), expr):
            lines.append("    input %s : %s =\n%s" % (name, group.declared_type(name),
                                                      indent(show(array), 6)))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tgc", required=True, help="the tgc binary")
    parser.add_argument("--device", help="passed to tgc run --device (default: tgc's own)")
    parser.add_argument("--run-option", dest="run_options", action="append", default=[],
                        help="one more option of tgc run, e.g. --run-option=--lift=cost (repeatable)")
    parser.add_argument("-k", dest="filter", help="run only the groups or expressions containing this text")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every case")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder of scripts and .npy files")
    args = parser.parse_args()
    if not os.access(args.tgc, os.X_OK):
        print("error: no tgc binary at %s" % args.tgc)
        print("0 passed, 1 failed")
        return 2

    all_groups = groups()
    if args.filter:
        for group in all_groups:
            if args.filter not in group.name:
                group.cases = [c for c in group.cases if args.filter in c.expr]
        all_groups = [g for g in all_groups if g.cases]

    start = time.time()
    workdir = tempfile.mkdtemp(prefix="tgc_numpy_compare_")
    runner = Runner(args, workdir)
    passed = failed = 0
    try:
        for group in all_groups:
            for case, message, source in runner.run_group(group):
                label = "%s/%s: %s" % (group.name, case.name, case.expr)
                if message is None:
                    passed += 1
                    if args.verbose:
                        print("PASS " + label)
                    continue
                failed += 1
                print("FAIL " + label)
                print(indent(message))
                print("    script:")
                print(indent(source.rstrip(), 6))
                inputs = describe_inputs(group, case.expr)
                if inputs:
                    print(inputs)
    finally:
        if args.keep:
            print("kept %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print("%d groups, %d tgc runs, %.1f s" % (len(all_groups), runner.invocations, time.time() - start))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
