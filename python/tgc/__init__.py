"""tgc from Python: compile .tg scripts, run them on NumPy arrays, train their params.

    import numpy as np, tgc
    program = tgc.compile("examples/logreg.tg")
    for _ in range(200):
        out = program.step(X=X, y=y)          # runs, then applies the updates
    print(out["loss"], program.params["w"])

docs/python.md is the reference. Every error is a tgc.Error whose str() is what the tgc command prints, in
Python's words (no "tgc: error: ", device="sim" for --device=sim).
"""

import collections.abc
import os
import sys
import warnings
from typing import Any, Dict, Iterator, NamedTuple, Optional, Tuple, Union

from . import _built_for


def _wrong_interpreter(why):
    """An ImportError that says which interpreter the module was built for, when another one imports it."""
    here = "%s (Python %d.%d)" % (sys.executable, sys.version_info[0], sys.version_info[1])
    launcher = (", or with %s (that interpreter, with the module on its path)" % _built_for.LAUNCHER
                if _built_for.LAUNCHER else "")
    return ImportError("tgc's module was built for %s (Python %s, with NumPy), but this is %s, where %s; run "
                       "it with %s%s" % (_built_for.EXECUTABLE, _built_for.VERSION, here, why,
                                         _built_for.EXECUTABLE, launcher))


try:
    import numpy
except ImportError as error:
    raise _wrong_interpreter("NumPy cannot be imported (%s)" % error) from None
try:
    from . import _tgc
except ImportError as error:
    raise _wrong_interpreter("its extension does not load (%s)" % error) from None
from ._tgc import CompileError, DeviceError, Error, InputError, RunError, UsageError

__version__ = _tgc.__version__

#: The libraries that matrix products call, and the kernels they chose ("f32 oneDNN 2.6.3 (avx512_core kernels)
#: on tgc's 2 threads; f64 OpenBLAS 0.3.21 ... (core SkylakeX)").
blas = _tgc.blas()
if _tgc.better_blas_core():
    warnings.warn("OpenBLAS (loaded with NumPy) runs kernels older than this CPU: %s; f64 matrix products (and "
                  "NumPy's) run several times faster with OPENBLAS_CORETYPE=%s set before Python starts (`tgc run` sets it itself)"
                  % (blas, _tgc.better_blas_core()), RuntimeWarning, stacklevel=2)
__all__ = ["compile", "Program", "Spec", "Params", "Error", "CompileError", "InputError", "DeviceError",
           "RunError", "UsageError", "rank", "ranks", "block"]


class Spec(NamedTuple):
    """An input, output or param as the script declares it: a shape's dimension is its size, or the name of a
    symbolic dimension (bound by each call's inputs)."""
    name: str
    dtype: numpy.dtype
    shape: Tuple[Union[int, str], ...]


def _error(kind, message):
    """A tgc error of `kind` raised here, with the attributes of those the library raises."""
    error = kind(message)
    error.message, error.file, error.line, error.column = message, None, None, None
    return error


def _usage_error(message):
    return _error(UsageError, message)


def _compile_error(message):
    return _error(CompileError, message)


def _specs(described):
    return {name: Spec(name, dtype, shape) for name, dtype, shape in described}


class Params(collections.abc.Mapping):  # Mapping[str, numpy.ndarray]
    """A program's params by name. Reading gives the current value (a read-only array: assign to change it);
    assigning checks the dtype and shape against the param's and copies the value."""

    def __init__(self, native):
        self._native = native
        self.specs = _specs(native.params)

    specs: Dict[str, Spec]

    def __getitem__(self, name: str) -> numpy.ndarray:
        return self._native.param(name)  # an unknown name is a tgc.InputError naming the params

    def __contains__(self, name: object) -> bool:
        return name in self.specs

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self.specs else default

    def __setitem__(self, name: str, value: Any) -> None:
        self._native.set_param(name, value)

    def update(self, values: Any = (), **more: Any) -> None:
        """Assigns several params: a mapping or (name, value) pairs, and keywords."""
        pairs = values.items() if isinstance(values, collections.abc.Mapping) else values
        for name, value in list(pairs) + list(more.items()):
            self[name] = value

    def __iter__(self) -> Iterator[str]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def __repr__(self):
        return "Params({%s})" % ", ".join("%r: %r" % (name, self[name]) for name in self.specs)


