"""The Python module against the command line: the same numbers, the same errors, NumPy arrays without copies.

  PYTHONPATH=build/python TGC=build/tgc /usr/bin/python3 -m pytest tests/python
"""
import glob
import json
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tgc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TGC = os.environ.get("TGC", os.path.join(ROOT, "build", "tgc"))
EXAMPLES = os.path.join(ROOT, "examples")
DATA = os.path.join(EXAMPLES, "data")
INPUTS = os.path.join(ROOT, "tests", "lit", "run", "Inputs")


def cli(*args):
    """(exit code, standard output, standard error) of the tgc command."""
    result = subprocess.run([TGC, *args], capture_output=True, text=True)
    return result.returncode, result.stdout, result.stderr


NUMPY_NAMES = {"f32": "np.float32", "f64": "np.float64", "i32": "np.int32", "i64": "np.int64", "bool": "bool"}


def as_python(stderr):
    """The command's error text as the module words it: no "tgc: error: " before a message without a location,
    options in Python's spelling, and an array of the wrong dtype told how to convert it."""
    text = re.sub(r"(?m)^tgc: error: ", "", stderr.rstrip("\n"))
    text = re.sub(r"--device=(\w+)", r'device="\1"', text)
    return re.sub(r"(input '\w+' has dtype \w+, but the script declares (\w+)(\[[^\]]*\])?)",
                  lambda m: m[1] + "; convert it with .astype(%s)" % NUMPY_NAMES[m[2]], text)


def cli_values(stdout):
    """{name: [printed value, ...]} from `name = value` and `step N: name = value` lines."""
    values = {}
    for name, value in re.findall(r"^(?:step \d+: )?(\w+) = (\S+)$", stdout, re.M):
        values.setdefault(name, []).append(value)
    return values


def logreg_data():
    return np.load(os.path.join(DATA, "logreg_X.npy")), np.load(os.path.join(DATA, "logreg_y.npy"))


# ---- training gives the command line's numbers ----

def test_logreg_200_steps_prints_the_clis_loss():
    code, stdout, stderr = cli("run", os.path.join(EXAMPLES, "logreg.tg"), "--steps", "200",
                               "--in", "X=" + os.path.join(DATA, "logreg_X.npy"),
                               "--in", "y=" + os.path.join(DATA, "logreg_y.npy"), "--device", "cpu")
    assert code == 0, stderr
    program = tgc.compile(os.path.join(EXAMPLES, "logreg.tg"), device="cpu")
    X, y = logreg_data()
    for _ in range(200):
        out = program.step(X=X, y=y)
    # The same kernels on the same machine: the same float32, printed to its last digit.
    assert str(out["loss"]) == cli_values(stdout)["loss"][0]


def test_each_step_gives_the_clis_numbers():
    code, stdout, stderr = cli("run", os.path.join(EXAMPLES, "mlp.tg"), "--steps", "5", "--print-every", "1",
                               "--in", "X=" + os.path.join(DATA, "spiral_X.npy"),
                               "--in", "labels=" + os.path.join(DATA, "spiral_y.npy"), "--device", "cpu",
                               "--out", "W2=/dev/null")
    assert code == 0, stderr
    expected = cli_values(stdout)
    program = tgc.compile(os.path.join(EXAMPLES, "mlp.tg"), device="cpu")
    X, labels = np.load(os.path.join(DATA, "spiral_X.npy")), np.load(os.path.join(DATA, "spiral_y.npy"))
    for step in range(5):
        out = program.step(X=X, labels=labels)
        assert [str(out["loss"]), str(out["accuracy"])] == [expected["loss"][step], expected["accuracy"][step]]


def test_mlp_trained_from_python_classifies_every_point():
    program = tgc.compile(os.path.join(EXAMPLES, "mlp.tg"))
    X, labels = np.load(os.path.join(DATA, "spiral_X.npy")), np.load(os.path.join(DATA, "spiral_y.npy"))
    losses = [float(program.step(X=X, labels=labels)["loss"]) for _ in range(2000)]
    assert losses[-1] < losses[0] / 10
    assert float(program(X=X, labels=labels)["accuracy"]) == 1.0


