#!/usr/bin/env python3
"""Random differential testing of tgc: random valid tg programs, checked against NumPy in float64.

Programs
  Program K of seed S is drawn from `np.random.RandomState([S, K, attempt])` (MT19937: the same numbers on every
  machine; `attempt` counts the rare programs whose construction fails and is drawn again), so `--seed S --only
  K` regenerates it alone. Three kinds:
  - value programs (76%): inputs, 1-5 `let`s of random expressions of depth 1-4, outputs;
  - gradient programs (20%): f64 inputs, lets, a scalar cost summing a term of each let, and `grad(cost, ...)`
    with respect to 1-3 of its inputs and lets;
  - random-number programs (4%): `rand`/`randn`, checked by their properties (shape, dtype, range, moments, the
    same seed giving the same numbers).
  Programs also declare inputs with a symbolic dimension (`input x : f32[n, 3]`), call `def` functions (both
  forms), pin nodes with `@host`/`@device`, and read constants with `load`.

Generation
  An expression is built top-down for a wanted shape and kind (float, int or bool): a family of operations is
  drawn (elementwise unary or binary, where/clip, casts, reductions, matmul, transpose/reshape/broadcast_to,
  indexing and slicing, integer-array indexing (x[idx], take, take_along_axis, inc_subtensor and set_subtensor),
  concat/stack, creation, host-only sort/argsort/cumsum, a def call, a pin), which derives
  the shapes of its operands from the wanted shape (broadcasting, inserted reduction axes, split concat axes, ...)
  and builds them recursively; leaves are existing inputs and lets, new inputs, weak literals or constants. Every
  node carries its reference value, computed as soon as it is built, so that an operation is applied only where it
  is valid on the actual numbers: log and sqrt of values bounded away from 0, divisors at least 0.25 from 0, exp of
  moderate arguments, integers within their dtype (no overflow, exact in f64), no integer to a negative power,
  casts of floats to integers inside the range. Discontinuous operations (floor, ceil, round, sign, comparisons,
  casts to integers and bool, float %, argmax/argmin, argsort, any/all of floats) are applied only where every
  value lies farther than MARGIN = 16 error bounds from a discontinuity, or exactly on it with no error at all
  (exact ties test the documented tie rules: round half to even, the first index of argmax, stable argsort). A
  node whose values leave [-1e5, 1e5] or lose more than 1e-3 of their magnitude to rounding is discarded and
  another drawn. So every program is valid by construction: if tgc rejects one, that is a failure.
  Left out on purpose: NaN, infinities and empty arrays (numpy_compare.py tests them), `where` with two literal
  branches and integer literals beyond the other operand's dtype (the lit tests pin their rules), integer
  division by zero, and what identical_value() describes (pinning an expression that builds no operation; a gradient with
  respect to a let that is another value).

Oracle and tolerances
  Dtypes and shapes follow tgc's documented rules (NumPy promotion with NEP 50 weak literals: a literal takes the
  dtype of the array it meets, bool with an integer literal is i64, integers and bools with a float literal are
  f64; float functions of integers are f64, floor/ceil of integers f64, sums of integers and bools i64, means f64;
  a float literal alone is f32) and must match exactly, as must integers and bools. Float values are computed in
  float64 from the exact input values (a weak literal first cast to the dtype it takes, as NEP 50 does), and each
  float node carries an absolute error bound, propagated to first order:
    result rounding       0.5 ulp for + - * / sqrt and casts, 4 ulps for transcendental functions and pow
                          (measured against NumPy: at most 4 on cpu and sim); none where the result is exact: + - *
                          of exact f32-representable operands giving an f32-representable result, and floor, max,
                          where, comparisons, indexing, ...; for an f64 result twice as much, since the f64
                          reference has rounding errors of the same size;
    operand errors        |f'(x)| e for functions, |a| e_b + |b| e_a for products, e_a + e_b for sums, the
                          maximum of the errors for max/min/sort/where/clip, products of (|x| + e) for prod;
    accumulation          (n + 1) * 0.5 ulp * sum |x_i| for sums, means and cumsums of n terms, and
                          (k + 1) * 0.5 ulp * (|A| @ |B|) for matmuls of inner size k (any order of summation).
  This is the f64 computation on absolute values that bounds the rounding of any evaluation order, so
  cancellation cannot produce a false mismatch. A float result passes when |got - ref| <= SAFETY * bound
  elementwise, SAFETY = 4: the bound is first order and assumes each operation within its ulp budget; the factor
  absorbs second-order terms and the optimizer's rewrites (x / c -> x * (1/c), fma contraction, reassociation in
  fused kernels), each worth at most a few ulps more (the largest |got - ref| / bound measured over 3000 programs
  on cpu and on sim is 1.32). A real bug (a wrong operation, axis, broadcast, dtype or sign) changes values by
  much more than a few ulps of the magnitudes involved, so it is caught: scaling every float output by 1 + 1e-5
  fails 243 of the 244 programs (of the first 300 of seed 1) with a nonzero float output, by 1 + 1e-6 still 213.
  Gradients are compared with fourth-order central differences of the f64 reference at steps h and h/2,
  h = 1e-4 * max(1, |x|), extrapolated (Richardson); elementwise |g - fd| <= 1e-6 * max|fd| + 10 * bound(cost) /
  (h/2) + 2 * |fd(h) - fd(h/2)| / 15: a relative tolerance, the rounding error of the differences, and their
  truncation error, estimated from the two steps. The step shrinks (by 8) where some piecewise operation (floor,
  comparisons, relu, maximum, clip, max, %, ...) would leave its branch over the stencil; at the unperturbed
  values, kinks and discontinuities are at least GRAD_MARGIN = 1e-2 away.

Running
  Programs are batched (BATCH per script, names prefixed by the program: p17_x1, p17_t2, ...) and each batch is
  one `tgc run`; batches run in parallel (--jobs). When a batch fails, or one of its programs mismatches, the
  programs concerned are run one by one, so each failure is reported alone: its messages, its source, and the
  commands that reproduce it (its script and .npy inputs are kept).

Usage: random_programs.py --tgc build/tgc [--device cpu|sim] [--count N] [--seed S] [--only K] [--jobs J]
                          [--keep DIR] [-v]
The last line printed is exactly `N passed, M failed`; the exit status is non-zero on any failure.
"""

import argparse
import concurrent.futures
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

# ---- Dtypes and promotion ------------------------------------------------------------------------------------------

F32, F64, I32, I64, BOOL = "f32", "f64", "i32", "i64", "bool"
NUMPY = {F32: np.float32, F64: np.float64, I32: np.int32, I64: np.int64, BOOL: np.bool_}
FROM_NUMPY = {np.dtype(t): name for name, t in NUMPY.items()}
FLOAT, INT, LOGIC = "float", "int", "bool"                       # kinds
KIND = {F32: FLOAT, F64: FLOAT, I32: INT, I64: INT, BOOL: LOGIC}
EPS = {F32: 2.0 ** -23, F64: 2.0 ** -52}                          # one ulp is at most EPS * |x|
TINY = {F32: float(np.finfo(np.float32).tiny), F64: float(np.finfo(np.float64).tiny)}
INT_LIMIT = {I32: 2 ** 31 - 1, I64: 2 ** 53}                      # i64 values stay exact in f64

FLOAT_LIMIT = 1e5          # |value| of every float node
CONDITION_LIMIT = 1e-3     # error bound / magnitude of every float node
SAFETY = 4.0               # |got - ref| <= SAFETY * bound
MARGIN = 16.0              # discontinuities are kept MARGIN bounds away
GRAD_MARGIN = 1e-2         # ... and, in gradient programs, at least this far
BASIC, TRANS = 0.5, 4.0    # rounding budgets in ulps: correctly rounded ops, functions
GRAD_RTOL, GRAD_STEP = 1e-6, 1e-4
BATCH = 20


def promote(*dtypes):
    """NumPy's promotion of (strong) dtypes."""
    return FROM_NUMPY[np.result_type(*[NUMPY[d] for d in dtypes])]


def result_dtype(operands):
    """The dtype of an elementwise operation (NEP 50: literals are weak and take the arrays' dtype)."""
    strong = [o.dtype for o in operands if not o.weak]
    weak = {o.weak for o in operands if o.weak}
    dtype = promote(*strong)
    if FLOAT in weak and KIND[dtype] != FLOAT:
        return F64
    if INT in weak and dtype == BOOL:
        return I64
    return dtype


def oracle(values, dtype):
    """`values` in the reference's representation of `dtype`: f64, i64 or bool."""
    kind = KIND[dtype]
    return np.asarray(values, np.float64 if kind == FLOAT else np.int64 if kind == INT else np.bool_)


class Sym(int):
    """A symbolic dimension of a known size: it equals only itself, as tgc cannot prove it equal to a number."""

    def __new__(cls, size, name):
        dim = int.__new__(cls, size)
        dim.name = name
        return dim

    def __eq__(self, other):
        return isinstance(other, Sym) and other.name == self.name

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return self.name

    __str__ = __repr__


def static(shape):
    return not any(isinstance(d, Sym) for d in shape)


def size(shape):
    return int(np.prod([int(d) for d in shape], dtype=np.int64))


def broadcast_shape(*shapes):
    """The broadcast of `shapes`, keeping their symbolic dimensions."""
    rank = max(len(s) for s in shapes)
    result = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        result.append(next((d for d in dims if d != 1), 1))
    return tuple(result)


def broadcasts_to(source, target):
    return len(source) <= len(target) and all(
        s == 1 or s == t for s, t in zip(source[::-1], target[::-1]))


# ---- Expressions ---------------------------------------------------------------------------------------------------

# Precedence of the printed forms, loosest first (the grammar's order); PIN forms are always parenthesized.
PIN, OR, AND, NOT, CMP, ADD, MUL, UNARY, POW, ATOM = range(10)


def wrap(node, level):
    return node.text if node.prec >= level else "(" + node.text + ")"


class Node:
    """An expression: its tg text, dtype (None for a weak literal, whose kind is `weak`), shape, reference value
    (f64, i64 or bool), absolute error bound (floats only), and how to recompute its reference from its
    arguments' (gradient checks evaluate the graph again at perturbed inputs)."""

    def __init__(self, text, prec, dtype, shape, ref, err=None, args=(), fn=None, weak=None):
        self.text, self.prec, self.dtype, self.weak = text, prec, dtype, weak
        self.shape, self.args, self.fn = tuple(shape), tuple(args), fn
        self.host_only = False           # computed by sort, argsort or cumsum, which @device cannot pin
        self.named = False               # a value of tgc's graph: an input, a let, a def's parameter, a load()
        self.alias = None                # the named value this node is in tgc's graph (see identical_value)
        self.branch = None               # of a piecewise operation: see branches()
        self.ref = np.asarray(ref)
        assert self.ref.shape == tuple(int(d) for d in self.shape), (text, self.ref.shape, self.shape)
        if err is None and dtype is not None and KIND[dtype] == FLOAT:
            err = np.zeros(self.ref.shape)
        self.err = None if err is None else np.broadcast_to(np.asarray(err, np.float64), self.ref.shape)

    @property
    def kind(self):
        return self.weak or KIND[self.dtype]

    def evaluate(self, env):
        """The reference value with the inputs (and overridden lets) in `env`, keyed by node id."""
        key = id(self)
        if key not in env:
            env[key] = self.fn(*[arg.evaluate(env) for arg in self.args])
        return env[key]

    def nodes(self):
        """This node and every node it is computed from."""
        seen, stack = {}, [self]
        while stack:
            node = stack.pop()
            if id(node) not in seen:
                seen[id(node)] = node
                stack.extend(node.args)
        return list(seen.values())

    def branches(self, env):
        """Which branch each piecewise operation of this node's graph took, in `env` (after evaluate): the
        value of operations with discrete results (floor, comparisons, casts to integers, argmax, ...), the
        side of the kink for abs, relu, maximum, clip, max, ... A central difference is valid only where they
        stay the same."""
        result = []
        for node in self.nodes():
            if id(node) not in env or any(id(a) not in env for a in node.args):
                continue                                    # upstream of a let the caller set
            args = [env[id(a)] for a in node.args]
            if node.branch:
                result.append(node.branch(env[id(node)], *args))
            elif node.kind != FLOAT and any(a.kind == FLOAT for a in node.args):
                result.append(env[id(node)])
        return result