class Program:
    """A compiled script with its state (the params). Call it to run once; step() also applies the updates.

    program.inputs and program.outputs map names to Specs, in the script's order; program.params maps each
    param's name to its current value (and describes them in program.params.specs).
    """

    inputs: Dict[str, Spec]
    outputs: Dict[str, Spec]
    params: "Params"

    def __init__(self, native: "_tgc.Program"):
        self._native = native
        self.inputs = _specs(native.inputs)
        self.outputs = _specs(native.outputs)
        self.params = Params(native)

    def __call__(self, **inputs: Any) -> Dict[str, numpy.ndarray]:
        """Runs the script on the inputs (NumPy arrays, or values NumPy converts) without applying the updates;
        returns {output name: array}."""
        return self._native.run(inputs, False)

    def step(self, **inputs: Any) -> Dict[str, numpy.ndarray]:
        """As calling the program, then applies the updates, all at once."""
        return self._native.run(inputs, True)

    def emit(self, stage: str) -> str:
        """A stage of the compiled script as `tgc compile --emit=STAGE` prints it: "ast", "ir" (the graph as
        built), "opt", "json", "dot", "llvm" or "ptx"."""
        return self._native.emit(stage)

    def explain(self) -> str:
        """Each node in order, where it runs and why (`tgc compile --explain-placement`)."""
        return self._native.explain()

    @property
    def device(self) -> str:
        """The device it runs on, as tgc describes it ("cpu", "sim", "cuda: NVIDIA H100 ...")."""
        return self._native.device

    def __repr__(self):
        return "<tgc.Program %s on %s: inputs %s, outputs %s, params %s>" % (
            self._native.source, self.device, list(self.inputs), list(self.outputs), list(self.params))


def compile(path_or_source: Union[str, "os.PathLike[str]", None] = None, device: str = "auto", *,
            source: Optional[str] = None, path: Union[str, "os.PathLike[str]", None] = None,
            **options: Any) -> Program:
    """Compiles a script into a Program.

    The script is `source=` (its text), `path=` (a file), or the first argument: an os.PathLike or a str
    without a newline is a path, a str with a newline is source text (tgc.compile("output 1.0") is a path;
    write tgc.compile(source="output 1.0")). device is "auto" (a CUDA GPU when a driver and a GPU answer,
    else the CPU), "cpu", "sim" (the simulated device) or "cuda". Options are the command line's, in Python's
    spelling: lift ("global", "local", "cost"), opt_include, opt_exclude (a pass name or a list of them),
    stop_after, print_after, verify_each, optimize (False: -O0), no_cache, gpu_arch ("sm_90"), cost_model (a
    JSON file), dims ({name: size} for the cost model); sizes ({name: size}: symbolic dimensions made
    static, so that f32[n, 4] is f32[128, 4] and n is 128, without formatting the script's text); and
    distributed (default: whether mpirun started this process), shard (a dimension's name): under
    `mpirun -np N python3 ...`, each step is split across the N processes along the batch dimension (shard,
    else the one the inputs lead with): each process passes its block of the inputs (tgc.block(array)), and
    every process gets the single process's outputs and params (docs/distributed.md).

        program = tgc.compile("examples/logreg.tg", device="cpu")
        program = tgc.compile(source="input x : f32[n]\noutput exp(x)\n")
    """
    given = [name for name, value in (("the first argument", path_or_source), ("source=", source),
                                      ("path=", path)) if value is not None]
    if len(given) != 1:
        raise _usage_error("tgc.compile expects one script: a path or source text as the first argument, or "
                           "source= or path=; got %s" % (" and ".join(given) if given else "none"))
    if source is not None:
        if not isinstance(source, str):
            raise _usage_error("source= expects the script's text as a str, got %r" % (source,))
        text, is_path = source, False
    elif path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise _usage_error("path= expects a file's path, got %r" % (path,))
        text, is_path = os.fspath(path), True
    elif isinstance(path_or_source, os.PathLike):
        text, is_path = os.fspath(path_or_source), True
    elif isinstance(path_or_source, str):
        text, is_path = path_or_source, "\n" not in path_or_source
        if is_path and not os.path.exists(text):
            raise _compile_error("cannot read '%s': no such file; tgc.compile took it as a path, having no "
                                 "newline: for source text, write tgc.compile(source=%r)" % (text, text))
    else:
        raise _usage_error("tgc.compile expects a path or source text, got %r" % (path_or_source,))
    if not isinstance(device, str):
        raise _usage_error("device expects auto, cpu, sim or cuda, got %r" % (device,))
    options.setdefault("distributed", _started_by_mpirun() or "shard" in options)
    return Program(_tgc.compile(text, is_path, device, options))


def _started_by_mpirun() -> bool:
    return "OMPI_COMM_WORLD_SIZE" in os.environ or "PMIX_RANK" in os.environ


def rank() -> int:
    """This process's rank among those mpirun started (joining them, the first time), 0 without mpirun."""
    return _tgc.join_ranks()[0] if _started_by_mpirun() else 0


def ranks() -> int:
    """How many processes mpirun started (1 without mpirun)."""
    return _tgc.join_ranks()[1] if _started_by_mpirun() else 1


def block(array: Any, axis: int = 0) -> numpy.ndarray:
    """This rank's block of an array along axis: np.array_split(array, tgc.ranks(), axis)[tgc.rank()], the
    part of a split input that a distributed program takes on this rank (the whole array on one rank)."""
    return numpy.array_split(numpy.asarray(array), ranks(), axis)[rank()]


def __dir__():
    """What the module offers: its API, not the modules it imports."""
    return sorted(__all__ + ["__version__", "blas"])