def test_run_does_not_apply_updates_and_step_does():
    program = tgc.compile(os.path.join(EXAMPLES, "logreg.tg"), device="cpu")
    X, y = logreg_data()
    w0 = program.params["w"].copy()
    first, again = program(X=X, y=y)["loss"], program(X=X, y=y)["loss"]
    assert first == again and np.array_equal(program.params["w"], w0)
    program.step(X=X, y=y)
    assert not np.array_equal(program.params["w"], w0)
    assert program(X=X, y=y)["loss"] < first


def test_the_simulated_device_gives_the_cpus_numbers():
    X, y = logreg_data()
    results = {}
    for device in ("cpu", "sim"):
        program = tgc.compile(os.path.join(EXAMPLES, "logreg.tg"), device=device)
        for _ in range(20):
            results[device] = program.step(X=X, y=y)["loss"]
        assert program.device.startswith(device)
    np.testing.assert_allclose(results["sim"], results["cpu"], rtol=1e-5)


# ---- inputs, outputs and params ----

SCALE = "input x : f32[n]\ninput s : f32\nlet y = x * s\noutput y, x\n"


def test_symbolic_dimensions_are_bound_per_call():
    program = tgc.compile(SCALE)
    assert program.inputs["x"] == tgc.Spec("x", np.dtype("float32"), ("n",))
    for n in (5, 7, 0):
        out = program(x=np.arange(n, dtype=np.float32), s=np.float32(2))
        np.testing.assert_array_equal(out["y"], 2 * np.arange(n, dtype=np.float32))


def test_python_and_numpy_scalars_take_the_declared_dtype_within_their_kind():
    program = tgc.compile(SCALE)
    np.testing.assert_array_equal(program(x=[1, 2], s=0.5)["y"], np.array([0.5, 1], np.float32))
    # A NumPy scalar is weak as a Python number is, where its value fits; an array keeps its dtype.
    np.testing.assert_array_equal(program(x=[1.0], s=np.float64(2))["y"], np.array([2], np.float32))
    with pytest.raises(tgc.InputError, match=r"input 's' has dtype f64, but the script declares f32"):
        program(x=[1.0], s=np.float64(1e300))  # not finite as an f32
    with pytest.raises(tgc.InputError, match=r"input 'x' has dtype f64, but the script declares f32\[n\]; "
                                             r"convert it with \.astype\(np\.float32\)"):
        program(x=np.ones(2), s=1.0)
    integer = tgc.compile("input i : i32\noutput i\n")
    assert integer(i=np.int64(7))["i"].dtype == np.int32
    with pytest.raises(tgc.InputError):
        integer(i=np.int64(2 ** 40))  # out of range
    with pytest.raises(tgc.InputError):
        integer(i=2.5)  # a float does not become an integer


def test_zero_dimensional_outputs_are_zero_dimensional_arrays():
    out = tgc.compile("input x : f32[n]\nlet total = sum(x)\noutput total\n")(x=np.ones(4, np.float32))
    assert isinstance(out["total"], np.ndarray) and out["total"].ndim == 0 and out["total"] == 4


def test_well_typed_inputs_are_read_in_place():
    program = tgc.compile(SCALE)
    x = np.arange(10, dtype=np.float32)
    for view in (x, x[::2], x[2:]):  # contiguous, strided and offset views of one buffer
        out = program(x=view, s=1.0)
        assert np.shares_memory(out["x"], x), "the input was copied"
        np.testing.assert_array_equal(out["x"], view)
    reversed_view = x[::-1]  # a negative stride is copied once, and still read right
    out = program(x=reversed_view, s=1.0)
    assert not np.shares_memory(out["x"], x)
    np.testing.assert_array_equal(out["y"], reversed_view)
    unaligned = np.arange(41, dtype=np.uint8)[1:].view(np.float32)
    assert not unaligned.flags.aligned
    np.testing.assert_array_equal(program(x=unaligned, s=1.0)["y"], unaligned)
    big_endian = np.arange(3, dtype=">f4")
    np.testing.assert_array_equal(program(x=big_endian, s=2.0)["y"], [0, 2, 4])


def test_outputs_are_arrays_over_tgcs_buffers():
    program = tgc.compile(SCALE)
    x = np.arange(4, dtype=np.float32)
    out = program(x=x, s=3.0)
    y = out["y"]
    assert type(y.base).__name__ == "PyCapsule", "the output is not tgc's buffer"
    assert y.flags.writeable and not np.shares_memory(y, x)
    y[0] = 42  # a value no one else holds may be written
    again = program(x=x, s=3.0)["y"]
    assert not np.shares_memory(again, y) and again[0] == 0
    del out, program  # an output outlives its program
    assert y[0] == 42 and y[1] == 3