class Call(Node):
    """A call of a def: its value is the body's, with the parameters bound to the arguments."""

    def __init__(self, text, body, formals, actuals):
        super().__init__(text, ATOM, body.dtype, body.shape, body.ref, body.err, [body] + list(actuals))
        self.body, self.formals = body, formals

    def evaluate(self, env):
        if id(self) not in env:
            for formal, actual in zip(self.formals, self.args[1:]):
                env[id(formal)] = actual.evaluate(env)
            env[id(self)] = self.body.evaluate(env)
        return env[id(self)]


def leaf(text, dtype, shape, ref):
    """A constant: a node whose value the reference takes as given."""
    node = Node(text, ATOM, dtype, shape, ref)
    node.fn = lambda: node.ref
    return node


def named(name, value):
    """An input or a def's parameter, of `value`'s type, values and error."""
    node = leaf(name, value.dtype, value.shape, value.ref)
    node.err, node.named = value.err, True
    return node


def bind(name, value):
    """A let (or a def's local let) of `value`: a named value that evaluates `value`."""
    node = named(name, value)
    node.args, node.fn, node.alias = (value,), (lambda v: v), identical_value(value)
    return node


def identical_value(node):
    """The named value that `node` is in tgc's graph, or None. tgc builds no operation for unary plus or a cast
    to the same dtype, so `let t = +x` is x itself: @host cannot pin it ("@host applies to an operation"), and
    grad(cost, t) is grad(cost, x), through every use of x; `let t = load("c.npy")` is a constant, which grad
    cannot take ("grad: cannot differentiate with respect to a constant")."""
    return node if node.named else node.alias


def literal(text, value, kind):
    prec = UNARY if text.startswith("-") else ATOM
    return Node(text, prec, None, (), np.asarray(value), weak=kind, fn=lambda: np.asarray(value))


def materialize(node, dtype):
    """A weak literal as the operand of an operation of `dtype`: NEP 50 casts it to that dtype first."""
    if not node.weak:
        return node
    value = oracle(NUMPY[dtype](node.ref), dtype)
    return Node(node.text, node.prec, dtype, (), value, fn=lambda: value)


def rounding(ref, dtype, ulps, exact=False):
    """The error a result of `dtype` may get from being rounded (`ulps`), none where `exact`. An f64 result
    counts it twice: the f64 reference has rounding errors of the same size."""
    if KIND[dtype] != FLOAT:
        return None
    bound = ulps * (2 if dtype == F64 else 1) * EPS[dtype] * np.abs(ref) + TINY[dtype]
    return np.where(exact, 0.0, bound)


def representable(values):
    """Elementwise: is the f64 value exactly an f32 value? (Then + - * of f32-representable operands that gave it
    was exact, in f32 as in f64. Not so for /, which the optimizer may turn into a product by a reciprocal.)"""
    values = np.asarray(values, np.float64)
    return np.asarray(values.astype(np.float32) == values)


def exact_operands(*nodes):
    """Elementwise: are all operands exact, and f32-representable (so that + - * of them rounds only once)?"""
    result = True
    for node in nodes:
        if node.kind == FLOAT:
            result = result & (node.err == 0) & representable(node.ref)
        elif node.kind == INT:
            result = result & (np.abs(node.ref) <= 2 ** 24)
    return result


def err_of(node):
    return node.err if node.err is not None else np.zeros(node.ref.shape)


def near(values, errors, points, grad):
    """Elementwise: is a value within its margin of one of the discontinuities `points` (an array like values)?
    A value exactly on one, with no error, is not near: its result is exact."""
    margin = MARGIN * errors + (GRAD_MARGIN if grad else 0.0)
    distance = np.abs(values - points)
    return (distance <= margin) & ~((distance == 0) & (errors == 0) & (not grad))


# ---- Ops: reference functions and error bounds ---------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name: (reference, |derivative|, allowed operand interval).
FUNCTIONS = {
    "exp": (np.exp, np.exp, (-30, 10)),
    "log": (np.log, lambda x: 1 / x, (0.05, None)),
    "log1p": (np.log1p, lambda x: 1 / (1 + x), (-0.9, None)),
    "expm1": (np.expm1, np.exp, (-30, 10)),
    "sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x), (0.01, None)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), lambda x: 0.5 * x ** -1.5, (0.05, None)),
    "sin": (np.sin, lambda x: np.abs(np.cos(x)), (-100, 100)),
    "cos": (np.cos, lambda x: np.abs(np.sin(x)), (-100, 100)),
    "tanh": (np.tanh, lambda x: 1 - np.tanh(x) ** 2, (None, None)),
    "sigmoid": (sigmoid, lambda x: sigmoid(x) * (1 - sigmoid(x)), (-30, None)),
    "softplus": (lambda x: np.logaddexp(0.0, x), sigmoid, (None, None)),
    "erf": (_erf, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x), (None, None)),
    "tan": (np.tan, lambda x: 1 + np.tan(x) ** 2, (-1.3, 1.3)),
    "atan": (np.arctan, lambda x: 1 / (1 + x * x), (None, None)),
    "sinh": (np.sinh, np.cosh, (-20, 20)),
    "cosh": (np.cosh, lambda x: np.abs(np.sinh(x)), (-20, 20)),
    "log2": (np.log2, lambda x: 1 / (x * np.log(2)), (0.05, None)),
    "exp2": (np.exp2, lambda x: np.log(2) * np.exp2(x), (-40, 14)),
}

ARITH = {"+": (ADD, np.add), "-": (ADD, np.subtract), "*": (MUL, np.multiply), "/": (MUL, np.true_divide),
         "%": (MUL, np.mod)}
COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
           "!=": np.not_equal}

FLOAT_LITERALS = ["0.5", "1.5", "2.0", "0.25", "3.0", "0.1", "0.3", "2.5", "0.75", "1.0", "4.0", "1e-1", ".5",
                  "2.", "1.25e1", "0.7", "5.0"]
INT_LITERALS = ["1", "2", "3", "5", "7", "10", "0", "4"]


def binary_err(op, a, b, ref, dtype):
    """The error bound of `a op b` (materialized operands), `ref` its reference."""
    ea, eb = err_of(a), err_of(b)
    x, y = np.abs(a.ref.astype(np.float64)), np.abs(b.ref.astype(np.float64))
    if op in "+-":
        propagated = ea + eb
    elif op == "*":
        propagated = x * eb + y * ea + ea * eb
    elif op == "/":
        propagated = (ea + np.abs(ref) * eb) / (y - eb)
    elif op == "%":
        propagated = ea + np.abs(np.floor(a.ref / b.ref)) * eb + EPS[dtype] * (x + y)
    else:                                   # ** and pow: d/da = r b / a, d/db = r log a
        log_a = np.log(np.where(x > 0, x, 1.0))
        da = np.where(x > 0, np.abs(ref * b.ref / np.where(x > 0, x, 1.0)), 0.0)
        propagated = da * ea + np.abs(ref * log_a) * eb
        return propagated + rounding(ref, dtype, TRANS) * (1 + np.abs(b.ref * log_a))
    exact = (op in "+-*") & exact_operands(a, b) & representable(ref)
    return propagated + rounding(ref, dtype, 2 * BASIC if op == "%" else BASIC, exact)


# ---- The generator -------------------------------------------------------------------------------------------------

class Fail(Exception):
    """A construction that does not apply here; the generator draws another."""


class Generator:
    """Builds one program. `self.pool` holds the values an expression may reuse (inputs, lets, or a def's
    parameters inside its body)."""

    def __init__(self, rng, program):
        self.rng, self.program = rng, program
        self.prefix = "p%d_" % program.index
        self.grad = program.kind == "grad"
        self.pool, self.lets = [], []
        self.in_def = False
        self.sym = Sym(self.rng.randint(2, 7), self.prefix + "n") if self.rng.rand() < 0.2 else None
        self.float_dtypes = [F64] if self.grad else [F32, F32, F64] if self.rng.rand() < 0.7 else [F64, F32]
        # A few value programs have large arrays: the host kernels split the work among threads from 2^17
        # elements, the simulated device strides its grid, reductions span several blocks.
        self.large = program.kind == "value" and self.rng.rand() < 0.05
        self.max_size = 300000 if self.large else 4096
        self.counter = 0

    # -- random helpers

    def chance(self, p):
        return self.rng.rand() < p

    def choice(self, items, weights=None):
        if weights is not None:
            weights = np.asarray(weights, np.float64)
            return items[self.rng.choice(len(items), p=weights / weights.sum())]
        return items[self.rng.randint(len(items))]

    def name(self, stem):
        self.counter += 1
        return "%s%s%d" % (self.prefix, stem, self.counter)

    def dim(self):
        if self.sym is not None and self.chance(0.3):
            return self.sym
        if self.large and self.chance(0.3):
            return self.choice([255, 257, 1000, 4099, 65537, 140001])
        if self.chance(0.08):
            return self.choice([7, 8, 16, 17, 33, 64, 100])
        return self.rng.randint(1, 6)

    def shape(self, rank=None):
        rank = self.choice([0, 1, 1, 2, 2, 2, 3, 3]) if rank is None else rank
        dims = [self.dim() for _ in range(rank)]
        while size(dims) > self.max_size:                        # the largest dimension made small
            dims[int(np.argmax(dims))] = self.rng.randint(1, 6)
        return tuple(dims)

    def axis_text(self, axis, rank):
        return str(axis - rank) if self.chance(0.35) else str(axis)

    # -- acceptance

    def accept(self, node):
        """Raises Fail unless `node` is in range and well conditioned (and f64 in a gradient program)."""
        kind = node.kind
        if kind == FLOAT:
            magnitude = np.abs(node.ref)
            if not np.all(np.isfinite(node.ref)) or (magnitude.size and magnitude.max() > FLOAT_LIMIT):
                raise Fail("out of range")
            scale = max(1.0, magnitude.max()) if magnitude.size else 1.0
            if node.err.size and node.err.max() > CONDITION_LIMIT * scale:
                raise Fail("ill-conditioned")
            if self.grad and node.dtype != F64:
                raise Fail("gradient programs compute in f64")
        elif kind == INT and node.ref.size and np.abs(node.ref).max() > INT_LIMIT[node.dtype]:
            raise Fail("integer out of range")
        return node

    def node(self, text, prec, dtype, shape, fn, args, err=None, branch=None):
        """A node computing fn(*args' references), with the error bound err(reference) if a float, and the
        `branch` function of a piecewise operation (see Node.branches); accepted or Fail."""
        ref = oracle(fn(*[a.ref for a in args]), dtype)
        err = err(ref) if err and KIND[dtype] == FLOAT else None
        node = Node(text, prec, dtype, shape, ref, err, args, lambda *values: oracle(fn(*values), dtype))
        node.branch = branch
        return self.accept(node)

    # -- expressions

    def expr(self, shape, kind, depth):
        """An expression of exactly `shape` and of `kind`."""
        if size(shape) > self.max_size:
            raise Fail("too large")
        families = [(self.unary, 18), (self.binary, 26), (self.select, 8), (self.cast, 5), (self.reduce, 12),
                    (self.matmul, 6), (self.reshape_ops, 7), (self.index, 7), (self.gather, 5), (self.join, 5),
                    (self.creation, 4), (self.host, 4 if not self.grad else 1), (self.call, 3),
                    (self.pin, 2)]
        if depth > 0:
            for _ in range(8):
                family = self.choice([f for f, _ in families], [w for _, w in families])
                try:
                    return family(shape, kind, depth - 1)
                except Fail:
                    pass
        return self.leaf(shape, kind)

    def leaf(self, shape, kind):
        """An existing value of this shape and kind, a new input, a constant, or a creation call."""
        matches = [v for v in self.pool if v.shape == tuple(shape) and v.kind == kind]
        if matches and self.chance(0.6):
            return self.choice(matches)
        if self.in_def:                                 # a parameter, or failing that a constant
            if matches:
                return self.choice(matches)
            if static(shape) and self.chance(0.5):
                return self.creation(shape, kind, 0)
            raise Fail("no parameter of this shape")
        if static(shape) and len(shape) and self.chance(0.03):
            return self.load(shape, kind)
        if static(shape) and len(shape) and self.chance(0.05):
            return self.creation(shape, kind, 0)
        return self.new_input(shape, kind)

    def new_input(self, shape, kind, profile=None):
        dtype = {FLOAT: self.choice(self.float_dtypes), INT: self.choice([I32, I32, I64]), LOGIC: BOOL}[kind]
        values = self.values(shape, dtype, profile)
        name = self.name("x")
        node = named(name, leaf(name, dtype, shape, oracle(values, dtype)))
        self.program.inputs[name] = (node, values)
        self.pool.append(node)
        return node

    def values(self, shape, dtype, profile=None):
        """Random input values of a `profile` (how, lo, hi), by default one of a few: signed, positive, wide,
        exact halves (ties for round, argmax, ...); "nonzero" is uniform in +-[lo, hi]."""
        rs, dims = self.rng, tuple(int(d) for d in shape)
        if dtype == BOOL:
            return rs.rand(*dims) < self.choice([0.2, 0.5, 0.8])
        if KIND[dtype] == INT:
            profiles = [("uniform", -9, 10), ("uniform", 1, 6), ("uniform", -1000, 1000), ("uniform", 0, 4)]
            if dtype == I64:
                profiles.append(("uniform", -2 ** 40, 2 ** 40))
        else:
            profiles = [("uniform", -3, 3), ("uniform", 0.25, 4), ("uniform", -1, 1), ("uniform", -50, 50)]
            if not self.grad:
                profiles += [("halves", -8, 9), ("halves", 0, 6)]
        how, lo, hi = profile or self.choice(profiles)
        if KIND[dtype] == INT:
            lo, hi = int(math.ceil(lo)), int(math.floor(hi)) + 1
            values = rs.randint(lo, hi, dims, np.int64) if how == "uniform" else \
                rs.randint(lo, hi, dims, np.int64) * rs.choice([-1, 1], dims)
        elif how == "halves":
            values = rs.randint(lo, hi, dims) / 2.0
        else:
            values = rs.uniform(lo, hi, dims) * (rs.choice([-1.0, 1.0], dims) if how == "nonzero" else 1.0)
        return np.asarray(values).astype(NUMPY[dtype])

    def load(self, shape, kind):
        dtype = {FLOAT: self.choice(self.float_dtypes), INT: I32, LOGIC: BOOL}[kind]
        values = self.values(shape, dtype)
        file = self.name("c") + ".npy"
        self.program.files[file] = values
        node = leaf('load("%s")' % file, dtype, shape, oracle(values, dtype))
        node.named = True
        return node

    def literal(self, kind, valid=None):
        """A weak literal of `kind` whose value passes `valid` (tried in a random order), or Fail."""
        texts = {FLOAT: FLOAT_LITERALS, INT: INT_LITERALS, LOGIC: ["true", "false"]}[kind]
        for i in self.rng.permutation(len(texts)):
            text = texts[i]
            if kind != LOGIC and self.chance(0.3) and text != "0":
                text = "-" + text
            value = {"true": True, "false": False}.get(text)
            value = float(text) if kind == FLOAT else int(text) if value is None else value
            node = literal(text, value, kind)
            if valid is None or valid(node):
                return node
        raise Fail("no literal fits")

    def operand_shapes(self, shape, n):
        """n shapes that broadcast together to exactly `shape`."""
        shapes = [list(shape) for _ in range(n)]
        full = self.rng.randint(n)                    # keeps every axis: the result has the full rank
        for i in range(len(shape)):
            if self.chance(0.3):
                keep = self.rng.randint(n)
                for j in range(n):
                    if j != keep and self.chance(0.7):
                        shapes[j][i] = 1
        for j in range(n):
            while j != full and shapes[j] and shapes[j][0] == 1 and self.chance(0.6):
                shapes[j].pop(0)
        # Prefer the shape of an existing value, so that programs reuse their inputs and lets.
        reusable = [v.shape for v in self.pool if v.shape != tuple(shape) and broadcasts_to(v.shape, shape)]
        if reusable and n == 2 and self.chance(0.4):
            shapes = [list(shape), list(self.choice(reusable))]
            if self.chance(0.5):
                shapes.reverse()
        return [tuple(s) for s in shapes]

    def operand_kind(self, kind):
        """The kind of an operand of an operation producing `kind` (mostly the same)."""
        if kind == FLOAT:
            return self.choice([FLOAT, INT, LOGIC], [0.85, 0.11, 0.04])
        if kind == INT:
            return self.choice([INT, LOGIC], [0.93, 0.07])
        return kind

    # -- families: each builds an expression of `shape` and `kind`, or raises Fail

    def unary(self, shape, kind, depth):
        if kind == LOGIC:
            x = self.expr(shape, LOGIC, depth)
            return self.node("not " + wrap(x, NOT), NOT, BOOL, shape, np.logical_not, [x])
        if kind == INT:
            x, op = self.expr(shape, INT, depth), self.choice(["neg", "-", "abs", "relu", "round", "sign"])
        else:
            child_kind = self.operand_kind(FLOAT)
            options = list(FUNCTIONS) * 2 + ["floor", "ceil"] * 2
            if child_kind == FLOAT:
                options += ["neg", "-", "abs", "relu", "round", "sign", "+"]
            op = self.choice(options)
            if op in FUNCTIONS:
                lo, hi = FUNCTIONS[op][2]
                lo, hi = (-3 if hi is None else hi - 6) if lo is None else lo, (lo or 0) + 6 if hi is None else hi
                x = self.operand(shape, child_kind, depth, lambda x: self.in_domain(op, x), ("uniform", lo, hi))
            else:
                x = self.expr(shape, child_kind, depth)
        if op in FUNCTIONS:
            fn, derivative, _ = FUNCTIONS[op]
            dtype = x.dtype if x.kind == FLOAT else F64
            return self.node("%s(%s)" % (op, x.text), ATOM, dtype, shape, lambda v: fn(v.astype(np.float64)), [x],
                             lambda r: derivative(x.ref.astype(np.float64)) * err_of(x) + rounding(r, dtype, TRANS))
        if op in ("neg", "-", "+"):
            text = {"neg": "neg(%s)" % x.text, "-": "-" + wrap(x, POW), "+": "+" + wrap(x, POW)}[op]
            fn = (lambda v: v) if op == "+" else np.negative
            node = self.node(text, ATOM if op == "neg" else UNARY, x.dtype, shape, fn, [x], lambda r: x.err)
            node.alias = identical_value(x) if op == "+" else None
            return node
        if op in ("abs", "relu"):
            fn = np.abs if op == "abs" else (lambda v: np.maximum(v, 0))
            self.require_smooth(x, 0.0 * x.ref)
            return self.node("%s(%s)" % (op, x.text), ATOM, x.dtype, shape, fn, [x], lambda r: x.err,
                             lambda r, v: v > 0)
        # floor, ceil, round, sign: exact, away from their discontinuities.
        if x.kind == FLOAT:
            points = {"floor": np.round(x.ref), "ceil": np.round(x.ref), "round": np.floor(x.ref) + 0.5,
                      "sign": 0.0 * x.ref}[op]
            if near(x.ref, x.err, points, self.grad).any():
                raise Fail("near a discontinuity")
        dtype = F64 if op in ("floor", "ceil") and x.kind != FLOAT else x.dtype
        fn = {"floor": np.floor, "ceil": np.ceil, "round": np.round, "sign": np.sign}[op]
        return self.node("%s(%s)" % (op, x.text), ATOM, dtype, shape, fn, [x], branch=lambda r, v: r)

    def operand(self, shape, kind, depth, valid, profile):
        """An expression passing `valid`; failing twice, a new input of values drawn from `profile`."""
        for _ in range(2):
            x = self.expr(shape, kind, depth)
            if valid(x):
                return x
        if self.in_def:
            raise Fail("no valid operand")
        x = self.new_input(shape, kind, profile)
        if not valid(x):
            raise Fail("no valid operand")
        return x

    def in_domain(self, function, x):
        lo, hi = FUNCTIONS[function][2]
        e = MARGIN * err_of(x)
        values = x.ref.astype(np.float64)
        return x.ref.size == 0 or ((lo is None or (values - e).min() >= lo) and
                                   (hi is None or (values + e).max() <= hi))

    def require_smooth(self, x, kinks):
        """In gradient programs, Fail when x comes near a kink of the operation being built."""
        if self.grad and x.kind == FLOAT and near(x.ref, x.err, kinks, True).any():
            raise Fail("near a kink")

    def binary(self, shape, kind, depth):
        if kind == LOGIC:
            if self.chance(0.3):
                return self.logical(shape, depth)
            return self.comparison(shape, depth)
        ops = ["+", "-", "*", "/", "%", "**", "maximum", "minimum", "pow"]
        weights = [5, 5, 5, 3, 1.5, 1.5, 1.5, 1.5, 1] if kind == FLOAT else [5, 5, 5, 0, 2, 1, 1.5, 1.5, 1]
        op = self.choice(ops, weights)
        if op in ("**", "pow") and kind == FLOAT and self.chance(0.2):        # a literal base: 2.0 ** x
            b = self.expr(shape, FLOAT, depth)
            a = self.literal(FLOAT, lambda base: self.valid_binary(op, base, b))
        elif self.chance(0.3) or op in ("**", "pow") and self.chance(0.5):   # a literal operand: x * 2.0
            a = self.expr(shape, self.operand_kind(kind), depth)
            b = self.literal(self.choice([FLOAT, INT]) if kind == FLOAT else INT,
                             lambda b: self.valid_binary(op, a, b))
        else:
            sa, sb = self.operand_shapes(shape, 2)
            a = self.expr(sa, self.operand_kind(kind), depth)
            b = self.binary_operand(op, a, sb, kind, depth)
        if self.chance(0.2) and op in ("+", "-", "*", "maximum", "minimum"):
            a, b = b, a
        dtype = result_dtype([a, b])
        if op == "/" and KIND[dtype] != FLOAT:
            dtype = F64
        if KIND[dtype] != kind or (op == "%" and dtype == BOOL):
            raise Fail("wrong kind")
        return self.arithmetic(op, a, b, shape, dtype)

    def binary_operand(self, op, a, shape, kind, depth):
        """An expression of `shape` valid as the second operand of `a op _`."""
        b_kind = kind if op in ("**", "pow", "%") else self.operand_kind(kind)
        profile = ("nonzero", 0.5, 4) if op in ("/", "%") else ("uniform", -2, 2)
        return self.operand(shape, b_kind, depth, lambda b: self.valid_binary(op, a, b), profile)

    def valid_binary(self, op, a, b):
        """Is `a op b` defined, in range and away from discontinuities for these values?"""
        dtype = result_dtype([a, b]) if not (a.weak and b.weak) else F32
        if op == "/" and KIND[dtype] != FLOAT:
            dtype = F64
        a, b = materialize(a, dtype), materialize(b, dtype)
        x, y = a.ref.astype(np.float64), b.ref.astype(np.float64)
        ex, ey = err_of(a), err_of(b)
        if op in ("/", "%"):
            if (np.abs(y) - MARGIN * ey < 0.25).any():
                return False
            if op == "%" and KIND[dtype] == FLOAT:
                quotient = x / y
                if self.grad and (np.abs(quotient) > 100).any():    # d(x % y)/dy = -floor(x / y)
                    return False
                return not near(quotient, (ex + np.abs(quotient) * ey) / np.abs(y) + EPS[dtype] * (
                    1 + np.abs(quotient)), np.round(quotient), self.grad).any()
        if op in ("**", "pow"):
            if KIND[dtype] == INT:
                return bool(((y >= 0) & (y <= 3)).all() and (np.abs(x) <= 50).all())
            # A positive base, or an integral exponent that is a literal or an integer (constant for grad).
            integral = (b.weak or b.kind == INT) and (y == np.round(y)).all() and (np.abs(y) <= 3).all()
            if not ((x - MARGIN * ex > 0.1).all() or (integral and ((y >= 0) | (np.abs(x) > 0.25)).all())):
                return False
            return bool((np.abs(y * np.log(np.abs(x) + (x == 0))) <= 12).all())
        if KIND[dtype] == INT and op in "+-*":
            return bool((np.abs(ARITH[op][1](x, y)) <= INT_LIMIT[dtype]).all())
        if op in ("maximum", "minimum"):
            if self.grad and near(x, ex, y, True).any():
                return False
        return True

    def arithmetic(self, op, a, b, shape, dtype):
        a, b = materialize(a, dtype), materialize(b, dtype)
        if op in ("maximum", "minimum"):
            fn = np.maximum if op == "maximum" else np.minimum
            return self.node("%s(%s, %s)" % (op, a.text, b.text), ATOM, dtype, shape, fn, [a, b],
                             lambda r: np.maximum(err_of(a), err_of(b)), lambda r, x, y: x > y)
        if op == "pow":
            text, prec, fn = "pow(%s, %s)" % (a.text, b.text), ATOM, np.power
        elif op == "**":
            text, prec, fn = wrap(a, ATOM) + " ** " + wrap(b, UNARY), POW, np.power
        else:
            level, fn = ARITH[op]
            text, prec = wrap(a, level) + " %s " % op + wrap(b, level + 1), level
        if op in ("**", "pow") and KIND[dtype] == FLOAT:
            fn = lambda x, y: np.power(x.astype(np.float64), y)
        err = (lambda r: binary_err(op if op != "pow" else "**", a, b, r, dtype))
        branch = (lambda r, x, y: np.floor(x / y)) if op == "%" else None
        return self.node(text, prec, dtype, shape, fn, [a, b], err, branch)

    def comparison(self, shape, depth):
        op = self.choice(list(COMPARE))
        with_literal = self.chance(0.4)
        sa, sb = (shape, ()) if with_literal else self.operand_shapes(shape, 2)
        kind = self.choice([FLOAT, INT, LOGIC], [0.6, 0.3, 0.1])
        if kind == LOGIC:
            op = self.choice(["==", "!="])
        a = self.expr(sa, kind, depth)
        for _ in range(3):
            b = self.literal(kind) if with_literal else self.expr(sb, kind, depth)
            b_value = materialize(b, result_dtype([a, b]))
            x, y = a.ref.astype(np.float64), b_value.ref.astype(np.float64)
            if not near(x - y, err_of(a) + err_of(b_value), 0.0, self.grad).any():
                break
        else:
            raise Fail("operands too close")
        if self.chance(0.2):
            a, b, op = b, a, {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
        dtype = result_dtype([a, b])
        a, b = materialize(a, dtype), materialize(b, dtype)
        text = wrap(a, ADD) + " %s " % op + wrap(b, ADD)
        return self.node(text, CMP, BOOL, shape, COMPARE[op], [a, b])

    def logical(self, shape, depth):
        op = self.choice(["and", "or"])
        with_literal = self.chance(0.1)
        sa, sb = (shape, ()) if with_literal else self.operand_shapes(shape, 2)
        a = self.expr(sa, LOGIC, depth)
        b = self.literal(LOGIC) if with_literal else self.expr(sb, LOGIC, depth)
        level = AND if op == "and" else OR
        text = wrap(a, level) + " %s " % op + wrap(b, level + 1)
        fn = np.logical_and if op == "and" else np.logical_or
        return self.node(text, level, BOOL, shape, fn, [a, b])

    def select(self, shape, kind, depth):
        if kind == LOGIC or self.chance(0.6):
            with_literal = self.chance(0.3)
            sc, sa, sb = self.operand_shapes(shape, 2) + [()] if with_literal else self.operand_shapes(shape, 3)
            c = self.expr(sc, LOGIC, depth)
            a = self.expr(sa, kind, depth)
            b = self.literal(kind) if with_literal else self.expr(sb, kind, depth)
            if self.chance(0.3):
                a, b = b, a
            dtype = result_dtype([a, b])
            a, b = materialize(a, dtype), materialize(b, dtype)
            return self.node("where(%s, %s, %s)" % (c.text, a.text, b.text), ATOM, dtype, shape, np.where,
                             [c, a, b], lambda r: np.where(c.ref, err_of(a), err_of(b)))
        literal_bounds = self.chance(0.6)
        sx, sl, sh = (shape, (), ()) if literal_bounds else self.operand_shapes(shape, 3)
        x = self.expr(sx, kind, depth)
        if literal_bounds:
            lo = self.literal(kind)
            hi = self.literal(kind, lambda h: h.ref > lo.ref)
        else:                       # array bounds: clip(x, minimum(a, b), maximum(a, b)) keeps lo <= hi
            a, b = self.expr(sl, kind, depth), self.expr(sh, kind, depth)
            lo = self.arithmetic("minimum", a, b, broadcast_shape(sl, sh), result_dtype([a, b]))
            hi = self.arithmetic("maximum", a, b, lo.shape, lo.dtype)
        dtype = result_dtype([x, lo, hi])
        x, lo, hi = materialize(x, dtype), materialize(lo, dtype), materialize(hi, dtype)
        self.require_smooth(x, lo.ref)
        self.require_smooth(x, hi.ref)
        if self.grad and near(lo.ref, err_of(lo) + err_of(hi), hi.ref, True).any():
            raise Fail("bounds too close")
        return self.node("clip(%s, %s, %s)" % (x.text, lo.text, hi.text), ATOM, dtype, shape, np.clip,
                         [x, lo, hi], lambda r: np.maximum(np.maximum(err_of(x), err_of(lo)), err_of(hi)),
                         lambda r, v, low, high: (v < low) * 1 + (v > high) * 2)

    def cast(self, shape, kind, depth):
        targets = {FLOAT: [F32, F64] if not self.grad else [F64], INT: [I32, I64], LOGIC: [BOOL]}[kind]
        dtype = self.choice(targets)
        x = self.expr(shape, self.choice([FLOAT, INT, LOGIC], [0.6, 0.25, 0.15]), depth)
        values = x.ref.astype(np.float64)
        if x.kind == FLOAT and kind == INT and near(values, x.err, np.round(values), self.grad).any():
            raise Fail("near an integer")
        if x.kind == FLOAT and kind == LOGIC and near(values, x.err, 0.0, self.grad).any():
            raise Fail("near zero")
        if (dtype == I32 or x.kind == FLOAT) and (np.abs(values) > INT_LIMIT[I32]).any():
            raise Fail("out of range")
        if kind == FLOAT:
            exact = (x.err == 0 if x.kind == FLOAT else True) & representable(values)
            err = lambda r: err_of(x) + rounding(r, dtype, BASIC, exact)
        else:
            err = None
        fn = (lambda v: np.trunc(v)) if kind == INT and x.kind == FLOAT else (lambda v: v)
        node = self.node("%s(%s)" % (dtype, x.text), ATOM, dtype, shape, fn, [x], err)
        node.alias = identical_value(x) if dtype == x.dtype else None
        return node

    def reduce(self, shape, kind, depth):
        ops = {FLOAT: ["sum", "mean", "max", "min", "prod", "mean"], INT: ["sum", "prod", "max", "min", "argmax",
                                                                           "argmin"],
               LOGIC: ["any", "all", "max", "min"]}[kind]
        op = self.choice(ops)
        single = op in ("argmax", "argmin")
        child_shape, axes, keepdims = self.reduction_axes(shape, single)
        if op in ("sum", "prod") and kind == INT or op == "mean" and self.chance(0.2):
            child_kind = self.choice([INT, LOGIC], [0.8, 0.2])
        elif single:
            child_kind = self.choice([FLOAT, INT])
        elif op in ("any", "all"):
            child_kind = self.choice([LOGIC, FLOAT, INT], [0.7, 0.2, 0.1])
        else:
            child_kind = kind
        x = self.expr(child_shape, child_kind, depth)
        args = [x.text]
        if axes is not None:
            texts = [self.axis_text(a, len(child_shape)) for a in axes]
            as_int = len(texts) == 1 and (single or self.chance(0.7))           # argmax/argmin: an integer
            args.append("axis=" + (texts[0] if as_int else "[%s]" % ", ".join(texts)))
        if keepdims or self.chance(0.1):
            args.append("keepdims=%s" % ("true" if keepdims else "false"))
        text = "%s(%s)" % (op, ", ".join(args))
        axis = None if axes is None else tuple(axes)
        n = size([child_shape[a] for a in axes]) if axes is not None else size(child_shape)
        if n == 0:
            raise Fail("empty reduction")
        dtype = {"sum": I64 if x.kind != FLOAT else x.dtype, "prod": I64 if x.kind != FLOAT else x.dtype,
                 "mean": F64 if x.kind != FLOAT else x.dtype, "max": x.dtype, "min": x.dtype,
                 "argmax": I64, "argmin": I64, "any": BOOL, "all": BOOL}[op]
        values, errors = x.ref.astype(np.float64), err_of(x)
        if single:
            self.require_unique_extreme(values, errors, axis, op == "argmax")
            base = np.argmax if op == "argmax" else np.argmin
            if axis is None:
                fn = lambda v: np.reshape(base(v), (1,) * v.ndim if keepdims else ())
            else:
                fn = lambda v: base(v, axis=axis[0], keepdims=keepdims)
            return self.node(text, ATOM, dtype, shape, fn, [x])
        if op in ("any", "all"):
            if x.kind == FLOAT and near(values, errors, 0.0, self.grad).any():
                raise Fail("near zero")
            fn = np.any if op == "any" else np.all
            return self.node(text, ATOM, dtype, shape, lambda v: fn(v, axis=axis, keepdims=keepdims), [x])
        if op in ("max", "min"):
            if self.grad:
                self.require_unique_extreme(values, errors, axis, op == "max")
            fn = np.max if op == "max" else np.min
            return self.node(text, ATOM, dtype, shape, lambda v: fn(v, axis=axis, keepdims=keepdims), [x],
                             lambda r: np.max(errors, axis=axis, keepdims=keepdims),
                             lambda r, v: v == fn(v, axis=axis, keepdims=True))
        if op == "prod":
            limit = FLOAT_LIMIT if KIND[dtype] == FLOAT else INT_LIMIT[dtype]
            if np.prod(np.abs(values) + errors, axis=axis).max(initial=0) > limit:
                raise Fail("out of range")
            # A float product is accumulated in lanes and chunks, in no fixed order: a partial product of the
            # factors before a zero may overflow to inf, and inf * 0 is nan where NumPy's sequential product
            # met the zero first. Every partial product is at most the product of max(1, |x|) over all factors.
            if KIND[dtype] == FLOAT and np.prod(np.maximum(1.0, np.abs(values) + errors),
                                                axis=axis).max(initial=0) > limit:
                raise Fail("a partial product may overflow")

            def err(r):
                upper = np.prod(np.abs(values) + errors, axis=axis, keepdims=keepdims)
                return upper - np.abs(r) + rounding(upper, dtype, n * BASIC)
            return self.node(text, ATOM, dtype, shape, lambda v: np.prod(v, axis=axis, keepdims=keepdims), [x],
                             err if KIND[dtype] == FLOAT else None)
        divisor = n if op == "mean" else 1

        def err(r):
            magnitude = np.sum(np.abs(values), axis=axis, keepdims=keepdims) / divisor
            propagated = np.sum(errors, axis=axis, keepdims=keepdims) / divisor
            return propagated + rounding(magnitude, dtype, (n + 1) * BASIC) + rounding(r, dtype, BASIC)
        fn = (lambda v: np.sum(v, axis=axis, keepdims=keepdims) / divisor)
        if KIND[dtype] == INT:
            fn = lambda v: np.sum(v, axis=axis, keepdims=keepdims)
        return self.node(text, ATOM, dtype, shape, fn, [x], err if KIND[dtype] == FLOAT else None)

    def reduction_axes(self, shape, single):
        """(child shape, reduced axes of the child or None for all, keepdims) reducing to `shape`."""
        ones = [i for i, d in enumerate(shape) if d == 1]
        if ones and self.chance(0.3):                       # keepdims: some size-1 axes were reduced
            axes = sorted(self.rng.choice(ones, 1 if single else self.rng.randint(1, len(ones) + 1), False))
            child = list(shape)
            for a in axes:
                child[a] = self.dim()
            if len(axes) == len(shape) and self.chance(0.5):
                return tuple(child), None, True
            return tuple(child), [int(a) for a in axes], True
        if len(shape) == 0 and self.chance(0.4):             # everything, without axis
            return self.shape(self.choice([1, 2, 3])), None, False
        count = 1 if single or len(shape) >= 3 else self.choice([1, 1, 2])
        child = list(shape)
        axes = []
        for _ in range(count):
            position = self.rng.randint(len(child) + 1)
            child.insert(position, self.dim())
            axes = [a + (a >= position) for a in axes] + [position]
        return tuple(child), sorted(axes), False

    def require_unique_extreme(self, values, errors, axis, largest):
        """Fail unless the extreme along `axis` is unique by a margin (or an exact tie of exact values)."""
        sign = 1.0 if largest else -1.0
        v = sign * values
        a = None if axis is None else axis[0] if len(axis) == 1 else tuple(axis)
        top = np.max(v, axis=a, keepdims=True)
        top_err = np.max(errors, axis=a, keepdims=True)
        close = near(v, errors + top_err, np.broadcast_to(top, v.shape), self.grad)
        if (close & (v != top)).any() or (self.grad and ((v == top).sum(axis=a) > 1).any()):
            raise Fail("no clear extreme")
        tied_inexact = (v == top) & ((errors > 0) | (top_err > 0))
        if ((v == top).sum(axis=a, keepdims=True) > 1).any() and tied_inexact.any():
            raise Fail("inexact tie")

    def matmul(self, shape, kind, depth):
        if kind == LOGIC or len(shape) > 4:
            raise Fail("no matmul of bools")
        k = self.dim()
        if len(shape) == 0:
            sa, sb = (k,), (k,)
        elif len(shape) == 1:
            sa, sb = self.choice([((shape[0], k), (k,)), ((k,), (k, shape[0]))])
        else:
            batch, m, n = shape[:-2], shape[-2], shape[-1]
            ba, bb = self.operand_shapes(batch, 2) if batch else ((), ())
            if self.chance(0.15):                                       # a batch of matrices @ a vector
                sa, sb = tuple(shape) + (k,), (k,)
            else:
                sa, sb = tuple(ba) + (m, k), tuple(bb) + (k, n)
        a = self.expr(sa, kind, depth)
        b = self.expr(sb, kind, depth)
        dtype = promote(a.dtype, b.dtype)
        if KIND[dtype] != kind:
            raise Fail("wrong kind")
        if kind == INT and np.matmul(np.abs(a.ref).astype(np.float64), np.abs(b.ref)).max(initial=0) > \
                INT_LIMIT[dtype]:
            raise Fail("out of range")
        if self.chance(0.5):
            text, prec = wrap(a, MUL) + " @ " + wrap(b, UNARY), MUL
        else:
            text, prec = "matmul(%s, %s)" % (a.text, b.text), ATOM

        def err(r):
            x, y = np.abs(a.ref), np.abs(b.ref)
            ea, eb = err_of(a), err_of(b)
            propagated = np.matmul(x, eb) + np.matmul(ea, y) + np.matmul(ea, eb)
            return propagated + rounding(np.matmul(x, y), dtype, (int(k) + 1) * BASIC)
        return self.node(text, prec, dtype, shape, np.matmul, [a, b], err if kind == FLOAT else None)

    def reshape_ops(self, shape, kind, depth):
        op = self.choice(["transpose", "reshape", "broadcast_to"])
        rank = len(shape)
        if op == "transpose":
            if rank < 1:
                raise Fail("nothing to transpose")
            perm = list(self.rng.permutation(rank))
            child = [None] * rank
            for i, p in enumerate(perm):
                child[p] = shape[i]
            x = self.expr(tuple(child), kind, depth)
            if perm == list(range(rank))[::-1] and self.chance(0.5):
                text = "transpose(%s)" % x.text
            else:
                text = "transpose(%s, [%s])" % (x.text, ", ".join(str(p) for p in perm))
            return self.node(text, ATOM, x.dtype, shape, lambda v: np.transpose(v, perm), [x],
                             lambda r: np.transpose(x.err, perm) if x.err is not None else None)
        if not static(shape) or rank == 0:
            raise Fail("a static shape is needed")
        if op == "broadcast_to":
            child = self.operand_shapes(shape, 2)[self.rng.randint(2)]
            x = self.expr(child, kind, depth)
            text = "broadcast_to(%s, [%s])" % (x.text, ", ".join(str(d) for d in shape))
            return self.node(text, ATOM, x.dtype, shape, lambda v: np.broadcast_to(v, shape), [x],
                             lambda r: np.broadcast_to(x.err, shape) if x.err is not None else None)
        child = self.factorization(size(shape))
        x = self.expr(child, kind, depth)
        target = [str(d) for d in shape]
        if self.chance(0.5):
            target[self.rng.randint(rank)] = "-1"
        text = "reshape(%s, [%s])" % (x.text, ", ".join(target))
        return self.node(text, ATOM, x.dtype, shape, lambda v: np.reshape(v, shape), [x],
                         lambda r: np.reshape(x.err, shape) if x.err is not None else None)

    def factorization(self, n):
        """A random shape of n elements, of rank 0 to 3."""
        rank = self.choice([1, 2, 2, 3]) if n > 1 else self.choice([0, 1, 2])
        dims = []
        for _ in range(rank - 1):
            divisors = [d for d in range(1, min(n, 16) + 1) if n % d == 0]
            d = self.choice(divisors)
            dims.append(d)
            n //= d
        return tuple(dims + [n]) if rank else ()

    def index(self, shape, kind, depth):
        """x[...]: indexed axes inserted into `shape`, some of its axes sliced from longer ones."""
        n_index = self.choice([0, 1, 1, 2]) if len(shape) < 4 else 0
        if len(shape) == 0:
            n_index = max(n_index, 1)
        entries = [("keep", d) for d in shape]
        for _ in range(n_index):
            entries.insert(self.rng.randint(len(entries) + 1), ("index", self.dim()))
        steps = [None, 1] if self.grad else [None, None, 1, 2, 3, -1, -2]
        child, keys, texts = [], [], []
        for what, d in entries:
            if what == "index":
                i = self.rng.randint(-int(d), int(d))
                child.append(d)
                keys.append(i)
                texts.append(str(i))
            elif isinstance(d, Sym) or self.chance(0.5):              # the whole axis, or reversed
                child.append(d)
                reverse = not isinstance(d, Sym) and self.chance(0.1)
                keys.append(slice(None, None, -1) if reverse else slice(None))
                texts.append("::-1" if reverse else ":")
            else:
                length = d + self.choice([0, 1, 2, 3])
                key = self.slice(length, d, steps)
                child.append(length)
                keys.append(key)
                texts.append(slice_text(key))
        while texts and texts[-1] == ":" and self.chance(0.8):
            texts.pop()
        if not texts:
            raise Fail("a plain copy")
        keys = tuple(keys)
        x = self.expr(tuple(child), kind, depth)
        text = wrap(x, ATOM) + "[%s]" % ", ".join(texts)
        return self.node(text, ATOM, x.dtype, shape, lambda v: v[keys], [x],
                         lambda r: x.err[keys] if x.err is not None else None)

    def gather(self, shape, kind, depth):
        """Integer-array indexing: x[..., idx] and take(x, idx, axis) on axis 0 or 1 (the index a constant list of
        rank 0-2, negative entries included), take_along_axis, and inc_subtensor / set_subtensor of a gather (set
        with distinct indices: of repeated stores, which one stays is unspecified)."""
        form = self.choice(["subscript", "subscript", "take", "along", "inc", "set"])
        if form == "along":
            if not shape or not static(shape):
                raise Fail("take_along_axis needs a static shape")
            axis = self.rng.randint(len(shape))
            m = self.rng.randint(1, 5)
            idx = self.rng.randint(-m, m, shape)
            x = self.expr(shape[:axis] + (m,) + shape[axis + 1:], kind, depth)
            text = "take_along_axis(%s, %s, %d)" % (x.text, idx.tolist(), axis - len(shape) * self.rng.randint(2))
            return self.node(text, ATOM, x.dtype, shape, lambda v: np.take_along_axis(v, idx, axis), [x],
                             lambda r: np.take_along_axis(x.err, idx, axis) if x.err is not None else None)
        if form in ("inc", "set"):
            if not shape or not static(shape[:1]):
                raise Fail("an update of a gather on a static axis")
            rank = self.choice([0, 1, 1])
            idx_shape = tuple(self.rng.randint(1, 4) for _ in range(rank))
            count = int(np.prod(idx_shape))
            if form == "set" and count > shape[0]:
                raise Fail("distinct indices")
            rows = self.rng.permutation(shape[0])[:count] if form == "set" else self.rng.randint(0, shape[0], count)
            idx = (rows - shape[0] * self.rng.randint(0, 2, count)).reshape(idx_shape)
            x = self.expr(shape, kind, depth)
            value = self.expr(idx_shape + shape[1:], kind, depth)
            if value.kind != x.kind or not (value.weak or value.dtype == x.dtype):
                raise Fail("a value of another dtype than x's")
            index_text = str(idx.tolist()) if rank else str(int(idx))
            text = "%s_subtensor(%s[%s], %s)" % (form, wrap(x, ATOM), index_text, value.text)

            def update(xv, vv, add=form == "inc"):
                out = np.array(xv, copy=True)
                if add:
                    np.add.at(out, idx, vv)
                else:
                    out[idx] = vv
                return out
            def error(r):  # the operands' errors where they land, and for inc the adds' rounding (count at most)
                if x.err is None or value.err is None:
                    return None
                if form == "set":
                    return update(x.err, value.err)
                magnitudes = update(np.abs(x.ref), np.abs(np.asarray(value.ref, np.float64)))
                return update(x.err, value.err) + rounding(magnitudes, x.dtype, BASIC * (count + 1))
            return self.node(text, ATOM, x.dtype, shape, update, [x, value], error)
        # x[idx] on axis 0, or x[:, idx] / take(x, idx, axis=1): shape = lead + idx_shape + rest
        axis = self.choice([0, 0, 1]) if len(shape) >= 1 else 0
        rank = self.choice([1, 1, 2]) if len(shape) >= axis + 1 else 0
        rank = min(rank, len(shape) - axis)
        idx_shape = shape[axis:axis + rank]
        if not static(idx_shape):
            raise Fail("an index of a symbolic shape")
        m = self.choice([1, 2, 3, 5, 7])
        idx = self.rng.randint(-m, m, idx_shape)
        child = shape[:axis] + (m,) + shape[axis + rank:]
        x = self.expr(child, kind, depth)
        keys = (slice(None),) * axis + (idx,)
        if form == "take":
            text = "take(%s, %s, axis=%d)" % (x.text, idx.tolist() if rank else int(idx), axis)
        else:
            text = wrap(x, ATOM) + "[%s%s]" % (":, " * axis, idx.tolist())
        return self.node(text, ATOM, x.dtype, shape, lambda v: v[keys], [x],
                         lambda r: x.err[keys] if x.err is not None else None)

    def slice(self, length, count, steps):
        """A slice of `count` elements of an axis of `length`: any bounds (negative, omitted, out of range)."""
        bounds = [None] * 3 + list(range(-length - 1, length + 2)) + [100, -100]
        for _ in range(300):
            key = slice(self.choice(bounds), self.choice(bounds), self.choice(steps))
            if len(range(*key.indices(length))) == count:
                return key
        return slice(0, count)

    def join(self, shape, kind, depth):
        """concat along an axis split in parts, or stack along an axis of size 2 or 3."""
        rank = len(shape)
        axes = [a for a in range(rank) if not isinstance(shape[a], Sym)]
        if self.chance(0.5):
            axes = [a for a in axes if shape[a] >= 2]
            if not axes:
                raise Fail("nothing to split")
            axis = self.choice(axes)
            cuts = sorted(self.rng.choice(range(1, shape[axis]), min(self.choice([1, 2]), shape[axis] - 1), False))
            sizes = np.diff([0] + list(cuts) + [shape[axis]])
            parts = [self.expr(shape[:axis] + (int(s),) + shape[axis + 1:], kind, depth) for s in sizes]
            op, fn = "concat", (lambda *v: np.concatenate(v, axis=axis))
        else:
            axes = [a for a in axes if shape[a] in (2, 3)]
            if not axes:
                raise Fail("no axis to stack along")
            axis = self.choice(axes)
            parts = [self.expr(shape[:axis] + shape[axis + 1:], kind, depth) for _ in range(shape[axis])]
            op, fn = "stack", (lambda *v: np.stack(v, axis=axis))
        dtype = promote(*[p.dtype for p in parts])
        if KIND[dtype] != kind:
            raise Fail("wrong kind")
        args = "[%s]" % ", ".join(p.text for p in parts)
        if axis or self.chance(0.5):
            args += ", axis=" + self.axis_text(axis, rank)
        errors = None
        if kind == FLOAT:
            errors = lambda r: fn(*[np.broadcast_to(err_of(p), p.ref.shape) for p in parts])
        return self.node("%s(%s)" % (op, args), ATOM, dtype, shape, fn, parts, errors)

    def creation(self, shape, kind, depth):
        """zeros, ones, full, eye, arange, zeros_like, ones_like."""
        dtype = {FLOAT: self.choice(self.float_dtypes), INT: self.choice([I32, I64]), LOGIC: BOOL}[kind]
        options = ["like"] * 2
        if static(shape):
            options += ["zeros", "ones", "full"]
            if len(shape) == 2 and kind != LOGIC:
                options.append("eye")
            if len(shape) == 1 and kind != LOGIC:
                options.append("arange")
        op = self.choice(options)
        if op == "like":
            x = self.expr(shape, kind, depth)
            name = self.choice(["zeros_like", "ones_like"])
            value = 0 if name == "zeros_like" else 1
            return self.node("%s(%s)" % (name, x.text), ATOM, x.dtype, shape,
                             lambda v: np.full(v.shape, value), [x])
        dims = "[%s]" % ", ".join(str(d) for d in shape)
        if op == "eye":
            n, m = shape
            args = [str(n)] + ([] if n == m and self.chance(0.5) else [self.choice(["%d", "m=%d"]) % m])
            values = np.eye(n, m)
        elif op == "arange":
            args, values, default = self.arange(shape[0], kind)
        elif op == "full":
            fill = self.literal(kind)
            args, values = [dims, fill.text], np.full(shape, fill.ref)
        else:
            args, values = [dims], np.full(shape, 0 if op == "zeros" else 1)
        if op == "full":
            default = {FLOAT: F32, INT: I64, LOGIC: BOOL}[kind]
        elif op != "arange":
            default = F32
        if dtype != default or self.chance(0.3):
            args.append("dtype=" + dtype)
        if op == "full" and dtype == F32:
            values = values.astype(np.float32)
        ref = oracle(values, dtype)
        node = Node("%s(%s)" % (op, ", ".join(args)), ATOM, dtype, shape, ref, fn=lambda: ref)
        return self.accept(node)

    def arange(self, count, kind):
        """(arguments, values, default dtype) of an arange of `count` values: integer bounds (whose default is
        i64) or float ones (f32), all exact."""
        if kind == INT or self.chance(0.5):
            step = self.choice([1, 1, 2, 3, -1, -2])
            start = self.rng.randint(-5, 6)
            stop = start + step * (count - 1) + (1 if step > 0 else -1) * self.rng.randint(1, abs(step) + 1)
            values = np.arange(start, stop, step)
            if start == 0 and step == 1 and self.chance(0.5):
                args = [str(stop)]
            elif step == 1 and self.chance(0.5):
                args = [str(start), str(stop)]
            else:
                args = [str(start), str(stop), str(step)]
            return args, values, I64
        step = self.choice([0.5, 0.25, 1.5, -0.5, -0.25])
        start = self.rng.randint(-8, 9) * 0.25
        stop = start + step * (count - 1 + self.choice([0.5, 1.0]))
        values = start + step * np.arange(count)
        return ["%r" % start, "%r" % stop, "%r" % step], values, F32

    def host(self, shape, kind, depth):
        """sort, argsort and cumsum, which only the host implements."""
        rank = len(shape)
        if kind == INT and self.chance(0.5) and rank:
            x = self.expr(shape, self.choice([FLOAT, INT]), depth)
            axis = self.rng.randint(rank)
            self.require_distinct(x, axis)
            args = x.text + ("" if axis == rank - 1 and self.chance(0.5) else ", axis=" + self.axis_text(axis, rank))
            return self.host_only(self.node("argsort(%s)" % args, ATOM, I64, shape,
                                            lambda v: np.argsort(v, axis=axis, kind="stable"), [x]))
        if kind == LOGIC:
            raise Fail("no bool result")
        if self.grad or self.chance(0.6):
            if rank == 1 and static(shape) and self.chance(0.3):    # flattened
                child = self.factorization(shape[0])
                x = self.expr(child, self.choice([kind, LOGIC], [0.85, 0.15]), depth)
                axis, text = None, "cumsum(%s)" % x.text
            else:
                if not rank:
                    raise Fail("no axis")
                x = self.expr(shape, self.choice([kind, LOGIC], [0.85, 0.15]) if kind == INT else kind, depth)
                axis = self.rng.randint(rank)
                text = "cumsum(%s, axis=%s)" % (x.text, self.axis_text(axis, rank))
            dtype = x.dtype if x.kind == FLOAT else I64
            if KIND[dtype] != kind:
                raise Fail("wrong kind")

            def err(r):
                values = np.abs(x.ref).reshape(-1) if axis is None else np.abs(x.ref)
                errors = err_of(x).reshape(-1) if axis is None else err_of(x)
                length = values.shape[axis or 0]
                return (np.cumsum(errors, axis=axis or 0) +
                        rounding(np.cumsum(values, axis=axis or 0), dtype, (length + 1) * BASIC))
            return self.host_only(self.node(text, ATOM, dtype, shape, lambda v: np.cumsum(v, axis=axis), [x],
                                            err if kind == FLOAT else None))
        if not rank:
            raise Fail("no axis")
        x = self.expr(shape, kind, depth)
        axis = self.rng.randint(rank)
        args = x.text + ("" if axis == rank - 1 and self.chance(0.5) else ", axis=" + self.axis_text(axis, rank))
        err = lambda r: np.broadcast_to(np.max(x.err, axis=axis, keepdims=True), shape)    # sort is 1-Lipschitz
        return self.host_only(self.node("sort(%s)" % args, ATOM, x.dtype, shape, lambda v: np.sort(v, axis=axis),
                                        [x], err if kind == FLOAT else None))

    @staticmethod
    def host_only(node):
        node.host_only = True
        return node

    def require_distinct(self, x, axis):
        """Fail unless the values along `axis` are apart by their margins (or exactly equal and exact)."""
        if x.kind != FLOAT:
            return
        order = np.argsort(x.ref, axis=axis, kind="stable")
        values = np.take_along_axis(x.ref, order, axis)
        errors = np.take_along_axis(x.err, order, axis)
        gaps = np.diff(values, axis=axis)
        margins = np.delete(errors, 0, axis) + np.delete(errors, -1, axis)
        if near(gaps, margins, 0.0, self.grad).any():
            raise Fail("values too close")

    def call(self, shape, kind, depth):
        """A call of a new def of one to three parameters, in the `=` form or the block form."""
        if self.in_def:
            raise Fail("no nested def")
        n = self.choice([1, 2, 2, 3])
        shapes = [shape] + [self.choice([shape, self.operand_shapes(shape, 2)[1]]) for _ in range(n - 1)]
        actuals = [self.expr(s, self.operand_kind(kind) if i else kind, max(depth - 1, 0))
                   for i, s in enumerate(shapes)]
        names = ["a", "b", "c"][:n]
        formals = [named(nm, a) for nm, a in zip(names, actuals)]
        saved_pool, self.pool, self.in_def = self.pool, list(formals), True
        try:
            lines = []
            if self.chance(0.4):
                for i in range(self.choice([1, 2])):
                    local = self.expr(shape, kind, max(depth, 1))
                    let = bind("t%d" % (i + 1), local)
                    lines.append("  let %s = %s" % (let.text, local.text))
                    self.pool.append(let)
            body = self.expr(shape, kind, max(depth, 1))
        finally:
            self.pool, self.in_def = saved_pool, False
        if body.kind != kind or body.weak:
            raise Fail("wrong kind")
        name = self.name("f")
        if lines:
            source = ["def %s(%s) {" % (name, ", ".join(names))] + lines + ["  return " + body.text, "}"]
        else:
            source = ["def %s(%s) = %s" % (name, ", ".join(names), body.text)]

        node = Call("%s(%s)" % (name, ", ".join(a.text for a in actuals)), body, formals, actuals)
        node.host_only = body.host_only
        if identical_value(body) in formals:
            node.alias = identical_value(actuals[formals.index(identical_value(body))])
        self.program.defs.append((name, source))
        return node

    def pin(self, shape, kind, depth):
        """@host EXPR or @device EXPR: where the node computing EXPR runs (@device only where it can)."""
        x = self.expr(shape, kind, depth)
        if x.weak or x.prec == PIN or identical_value(x) or not x.args:      # "@host applies to an operation"
            raise Fail("nothing to pin")
        place = "host" if x.host_only or self.chance(0.5) else "device"
        node = Node("@%s %s" % (place, wrap(x, UNARY)), PIN, x.dtype, shape, x.ref, x.err, [x], lambda v: v)
        node.host_only = x.host_only
        return node

    # -- statements

    def let(self, node, output=True):
        """Binds `node` to a new let; returns the let, which later expressions may reuse."""
        if node.weak:
            raise Fail("a literal")
        name = self.name("t")
        self.program.lines.append("let %s = %s" % (name, node.text))
        ref = bind(name, node)
        if output:
            self.program.outputs.append(ValueOutput(name, ref))
        self.pool.append(ref)
        self.lets.append(ref)
        return ref

    def cost_term(self, value):
        """A scalar of an f64 `value` for a cost: sum(value * weights), mean, sum, sum of squares, or itself."""
        n = value.ref.size
        form = self.choice(["weights", "mean", "sum", "square"] if value.shape else ["scalar", "square"])
        # The error bound of each: the rounding of its n + 1 operations, and the error of `value` propagated.
        if form == "weights":
            w = self.new_input(value.shape, FLOAT)
            return self.node("sum(%s * %s)" % (value.text, w.text), ATOM, F64, (), lambda x, y: np.sum(x * y),
                             [value, w], lambda r: np.sum(np.abs(value.ref * w.ref) * (n + 2) * EPS[F64]
                                                          + np.abs(w.ref) * value.err))
        if form == "square":
            return self.node("sum(%s * %s)" % (value.text, value.text), ATOM, F64, (), lambda x: np.sum(x * x),
                             [value], lambda r: np.sum(value.ref ** 2 * (n + 2) * EPS[F64]
                                                       + 2 * np.abs(value.ref) * value.err))
        if form == "scalar":
            return value
        divisor = n if form == "mean" else 1
        return self.node("%s(%s)" % (form, value.text), ATOM, F64, (), lambda x: np.sum(x) / divisor, [value],
                         lambda r: np.sum(np.abs(value.ref) * (n + 2) * EPS[F64] + value.err) / divisor)

    def statement(self, kind=None):
        """A let of a random expression (of `kind`, or any)."""
        for _ in range(20):
            wanted = kind or self.choice([FLOAT, INT, LOGIC], [0.6, 0.25, 0.15])
            shapes = [v.shape for v in self.pool]
            shape = self.choice(shapes) if shapes and self.chance(0.3) else self.shape()
            try:
                return self.let(self.expr(shape, wanted, self.choice([1, 2, 2, 3, 3, 4])), output=self.chance(0.7))
            except Fail:
                pass
        raise Fail("no statement")


def slice_text(key):
    text = ("" if key.start is None else str(key.start)) + ":" + ("" if key.stop is None else str(key.stop))
    return text + ("" if key.step is None else ":%d" % key.step)


# ---- Programs and their checks -------------------------------------------------------------------------------------

class ValueOutput:
    """An output compared with its reference."""

    def __init__(self, name, node):
        self.name, self.node = name, node

    def check(self, got, results):
        return compare(got, self.node.ref, self.node.err, self.node.dtype, self.node.shape)


class GradOutput:
    """A gradient compared with central differences of the reference cost (fourth order, at steps h and h/2,
    extrapolated: the difference of the two estimates their truncation error)."""

    def __init__(self, name, cost, wrt, program):
        self.name, self.cost, self.wrt, self.program = name, cost, wrt, program

    def check(self, got, results):
        problem = check_type(got, F64, self.wrt.shape)
        if problem:
            return problem
        fd, steps, truncation = self.differences()
        rounding_error = 10 * float(np.max(self.cost.err)) / steps
        bound = GRAD_RTOL * np.max(np.abs(fd), initial=0.0) + rounding_error + 2 * truncation
        bad = ~(np.abs(got - fd) <= bound)
        if not bad.any():
            return None
        return describe_mismatch(got, fd, bad, bound, "central differences")

    def differences(self):
        """(The differences, their smaller steps, their truncation errors), each shaped like the variable."""
        inputs = {id(node): node.ref for node, _ in self.program.inputs.values()}
        flat = self.wrt.ref.astype(np.float64).reshape(-1)
        branches = self.cost.branches(self.environment(inputs, flat))
        result, steps, truncation = np.zeros(flat.size), np.zeros(flat.size), np.zeros(flat.size)
        for i in range(flat.size):
            h = GRAD_STEP * max(1.0, abs(flat[i]))
            for _ in range(10):
                coarse, fine = self.difference(inputs, flat, i, h, branches), \
                    self.difference(inputs, flat, i, h / 2, branches)
                if coarse is not None and fine is not None:
                    break
                h /= 8
            else:
                raise RuntimeError("no step keeps every piecewise operation on its branch (a bug of the tester)")
            result[i] = fine + (fine - coarse) / 15            # the error of each is ~h^4: Richardson
            steps[i], truncation[i] = h / 2, abs(fine - coarse) / 15
        shape = self.wrt.ref.shape
        return result.reshape(shape), steps.reshape(shape), truncation.reshape(shape)

    def difference(self, inputs, flat, i, h, branches):
        """The fourth-order central difference along element i with step h, or None if some piecewise operation
        leaves its branch (see Node.branches) over the four points."""
        costs = []
        for k in (-2, -1, 1, 2):
            value = flat.copy()
            value[i] += k * h
            env = self.environment(inputs, value)
            if not all(np.array_equal(a, b) for a, b in zip(self.cost.branches(env), branches)):
                return None
            costs.append(float(env[id(self.cost)]))
        return ((costs[0] - costs[3]) - 8 * (costs[1] - costs[2])) / (12 * h)

    def environment(self, inputs, wrt):
        """The graph evaluated with `wrt` (flat) as the value of the variable."""
        env = dict(inputs)
        env[id(self.wrt)] = wrt.reshape(self.wrt.ref.shape)
        self.cost.evaluate(env)
        return env


class PropertyOutput:
    """An output checked by a property: `check(got, results)` returns a message or None."""

    def __init__(self, name, check):
        self.name, self.check = name, check


class Program:
    """One program: its statements, inputs (with their values), load() files and checked outputs."""

    def __init__(self, seed, index, kind):
        self.seed, self.index, self.kind = seed, index, kind
        self.inputs = {}           # name -> (node, values as saved)
        self.files = {}            # load() constants: file name -> values
        self.defs = []             # (name, source lines)
        self.lines, self.outputs = [], []

    def source(self):
        body = " ".join(self.lines)
        defs = [lines for name, lines in self.defs if re.search(r"\b%s\(" % name, body)]
        lines = ["# random program %d of seed %d (%s)" % (self.index, self.seed, self.kind)]
        lines += ["input %s : %s" % (name, declared_type(self.inputs[name][0])) for name in self.used_inputs()]
        lines += [line for d in defs for line in d] + self.lines
        lines.append("output " + ", ".join(o.name for o in self.outputs))
        return "\n".join(lines) + "\n"

    def used_inputs(self):
        body = " ".join(self.lines)
        return [name for name in self.inputs if re.search(r"\b%s\b" % name, body)]


def declared_type(node):
    return node.dtype if not node.shape else "%s[%s]" % (node.dtype, ", ".join(str(d) for d in node.shape))


def generate(seed, index):
    """Program `index` of `seed` (a construction that fails is drawn again, from the next random stream).
    Candidate values may overflow or divide by zero: NumPy's warnings are off, as accept() rejects them."""
    for attempt in range(100):
        rng = np.random.RandomState([seed, index, attempt])
        program = Program(seed, index, rng.choice(["value", "grad", "random"], p=[0.76, 0.2, 0.04]))
        gen = Generator(rng, program)
        try:
            with np.errstate(all="ignore"):
                if program.kind == "random":
                    random_program(gen)
                    return program
                for _ in range(gen.choice([1, 2, 3, 3, 4, 5])):
                    gen.statement(kind=FLOAT if program.kind == "grad" else None)
                if program.kind == "grad":
                    gradient_statements(gen)
                elif not program.outputs:
                    program.outputs.append(ValueOutput(gen.pool[-1].text, gen.pool[-1]))
                return program
        except Fail:
            pass
    raise RuntimeError("cannot generate program %d of seed %d" % (index, seed))


def gradient_statements(gen):
    """A scalar cost summing a term of each float let, and its gradient with respect to inputs and lets."""
    program = gen.program
    terms = [gen.cost_term(v) for v in gen.lets]
    cost = terms[0]
    for term in terms[1:]:
        cost = gen.arithmetic("+", cost, term, (), F64)
    cost = gen.let(cost)
    body = " ".join(program.lines)
    candidates = [v for v in gen.pool if v is not cost and v.dtype == F64 and v.ref.size <= 64
                  and not v.alias and re.search(r"\b%s\b" % v.text, body)]
    if not candidates:
        raise Fail("nothing to differentiate")
    wrt = [candidates[i] for i in gen.rng.choice(len(candidates), min(len(candidates), gen.choice([1, 2, 3])),
                                                 False)]
    names = [gen.name("g") for _ in wrt]
    # A candidate may reach the cost only through a function that ignores it: zeros, as the reference says,
    # asked for (by default such a grad is an error).
    program.lines.append("let %s = grad(%s, %s, disconnected=\"zero\")"
                         % (", ".join(names), cost.text, ", ".join(w.text for w in wrt)))
    for name, w in zip(names, wrt):
        program.outputs.append(GradOutput(name, cost, w, program))


def random_program(gen):
    """rand and randn, checked by their properties."""
    program = gen.program
    dtype = gen.choice([F32, F64])
    shape = gen.choice([(100, 30), (2000,), (3, 4), (7,), (40, 50)])
    seed = gen.rng.randint(0, 1000)
    dims = "[%s]" % ", ".join(str(d) for d in shape)
    suffix = "" if dtype == F32 and gen.chance(0.5) else ", dtype=%s" % dtype
    u, u2, n, v, w = (gen.name(s) for s in ("u", "u", "n", "v", "w"))
    program.lines += [
        "let %s = rand(%s, seed=%d%s)" % (u, dims, seed, suffix),
        "let %s = rand(%s, seed=%d%s) * 2.0 + 1.0" % (u2, dims, seed, suffix),
        "let %s = randn(%s, seed=%d%s)" % (n, dims, seed + 1, suffix),
        "let %s = rand(%s%s)" % (v, dims, suffix),
        "let %s = all(rand(%s, seed=%d) < 1.0) and all(randn(%s, seed=%d) > -10.0)" % (w, dims, seed + 2, dims,
                                                                                   seed + 3)]
    program.outputs += [
        PropertyOutput(u, lambda got, _: check_uniform(got, shape, dtype)),
        PropertyOutput(u2, lambda got, results: same_numbers(got, results.get(u), dtype)),
        PropertyOutput(n, lambda got, _: check_normal(got, shape, dtype)),
        PropertyOutput(v, lambda got, _: check_uniform(got, shape, dtype)),
        PropertyOutput(w, lambda got, _: check_type(got, BOOL, ()) or (None if got else "expected true"))]


def check_uniform(got, shape, dtype):
    problem = check_type(got, dtype, shape)
    if problem:
        return problem
    if not (got.min() >= 0 and got.max() < 1):
        return "values outside [0, 1): min %r, max %r" % (got.min(), got.max())
    if got.size >= 1000 and abs(got.mean() - 0.5) > 6 * math.sqrt(1 / 12 / got.size):
        return "mean %r, expected about 0.5" % got.mean()
    return None


def check_normal(got, shape, dtype):
    problem = check_type(got, dtype, shape)
    if problem:
        return problem
    if not np.isfinite(got).all():
        return "non-finite values"
    if got.size >= 1000:
        mean, std = float(np.mean(got, dtype=np.float64)), float(np.std(got, dtype=np.float64))
        if abs(mean) > 6 / math.sqrt(got.size) or abs(std - 1) > 6 / math.sqrt(2 * got.size):
            return "mean %r and std %r, expected about 0 and 1" % (mean, std)
    return None


def same_numbers(got, first, dtype):
    """`got` is rand(seed) * 2 + 1 computed in `dtype`, from the same seed's numbers `first`."""
    if first is None:
        return "its reference output is missing"
    want = first.astype(NUMPY[dtype]) * NUMPY[dtype](2) + NUMPY[dtype](1)
    if got.dtype != want.dtype or not np.array_equal(got, want):
        return "differs from 2 * rand + 1 of the same seed's numbers"
    return None


# ---- Comparison ----------------------------------------------------------------------------------------------------

def check_type(got, dtype, shape):
    want = np.dtype(NUMPY[dtype])
    shape = tuple(int(d) for d in shape)
    if got.dtype != want or got.shape != shape:
        return "got %s%s, expected %s%s" % (FROM_NUMPY.get(got.dtype, got.dtype), list(got.shape), dtype,
                                            list(shape))
    return None


def compare(got, ref, err, dtype, shape):
    """A message, or None when `got` is the reference `ref` within SAFETY * `err`."""
    problem = check_type(got, dtype, shape)
    if problem:
        return problem
    if KIND[dtype] != FLOAT:
        bad = got != ref
        bound = None
    else:
        bound = SAFETY * err
        bad = ~(np.abs(got.astype(np.float64) - ref) <= bound)
    if not bad.any():
        return None
    return describe_mismatch(got, ref, bad, bound, "expected")


def describe_mismatch(got, want, bad, bound, label):
    where = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:4]] if np.ndim(bad) else [()]
    details = []
    for ix in where:
        text = "at %s got %r, %s %r" % (list(ix), got[ix].item(), label, np.asarray(want)[ix].item())
        if bound is not None:
            text += " (bound %.3g)" % np.broadcast_to(bound, np.shape(bad))[ix]
        details.append(text)
    return "%d of %d values differ: %s" % (np.sum(bad), np.size(bad), "; ".join(details))