def test_params_read_only_views_assigned_by_value():
    program = tgc.compile(os.path.join(EXAMPLES, "logreg.tg"))
    w = program.params["w"]
    assert list(program.params) == ["w", "b"] and "w" in program.params and "v" not in program.params
    assert not w.flags.writeable
    with pytest.raises(ValueError):
        w[0] = 1
    new = np.array([1, 2, 3, 4], np.float32)
    program.params["w"] = new
    new[0] = 100  # the param took a copy
    np.testing.assert_array_equal(program.params["w"], [1, 2, 3, 4])
    program.params.update(b=np.float32(0.5))
    assert program.params["b"] == 0.5 and program.params.specs["b"].shape == ()
    with pytest.raises(tgc.InputError, match=r"param 'w' has shape \(4,\) \(f32\[4\]\), not \(3,\)"):
        program.params["w"] = np.zeros(3, np.float32)
    with pytest.raises(tgc.InputError, match=r"param 'w' has dtype f32 \(f32\[4\]\), not f64"):
        program.params["w"] = np.zeros(4, np.float64)
    with pytest.raises(tgc.InputError, match=r"unknown param 'v'; the script's params are: w, b"):
        program.params["v"] = 1.0
    with pytest.raises(tgc.InputError, match=r"unknown param 'v'"):
        program.params["v"]
    X, y = logreg_data()
    program.params["w"] = np.zeros(4, np.float32)
    program.params["b"] = 0.0
    fresh = tgc.compile(os.path.join(EXAMPLES, "logreg.tg"))
    assert program(X=X, y=y)["loss"] == fresh(X=X, y=y)["loss"]  # zeros are logreg's initial values


def test_an_update_to_an_input_leaves_the_callers_array_alone():
    program = tgc.compile("input x : f32[3]\nparam p : f32[3] = zeros([3])\nupdate p = x\noutput p\n")
    x = np.ones(3, np.float32)
    program.step(x=x)
    x[:] = 7
    np.testing.assert_array_equal(program.params["p"], [1, 1, 1])


def test_params_on_the_simulated_device():
    program = tgc.compile(os.path.join(EXAMPLES, "logreg.tg"), device="sim")
    program.params["w"] = np.ones(4, np.float32)
    np.testing.assert_array_equal(program.params["w"], np.ones(4))
    X, y = logreg_data()
    program.step(X=X, y=y)
    assert not np.array_equal(program.params["w"], np.ones(4))


# ---- describing and printing ----

def test_describes_inputs_outputs_and_params():
    program = tgc.compile(os.path.join(EXAMPLES, "mlp.tg"))
    assert [(s.name, str(s.dtype), s.shape) for s in program.inputs.values()] == [
        ("X", "float32", ("n", 2)), ("labels", "int64", ("n",))]
    assert list(program.outputs) == ["loss", "accuracy"]
    assert program.params.specs["W1"].shape == (2, 64)
    assert "inputs ['X', 'labels']" in repr(program)


def test_emit_prints_what_tgc_compile_prints():
    path = os.path.join(EXAMPLES, "logreg.tg")
    program = tgc.compile(path, device="cpu")
    for stage in ("ast", "ir", "opt", "dot", "llvm"):
        code, stdout, stderr = cli("compile", path, "--emit=" + stage)
        assert code == 0, stderr
        assert program.emit(stage) == stdout, stage
    graph = json.loads(program.emit("json"))
    assert graph["nodes"] and "placement" not in graph
    placed = json.loads(tgc.compile(path, device="sim").emit("json"))
    assert placed["placement"]["strategy"] == "global"
    with pytest.raises(tgc.UsageError, match="unknown stage 'asm'; expected ast, ir, opt, json, dot, llvm or ptx"):
        program.emit("asm")


def test_explain_says_where_each_node_runs():
    path = os.path.join(EXAMPLES, "logreg.tg")
    code, stdout, stderr = cli("compile", path, "--device=sim", "--explain-placement")
    assert code == 0, stderr
    assert tgc.compile(path, device="sim").explain() == stdout
    assert "device" in stdout