# ---- Running tgc ---------------------------------------------------------------------------------------------------

def write_program_files(programs, folder):
    """The script of `programs` and their .npy inputs in `folder`; returns the tgc arguments after the script."""
    os.makedirs(folder, exist_ok=True)
    args = []
    for program in programs:
        for name in program.used_inputs():
            path = os.path.join(folder, name + ".npy")
            np.save(path, program.inputs[name][1])
            args += ["--in", "%s=%s" % (name, path)]
        for file, values in program.files.items():
            np.save(os.path.join(folder, file), values)
        for output in program.outputs:
            args += ["--out", "%s=%s" % (output.name, os.path.join(folder, "out_%s.npy" % output.name))]
    with open(os.path.join(folder, "script.tg"), "w") as f:
        f.write("".join(p.source() for p in programs))
    return args


def run_tgc(options, programs, folder):
    """Runs `programs` as one script; returns (tgc's exit status and output, {output name: array})."""
    args = write_program_files(programs, folder)
    command = [options.tgc, "run", os.path.join(folder, "script.tg"), "--device", options.device] + args
    try:
        process = subprocess.run(command, capture_output=True, text=True, timeout=300)
        status, output = process.returncode, (process.stderr + process.stdout).strip()
    except subprocess.TimeoutExpired:
        status, output = "a timeout", "killed after 300 s"
    results = {}
    for program in programs:
        for out in program.outputs:
            path = os.path.join(folder, "out_%s.npy" % out.name)
            if os.path.exists(path):
                results[out.name] = np.load(path)
                os.remove(path)
    return status, output, results


def check_program(program, status, output, results):
    """The failure messages of `program` given its run."""
    missing = [o.name for o in program.outputs if o.name not in results]
    if status != 0 or missing:
        unwritten = " without writing " + ", ".join(missing) if missing else ""
        return ["tgc exited with %s%s\n%s" % (status, unwritten, indent(output or "(no output)"))]
    messages = []
    for out in program.outputs:
        try:
            with np.errstate(all="ignore"):
                message = out.check(results[out.name], results)
        except Exception as error:                      # a crash of the check is a failure too
            message = "the check failed: %r" % error
        if message:
            messages.append("%s: %s" % (out.name, message))
    return messages


def run_batch(options, seed, indices):
    """Generates and runs programs `indices` of `seed`; returns [(index, failure report or None)]."""
    programs, reports = [], []
    for i in indices:
        try:
            programs.append(generate(seed, i))
        except Exception:                                      # a bug of this tester: say so, and go on
            reports.append((i, "FAIL program %d: the generator failed\n%s" % (i, indent(traceback.format_exc()))))
    if not programs:
        return reports
    batch = os.path.join(options.workdir, "batch_%d" % programs[0].index)
    status, output, results = run_tgc(options, programs, batch)
    keep_batch = options.keep
    for program in programs:
        failures = check_program(program, status, output, results)
        if failures and len(programs) > 1:                    # again alone, to report it on its own
            alone = check_program(program, *run_tgc(options, [program], program_folder(options, program)))
            if alone:
                failures = alone
            elif status == 0:
                failures = ["fails only in its batch (script and inputs in %s), passes alone:" % batch] + failures
                keep_batch = True
            else:
                failures = []                                  # the batch failed because of another program
        if not failures and not options.keep:
            shutil.rmtree(program_folder(options, program), ignore_errors=True)
        reports.append((program.index, report(options, program, failures) if failures else None))
    if not keep_batch:
        shutil.rmtree(batch, ignore_errors=True)
    return reports