def test_options_are_the_command_lines():
    path = os.path.join(EXAMPLES, "logreg.tg")
    code, stdout, _ = cli("compile", path, "--emit=opt", "--opt-exclude=fusion")
    assert tgc.compile(path, opt_exclude="fusion").emit("opt") == stdout
    assert tgc.compile(path, opt_exclude=["fusion"], no_cache=True).emit("opt") == stdout
    code, stdout, _ = cli("compile", path, "--emit=ir", "--stop-after=canonicalize")
    assert tgc.compile(path, stop_after="canonicalize").emit("ir") == stdout
    code, stdout, _ = cli("compile", path, "--emit=opt", "-O0")
    assert tgc.compile(path, optimize=False).emit("opt") == stdout
    cost = tgc.compile(path, device="sim", lift="cost", dims={"n": 1000000})
    assert json.loads(cost.emit("json"))["placement"]["strategy"] == "cost"
    X, y = logreg_data()
    assert cost.step(X=X, y=y)["loss"] > 0


def test_no_cache_keeps_one_programs_kernels_off_the_disk(tmp_path):
    script = """
import numpy as np, os, sys, tgc
cache = os.path.join(os.environ["XDG_CACHE_HOME"], "tgc")
entries = lambda: len(os.listdir(cache)) if os.path.isdir(cache) else 0
tgc.compile("input x : f32[n]\\noutput sin(x) * 3.0 + 1.0\\n", no_cache=True)(x=np.ones(3, np.float32))
print(entries())
tgc.compile("input x : f32[n]\\noutput cos(x) * 3.0 + 1.0\\n")(x=np.ones(3, np.float32))
print(entries())
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    without, with_cache = map(int, result.stdout.split())
    assert without == 0 and with_cache > 0


# ---- errors: the command line's text, as exceptions ----

COMPILE_ERRORS = sorted(path for path in glob.glob(os.path.join(ROOT, "tests", "lit", "errors", "*.tg"))
                        if "RUN: not %tgc compile %s" in open(path).read())


@pytest.mark.parametrize("path", COMPILE_ERRORS, ids=os.path.basename)
def test_every_script_error_of_the_cli_is_a_compile_error_with_its_text(path):
    code, _, stderr = cli("compile", path, "--emit=opt")
    assert code == 1
    with pytest.raises(tgc.CompileError) as caught:
        tgc.compile(path)
    error = caught.value
    assert str(error) == as_python(stderr)
    first = stderr.splitlines()[0]
    location = re.match(r"(.*):(\d+):(\d+): error: (.*)", first)
    if location:
        assert (error.file, error.line, error.column) == (location[1], int(location[2]), int(location[3]))
        assert error.message == location[4]
    else:
        assert error.line is None and error.message in first


def test_errors_in_source_text_are_located_in_it():
    with pytest.raises(tgc.CompileError) as caught:
        tgc.compile("input x : f32[3]\nlet y = x +\noutput y\n")
    assert (caught.value.file, caught.value.line) == ("<string>", 2)
    assert "let y = x +" in str(caught.value)


def test_a_missing_script_is_a_compile_error():
    with pytest.raises(tgc.CompileError, match=r"cannot read 'no/such.tg'"):
        tgc.compile("no/such.tg")
    code, _, stderr = cli("run", "no/such.tg")
    assert code == 1 and "cannot read 'no/such.tg'" in stderr


def test_what_is_not_a_script_is_refused_as_the_cli_refuses_it(tmp_path):
    (tmp_path / "m.tg").mkdir()
    (tmp_path / "s.tg").write_text("import m\nlet x = 1\noutput x\n")
    for path in (str(tmp_path), "/dev/zero", str(tmp_path / "s.tg")):
        code, _, stderr = cli("run", path)
        assert code == 1
        with pytest.raises(tgc.CompileError) as caught:
            tgc.compile(path)
        assert str(caught.value) == as_python(stderr)


def test_input_errors_have_the_clis_text():
    program = tgc.compile(os.path.join(INPUTS, "columns.tg"))
    X = np.load(os.path.join(INPUTS, "x43.npy"))
    y4, y5 = np.load(os.path.join(INPUTS, "y4.npy")), np.load(os.path.join(INPUTS, "y5.npy"))
    cases = [
        ({"X": X, "y": y5}, ["--in", "X=x43.npy", "--in", "y=y5.npy"]),
        ({"X": X, "y": y4.astype(np.float64)}, ["--in", "X=x43.npy", "--in", "y=y4f64.npy"]),
        ({"X": X, "y": y4, "z": y4}, ["--in", "X=x43.npy", "--in", "y=y4.npy", "--in", "z=y4.npy"]),
    ]
    for inputs, args in cases:
        args = [a if a == "--in" else a.split("=")[0] + "=" + os.path.join(INPUTS, a.split("=")[1]) for a in args]
        code, _, stderr = cli("run", os.path.join(INPUTS, "columns.tg"), "--device", "cpu", *args)
        assert code == 1
        with pytest.raises(tgc.InputError) as caught:
            program(**inputs)
        assert str(caught.value) == as_python(stderr)
        assert isinstance(caught.value, ValueError)
    with pytest.raises(tgc.InputError, match=r"missing input 'y', declared f32\[n\]") as caught:
        program(X=X)
    assert caught.value.line == 2 and "input y : f32[n]" in str(caught.value)
    with pytest.raises(tgc.InputError, match=r"input 'y' has dtype float16, which tgc does not have"):
        program(X=X, y=y4.astype(np.float16))
    with pytest.raises(tgc.InputError, match=r"dtype object"):
        program(X=X, y=np.array([object()] * 4))


def test_run_errors_are_located():
    program = tgc.compile("input a : f32[n]\nlet b = reshape(a, [2, -1])\noutput b\n")
    with pytest.raises(tgc.RunError, match=r"cannot reshape array of size 3 into shape \(2, -1\)") as caught:
        program(a=np.zeros(3, np.float32))
    assert (caught.value.line, caught.value.column) == (2, 9)
    assert program(a=np.zeros(4, np.float32))["b"].shape == (2, 2)  # the program goes on after an error


def test_bad_options_are_usage_errors():
    path = os.path.join(EXAMPLES, "logreg.tg")
    cases = [
        (dict(lift="fast"), "unknown lift strategy 'fast'; expected global, local or cost"),
        (dict(stop_after="nope"), "unknown pass 'nope' for stop-after; passes: merge, "),
        (dict(opt_exclude=["fusion", 3]), "opt_exclude expects a pass name or a list of them"),
        (dict(gpu_arch="volta"), "unknown GPU architecture 'volta'; expected sm_XX"),
        (dict(no_cache="yes"), "no_cache expects True or False"),
        (dict(dims={"n": -1}), "dims expects names and non-negative sizes"),
        (dict(cost_model="/no/such.json"), "cost_model: "),
        (dict(speed=11), "compile\\(\\) got an unexpected option 'speed'"),
        (dict(device="tpu"), "unknown device 'tpu'; expected auto, cpu, sim or cuda"),
        (dict(device=None), "device expects auto, cpu, sim or cuda"),
    ]
    for options, message in cases:
        with pytest.raises(tgc.UsageError, match=message):
            tgc.compile(path, **options)
    with pytest.raises(tgc.UsageError, match="expects a path or source text"):
        tgc.compile(42)


def test_an_absent_gpu_is_a_device_error():
    code, _, stderr = cli("run", os.path.join(EXAMPLES, "logreg.tg"), "--device", "cuda")
    if code == 0:
        pytest.skip("a CUDA GPU answers on this machine")
    with pytest.raises(tgc.DeviceError) as caught:
        tgc.compile(os.path.join(EXAMPLES, "logreg.tg"), device="cuda")
    assert str(caught.value) == as_python(stderr)


def test_every_error_is_a_tgc_error():
    for kind in (tgc.CompileError, tgc.InputError, tgc.DeviceError, tgc.RunError, tgc.UsageError):
        assert issubclass(kind, tgc.Error)


GARBAGE_SEEDS = (
    "input x : f32[n, 3]\nparam w : f32[3] = ones([3])\nlet y = x @ w + 1.0\nlet g = grad(sum(y * y), w)\n"
    "update w = w - 0.1 * g\noutput y\n",
    "input a : f32[4]\ninput b : i64[4]\nlet c = where(a > 0.0, a, f32(b)) * 2.5\noutput c, sum(c, axis=0)\n",
    "def f(x, y) = exp(x) - y\ninput x : f32[2, 2]\nlet z = f(x, x[0, :])\nlet t = transpose(z)[1:, :]\n"
    "output z, t\n",
)


def test_garbage_never_crashes_the_interpreter():
    # Valid scripts with a few tokens dropped, repeated, swapped or replaced: about half still compile and
    # run, the rest are errors of every stage (syntax, names, types, shapes), each a tgc.Error.
    rng = np.random.default_rng(7)
    alphabet = "input let output param update def grad ( ) [ ] , : = + - * / @ x y w f32 i64 1 2.5 \n # .".split(" ")
    compiled = ran = 0
    for _ in range(300):
        tokens = re.findall(r"\d+\.\d+|\w+|\n|[^\s\w]", GARBAGE_SEEDS[rng.integers(len(GARBAGE_SEEDS))])
        for _ in range(rng.integers(0, 3)):
            i = int(rng.integers(len(tokens)))
            mutation = rng.integers(4)
            if mutation == 0:
                del tokens[i]
            elif mutation == 1:
                tokens.insert(i, tokens[i])
            elif mutation == 2 and i + 1 < len(tokens):
                tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
            else:
                tokens[i] = alphabet[rng.integers(len(alphabet))]
        source = " ".join(tokens)
        try:
            program = tgc.compile(source)
            compiled += 1
            program(**{name: np.ones([2 if isinstance(d, str) else d for d in spec.shape], spec.dtype)
                       for name, spec in program.inputs.items()})
            ran += 1
        except tgc.Error:
            pass
    # Counts of this seed: a change that makes every script an error, or stops them running, fails here.
    assert compiled >= 60 and ran >= 40 and compiled < 300, (compiled, ran)


# ---- threads ----

def test_kernels_run_without_the_gil():
    program = tgc.compile("input a : f32[n, n]\nlet b = sort(a @ a, axis=1)\noutput b\n", device="cpu")
    a = np.random.default_rng(0).standard_normal((1500, 1500)).astype(np.float32)
    program(a=a[:8, :8])  # compiled and warm
    ticks = 0
    worker = threading.Thread(target=lambda: [program(a=a) for _ in range(3)])
    worker.start()
    while worker.is_alive():
        ticks += 1
        time.sleep(0)
    worker.join()
    assert ticks > 100, "the main thread did not run while kernels did: %d ticks" % ticks


def test_calls_from_threads_give_each_its_own_answer():
    program = tgc.compile(SCALE)
    results, errors = {}, []

    def work(k):
        try:
            for _ in range(50):
                out = program(x=np.full(1000, k, np.float32), s=2.0)
                assert np.all(out["y"] == 2 * k)
            results[k] = True
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 4


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_a_scan_trains_from_python(device):
    # A tanh recurrence over a sequence whose length is known only when it runs, trained a few steps: the
    # stacked states and the first loss are NumPy's, and the loss falls.
    program = tgc.compile("input xs : f32[t, 3]\n"
                          "param W : f32[3, 3] = eye(3) * 0.5\n"
                          "def step(h, x) = tanh(x + h @ W)\n"
                          "let hs = scan(step, zeros([3]), xs)\n"
                          "let loss = mean((hs - 0.25) ** 2)\n"
                          "update W = W - 0.5 * grad(loss, W)\n"
                          "output hs, loss\n", device=device)
    xs = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    h, want = np.zeros(3, np.float32), []
    for x in xs:
        h = np.tanh(x + h @ (np.eye(3, dtype=np.float32) * 0.5))
        want.append(h)
    first = program.step(xs=xs)
    np.testing.assert_allclose(first["hs"], np.array(want), rtol=1e-6, atol=1e-6)
    losses = [float(first["loss"])] + [float(program.step(xs=xs)["loss"]) for _ in range(5)]
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert program.step(xs=xs[:2])["hs"].shape == (2, 3)


def test_another_interpreter_is_told_which_one_the_module_is_for():
    # `python3 -S` has no site-packages, so no NumPy: as a pyenv or conda Python without it would be.
    module = os.path.dirname(os.path.dirname(os.path.abspath(tgc.__file__)))
    result = subprocess.run([sys.executable, "-S", "-c", "import tgc"], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=module))
    assert result.returncode != 0
    assert "ImportError: tgc's module was built for /usr/bin/python3" in result.stderr, result.stderr
    assert "NumPy cannot be imported" in result.stderr and "tgc-python" in result.stderr
    launcher = os.path.join(os.path.dirname(module), "tgc-python")
    result = subprocess.run([launcher, "-c", "import tgc, numpy; print(tgc.__version__)"], capture_output=True,
                            text=True)
    assert result.returncode == 0 and result.stdout.strip() == tgc.__version__, result.stderr


def test_compile_takes_source_or_path_by_keyword_and_says_which_it_tried():
    assert tgc.compile(source="output 1.0")()["1.0"] == 1.0
    assert list(tgc.compile(path=os.path.join(EXAMPLES, "softmax.tg")).outputs)
    with pytest.raises(tgc.CompileError, match=r"cannot read 'output 1\.0': no such file; tgc\.compile took it "
                                               r"as a path, having no newline: for source text, write "
                                               r"tgc\.compile\(source='output 1\.0'\)"):
        tgc.compile("output 1.0")
    with pytest.raises(tgc.UsageError, match="expects one script"):
        tgc.compile("output 1.0\n", source="output 2.0\n")
    with pytest.raises(tgc.UsageError, match="expects one script"):
        tgc.compile()


def test_the_module_shows_its_api_with_docstrings():
    assert dir(tgc) == sorted(tgc.__all__ + ["__version__", "blas"])
    for name in tgc.__all__:
        assert getattr(tgc, name).__doc__, name
    assert "source=" in tgc.compile.__doc__ and "device" in tgc.compile.__doc__


def test_errors_read_as_python_not_as_the_command_line():
    with pytest.raises(tgc.InputError) as caught:
        tgc.compile(source="input x : f32\noutput x\n")()
    assert not str(caught.value).startswith("tgc: error:")
    if os.path.exists("/nonexistent/libcuda.so.1"):
        pytest.skip("a driver where none should be")
    result = subprocess.run([sys.executable, "-c", "import tgc\ntry:\n  tgc.compile(source='output 1.0', "
                             "device='cuda')\nexcept tgc.DeviceError as e:\n  print(e)"],
                            capture_output=True, text=True,
                            env=dict(os.environ, TGC_CUDA_DRIVER="/nonexistent/libcuda.so.1"))
    assert 'device="cuda": no CUDA driver' in result.stdout and 'device="sim" runs' in result.stdout, result
    assert "--device" not in result.stdout


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_a_run_may_leave_out_an_input_only_the_updates_read(device):
    # Fusion puts the output and the update in one kernel; a run without lr still runs, on the current w.
    program = tgc.compile(source="input x : f32\ninput lr : f32\nparam w : f32 = 1.0\n"
                                 "let g = grad((w * x) ** 2, w)\nupdate w = w - lr * g\noutput w * x\n",
                          device=device)
    assert program(x=2.0)["w * x"] == 2.0
    program.step(x=2.0, lr=0.1)  # w = 1 - 0.1 * 8
    np.testing.assert_allclose(program(x=2.0)["w * x"], 0.4, rtol=1e-6)
    with pytest.raises(tgc.InputError, match="missing input 'lr'"):
        program.step(x=2.0)  # a step applies the updates: it needs lr
    with pytest.raises(tgc.InputError, match="missing input 'x'"):
        program(lr=0.1)  # the output reads x


def test_sizes_make_symbolic_dimensions_static_without_formatting_the_script():
    source = "input x : f32[n, 4]\nparam h : f32[n, 8] = zeros([n, 8])\noutput x @ ones([4, 8]) + h, n\n"
    program = tgc.compile(source=source, device="cpu", sizes={"n": 3})
    assert program.inputs["x"].shape == (3, 4) and program.params.specs["h"].shape == (3, 8)
    out = program(x=np.ones((3, 4), np.float32))
    np.testing.assert_array_equal(out["x @ ones([4, 8]) + h"], np.full((3, 8), 4, np.float32))
    assert out["n"] == 3
    with pytest.raises(tgc.InputError, match=r"dimension 0 is 5, but the script declares f32\[3, 4\]"):
        program(x=np.ones((5, 4), np.float32))
    with pytest.raises(tgc.UsageError, match="did you mean 'sizes'"):
        tgc.compile(source=source, size={"n": 3})