def program_folder(options, program):
    return os.path.join(options.workdir, "program_%d" % program.index)


def report(options, program, failures):
    """A failure's report: the messages, the source, and how to reproduce it."""
    folder = program_folder(options, program)
    if not os.path.exists(os.path.join(folder, "script.tg")):
        write_program_files([program], folder)
    lines = ["FAIL program %d (%s)" % (program.index, program.kind)]
    lines += [indent(f) for f in failures]
    lines.append("    script:")
    lines.append(indent(program.source().rstrip(), 6))
    lines.append("    reproduce (script and inputs in %s):" % folder)
    lines.append("      cd %s && %s run script.tg --device %s %s" % (
        folder, options.tgc, options.device, " ".join("--in %s=%s.npy" % (n, n) for n in program.used_inputs())))
    lines.append("      /usr/bin/python3 %s --tgc %s --device %s --seed %d --only %d" % (
        os.path.abspath(__file__), options.tgc, options.device, program.seed, program.index))
    return "\n".join(lines)


def indent(text, n=4):
    return "\n".join(" " * n + line for line in text.splitlines())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tgc", required=True, help="the tgc binary")
    parser.add_argument("--device", default="cpu", choices=["cpu", "sim", "cuda", "auto"])
    parser.add_argument("--count", type=int, default=500, help="number of programs (default 500)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", type=int, help="run only program K of the seed")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", metavar="DIR", help="keep every script and .npy file in DIR")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every program")
    options = parser.parse_args()
    options.tgc = os.path.abspath(options.tgc)
    if not os.access(options.tgc, os.X_OK):
        print("error: no tgc binary at %s" % options.tgc)
        print("0 passed, 1 failed")
        return 2
    indices = [options.only] if options.only is not None else list(range(1, options.count + 1))
    print("random programs: seed %d, %d programs, device %s, %d jobs" % (options.seed, len(indices),
                                                                         options.device, options.jobs))
    start = time.time()
    if options.keep:
        os.makedirs(options.keep, exist_ok=True)
    options.workdir = os.path.abspath(options.keep) if options.keep else tempfile.mkdtemp(prefix="tgc_random_")
    batches = [indices[i:i + BATCH] for i in range(0, len(indices), BATCH)]
    passed = failed = 0
    with concurrent.futures.ProcessPoolExecutor(max(1, options.jobs)) as pool:
        futures = [pool.submit(run_batch, options, options.seed, batch) for batch in batches]
        for future in futures:
            for index, failure in future.result():
                if failure:
                    failed += 1
                    print(failure)
                else:
                    passed += 1
                    if options.verbose:
                        print("PASS program %d" % index)
    if not failed and not options.keep:
        shutil.rmtree(options.workdir, ignore_errors=True)
    elif failed:
        print("failing programs kept in %s" % options.workdir)
    print("%.1f s, %.0f programs/s" % (time.time() - start, len(indices) / max(time.time() - start, 1e-9)))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
