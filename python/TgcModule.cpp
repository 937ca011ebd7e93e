// tgc._tgc: the Python binding of the library (api/Api.h), wrapped by python/tgc/__init__.py.
//
// NumPy arrays cross without copies where they can: an input whose dtype is tgc's, whose elements are aligned
// and whose strides are non-negative multiples of its item size is read in place (else copied once); an
// output is an array over tgc's buffer, which the array keeps alive. Kernels run with the GIL released, one
// call into tgc at a time (the runtime is not reentrant); a Python object that a tgc buffer holds is let go
// under the GIL, never from inside a call.
#include "api/Api.h"
#include "frontend/Diagnostics.h"
#include "runtime/Blas.h"
#include "runtime/Executor.h"

#include <mutex>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <regex>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace tg;

namespace {

// ---- Errors: tgc.Error and its kinds, raised with the text tgc prints and the first error's place ----

struct ErrorTypes {
  PyObject *base, *usage, *compile, *input, *device, *run;
};
ErrorTypes errorTypes;

PyObject *errorType(api::Error::Kind kind) {
  switch (kind) {
  case api::Error::Kind::Usage:
    return errorTypes.usage;
  case api::Error::Kind::Compile:
    return errorTypes.compile;
  case api::Error::Kind::Input:
    return errorTypes.input;
  case api::Error::Kind::Device:
    return errorTypes.device;
  case api::Error::Kind::Run:
    return errorTypes.run;
  }
  return errorTypes.base;
}

/// tgc's text of an error as Python shows it: without the command's "tgc: error: " before a message that has
/// no location, options in Python's spelling (device="sim" for --device=sim), and an array of another dtype
/// than an input's told how to convert it.
std::string pythonText(std::string text) {
  static const std::regex prefix(R"((^|\n)tgc: error: )"), device(R"(--device=(\w+))");
  text = std::regex_replace(std::regex_replace(text, prefix, "$1"), device, "device=\"$1\"");
  for (ir::DType dtype : ir::kAllDTypes) {
    std::regex mistyped("(input '\\w+' has dtype \\w+, but the script declares " +
                        std::string(ir::dtypeName(dtype)) + "(\\[[^\\]]*\\])?)");
    std::string numpyType =
        dtype == ir::DType::Bool ? "bool" : std::string("np.") + ir::dtypeInfo(dtype).numpy;
    text = std::regex_replace(text, mistyped, "$1; convert it with .astype(" + numpyType + ")");
  }
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

/// Raises `error` as the tgc exception of its kind: str() is tgc's text (pythonText); message, file, line
/// and column (None when unknown) say what and where.
[[noreturn]] void raise(const api::Error &error) {
  std::string text = pythonText(error.text);
  py::object type = py::reinterpret_borrow<py::object>(errorType(error.kind));
  py::object exception = type(text);
  exception.attr("message") = pythonText(error.message);
  bool known = error.loc.known();
  exception.attr("file") = error.loc.file ? py::object(py::str(*error.loc.file)) : py::none();
  exception.attr("line") = known ? py::object(py::int_(error.loc.line)) : py::none();
  exception.attr("column") = known ? py::object(py::int_(error.loc.column)) : py::none();
  PyErr_SetObject(type.ptr(), exception.ptr());
  throw py::error_already_set();
}

[[noreturn]] void raiseUsage(const std::string &message) {
  raise(api::Error(api::Error::Kind::Usage, message, {}, "tgc: error: " + message));
}

[[noreturn]] void raiseInput(const std::string &message) {
  raise(api::Error(api::Error::Kind::Input, message, {}, "tgc: error: " + message));
}

// ---- Python objects held by tgc buffers ----

/// The owners (NumPy arrays) of input buffers whose last handle went while the GIL was not held: let go at
/// the next call, under the GIL.
std::mutex pendingMutex;
std::vector<PyObject *> pendingReleases;

void releaseOwner(PyObject *owner) {
  if (PyGILState_Check()) {
    Py_DECREF(owner);
    return;
  }
  std::lock_guard<std::mutex> lock(pendingMutex);
  pendingReleases.push_back(owner);
}

void releasePending() {
  std::vector<PyObject *> owners;
  {
    std::lock_guard<std::mutex> lock(pendingMutex);
    owners.swap(pendingReleases);
  }
  for (PyObject *owner : owners)
    Py_DECREF(owner);
}

/// Serializes calls into tgc: its kernel compiler and runtime are shared and not reentrant. Taken only with
/// the GIL released, so that a thread waiting here never holds what the running one needs.
std::mutex tgcMutex;

/// Runs `work` without the GIL, one call at a time; a user error comes back as the tgc exception.
template <typename Work>
auto callTgc(Work work) -> decltype(work()) {
  releasePending();
  try {
    py::gil_scoped_release released;
    std::lock_guard<std::mutex> lock(tgcMutex);
    return work();
  } catch (const api::Error &error) {
    raise(error);
  }
}

// ---- NumPy <-> tensors ----

/// NumPy's name of a dtype, and tgc's dtype of a NumPy dtype (none for those tgc has not).
const char *numpyName(ir::DType dtype) {
  return ir::dtypeInfo(dtype).numpy;
}

std::optional<ir::DType> dtypeOf(const py::dtype &dtype) {
  for (ir::DType candidate : ir::kAllDTypes)
    if (dtype.equal(py::dtype(numpyName(candidate)))) return candidate;
  return std::nullopt;
}

/// NumPy's functions, looked up once (kept for the life of the process, as the module is).
struct NumPy {
  py::object asarray, ascontiguousarray, canCast, generic, isfinite, errstate;
};
const NumPy &numpy() {
  static const NumPy *functions = [] {
    py::module_ module = py::module_::import("numpy");
    return new NumPy{module.attr("asarray"), module.attr("ascontiguousarray"), module.attr("can_cast"),
                     module.attr("generic"), module.attr("isfinite"),          module.attr("errstate")};
  }();
  return *functions;
}

/// The tensor of a value given for `port` ("input 'X'", "param 'w'"): a NumPy array or scalar of one of
/// tgc's dtypes, read in place when its layout allows; any other value is converted by NumPy (a Python
/// scalar or list takes the declared dtype when NumPy can cast to it within its kind). A NumPy scalar
/// (np.float64(0.1)) for a scalar port is a weak scalar, as a Python number is: it takes the declared dtype
/// within its kind when its value fits (an integer in range; a float that stays finite).
runtime::Tensor tensorOf(py::handle value, const api::Port &port, const char *what) {
  const NumPy &np = numpy();
  py::object array = py::reinterpret_borrow<py::object>(value);
  py::dtype declared(numpyName(port.type.dtype));
  if (!py::isinstance<py::array>(value)) {
    bool typed = py::isinstance(value, np.generic);
    array = np.asarray(value);
    if (np.canCast(array.attr("dtype"), declared, "same_kind").cast<bool>()) {
      py::object quiet = np.errstate(py::arg("over") = "ignore"); // a value that does not fit is refused
      quiet.attr("__enter__")();
      py::object converted = np.asarray(array, declared);
      quiet.attr("__exit__")(py::none(), py::none(), py::none());
      bool fits = !typed ||
                  (port.type.isScalar() &&
                   (ir::isFloat(port.type.dtype) ? np.isfinite(converted).equal(np.isfinite(array))
                                                 : np.asarray(converted, array.attr("dtype")).equal(array)));
      if (fits) array = converted;
    }
  }
  py::array numbers = array.cast<py::array>();
  std::string name = std::string(what) + " '" + port.name + "'";
  if (numbers.dtype().attr("byteorder").cast<std::string>() == ">")
    numbers = np.ascontiguousarray(numbers, numbers.dtype().attr("newbyteorder")("="));
  std::optional<ir::DType> dtype = dtypeOf(numbers.dtype());
  if (!dtype)
    raiseInput(name + " has dtype " + py::str(numbers.dtype()).cast<std::string>() +
               ", which tgc does not have; the script declares " + port.type.str());
  auto itemSize = static_cast<py::ssize_t>(ir::dtypeSize(*dtype));
  bool inPlace = numbers.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  for (py::ssize_t d = 0; d < numbers.ndim(); ++d)
    inPlace = inPlace && numbers.strides(d) >= 0 && numbers.strides(d) % itemSize == 0;
  if (!inPlace) numbers = np.ascontiguousarray(numbers);
  std::vector<int64_t> shape, strides;
  for (py::ssize_t d = 0; d < numbers.ndim(); ++d) {
    shape.push_back(numbers.shape(d));
    strides.push_back(numbers.shape(d) > 1 ? numbers.strides(d) / itemSize : 0);
  }
  PyObject *owner = numbers.ptr();
  Py_INCREF(owner);
  std::shared_ptr<std::byte> buffer(static_cast<std::byte *>(const_cast<void *>(numbers.data())),
                                    [owner](std::byte *) { releaseOwner(owner); });
  return runtime::Tensor::onHost(std::move(buffer), *dtype, std::move(shape), std::move(strides));
}

/// An array over a host tensor's buffer, which it keeps alive; read-only when another handle shares the
/// buffer (a param's value, a constant kept for the next run), so that writing to it cannot change tgc's.
py::array arrayOf(const runtime::Tensor &tensor, bool readOnly = false) {
  auto itemSize = static_cast<py::ssize_t>(ir::dtypeSize(tensor.dtype()));
  std::vector<py::ssize_t> shape, strides;
  for (size_t d = 0; d < tensor.rank(); ++d) {
    shape.push_back(tensor.shape()[d]);
    strides.push_back(tensor.strides()[d] * itemSize);
  }
  readOnly = readOnly || !tensor.ownsBufferAlone();
  auto *kept = new runtime::Tensor(tensor);
  py::capsule owner(kept, [](void *pointer) { delete static_cast<runtime::Tensor *>(pointer); });
  py::array array(py::dtype(numpyName(tensor.dtype())), shape, strides, tensor.rawData(), owner);
  if (readOnly) array.attr("setflags")(py::arg("write") = false);
  return array;
}

/// (name, dtype, shape) of each port: a shape's dimension is its size or its symbol.
py::list describe(const std::vector<api::Port> &ports) {
  py::list described;
  for (const api::Port &port : ports) {
    py::list shape;
    for (const ir::Dim &dim : port.type.shape)
      shape.append(dim.isStatic() ? py::object(py::int_(dim.size())) : py::object(py::str(dim.symbol())));
    described.append(py::make_tuple(port.name, py::dtype(numpyName(port.type.dtype)), py::tuple(shape)));
  }
  return described;
}

// ---- Programs ----

/// A device opened once per name, shared by the programs compiled for it.
api::OpenedDevice deviceNamed(const std::string &name) {
  static std::map<std::string, api::OpenedDevice> opened;
  auto found = opened.find(name);
  if (found != opened.end()) return found->second;
  api::OpenedDevice device = api::openDevice(name);
  opened.emplace(name, device);
  return device;
}

/// The option's value as a list of strings: one string, or a list or tuple of them.
std::vector<std::string> stringsOf(const std::string &option, py::handle value) {
  if (py::isinstance<py::str>(value)) return {value.cast<std::string>()};
  std::vector<std::string> strings;
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value))
    for (py::handle item : value) {
      if (!py::isinstance<py::str>(item)) break;
      strings.push_back(item.cast<std::string>());
    }
  if (strings.size() != py::len(value))
    raiseUsage(option + " expects a pass name or a list of them, got " + py::repr(value).cast<std::string>());
  return strings;
}

template <typename T>
T valueOf(const std::string &option, py::handle value, const char *expected) {
  bool fits = std::is_same_v<T, bool> ? py::isinstance<py::bool_>(value) : py::isinstance<py::str>(value);
  if (!fits) raiseUsage(option + " expects " + expected + ", got " + py::repr(value).cast<std::string>());
  return value.cast<T>();
}

/// The library's options for tgc.compile's keyword arguments (the command line's options, in Python's
/// spelling).
api::Options optionsOf(const py::dict &given) {
  api::Options options;
  opt::OptimizerOptions &optimizer = options.optimizer;
  for (auto [key, value] : given) {
    std::string option = key.cast<std::string>();
    if (option == "lift") {
      optimizer.lift = valueOf<std::string>(option, value, "global, local or cost");
    } else if (option == "opt_include" || option == "opt_exclude") {
      std::vector<std::string> names = stringsOf(option, value);
      (option == "opt_include" ? optimizer.include : optimizer.exclude) = names;
    } else if (option == "stop_after" || option == "print_after") {
      (option == "stop_after" ? optimizer.stopAfter : optimizer.printAfter) =
          valueOf<std::string>(option, value, "a pass name");
    } else if (option == "verify_each") {
      optimizer.verifyEach = valueOf<bool>(option, value, "True or False");
    } else if (option == "optimize") {
      options.optimize = valueOf<bool>(option, value, "True or False");
    } else if (option == "no_cache") {
      options.kernelCache = !valueOf<bool>(option, value, "True or False");
    } else if (option == "gpu_arch") {
      options.gpuArch = valueOf<std::string>(option, value, "sm_XX");
    } else if (option == "cost_model") {
      std::string path = py::str(value).cast<std::string>();
      try {
        optimizer.costModel.loadOverrides(path);
      } catch (const ir::UserError &error) {
        raiseUsage("cost_model: " + error.message);
      }
    } else if (option == "dims") {
      if (!py::isinstance<py::dict>(value)) raiseUsage("dims expects a dict of sizes, e.g. {'n': 1000}");
      for (auto [name, size] : value.cast<py::dict>()) {
        if (!py::isinstance<py::str>(name) || !py::isinstance<py::int_>(size) ||
            size.cast<py::int_>() < py::int_(0))
          raiseUsage("dims expects names and non-negative sizes, got " + py::repr(value).cast<std::string>());
        optimizer.costModel.dims[name.cast<std::string>()] = size.cast<int64_t>();
      }
    } else if (option == "distributed") {
      options.distributed = valueOf<bool>(option, value, "True or False");
    } else if (option == "shard") {
      options.shard = valueOf<std::string>(option, value, "a symbolic dimension's name");
    } else if (option == "sizes") {
      if (!py::isinstance<py::dict>(value)) raiseUsage("sizes expects a dict of sizes, e.g. {'n': 128}");
      for (auto [name, size] : value.cast<py::dict>()) {
        if (!py::isinstance<py::str>(name) || !py::isinstance<py::int_>(size) ||
            size.cast<py::int_>() < py::int_(0))
          raiseUsage("sizes expects names and non-negative sizes, got " +
                     py::repr(value).cast<std::string>());
        options.sizes[name.cast<std::string>()] = size.cast<int64_t>();
      }
    } else {
      raiseUsage(
          "compile() got an unexpected option '" + option +
          "'; options: lift, opt_include, opt_exclude, stop_after, print_after, verify_each, optimize, "
          "no_cache, gpu_arch, cost_model, dims, sizes, distributed, shard" +
          frontend::didYouMean(option, {"lift", "opt_include", "opt_exclude", "stop_after", "print_after",
                                        "verify_each", "optimize", "no_cache", "gpu_arch", "cost_model",
                                        "dims", "sizes", "distributed", "shard"}));
    }
  }
  return options;
}

/// A compiled program (tgc.Program wraps it).
class PyProgram {
public:
  explicit PyProgram(api::Program program) : program_(std::move(program)) {}
  PyProgram(PyProgram &&other) noexcept : program_(std::move(other.program_)) { other.program_.reset(); }
  /// Frees the program's memory (host and device) as a call would: one at a time, without the GIL.
  ~PyProgram() {
    if (!program_) return;
    py::gil_scoped_release released;
    std::lock_guard<std::mutex> lock(tgcMutex);
    program_.reset();
  }

  py::dict run(const py::dict &inputs, bool step) {
    api::Program::Values values;
    for (auto [key, value] : inputs) {
      std::string name = key.cast<std::string>();
      const api::Port *port = find(program_->inputs(), name);
      if (!port) { // the library says which names it takes
        values[name] = runtime::Tensor::empty(ir::DType::F32, {});
        continue;
      }
      values[name] = tensorOf(value, *port, "input");
    }
    std::vector<runtime::Tensor> outputs =
        callTgc([&] { return step ? program_->step(values) : program_->run(values); });
    values.clear(); // the inputs' owners let go here, under the GIL
    py::dict result;
    for (size_t i = 0; i < outputs.size(); ++i) {
      runtime::Tensor output = std::move(outputs[i]);
      result[py::str(program_->outputs()[i].name)] = arrayOf(output);
    }
    return result;
  }

  py::array param(const std::string &name) {
    return arrayOf(callTgc([&] { return program_->param(name); }), /*readOnly=*/true);
  }

  void setParam(const std::string &name, py::handle value) {
    const api::Port *port = find(program_->params(), name);
    if (!port) {
      callTgc([&] { program_->param(name); }); // raises the library's error naming the params
      return;
    }
    runtime::Tensor tensor = tensorOf(value, *port, "param");
    callTgc([&] { program_->setParam(name, tensor); });
  }

  std::string emit(const std::string &stage) {
    return callTgc([&] { return program_->emit(stage); });
  }
  std::string explain() {
    return callTgc([&] { return program_->explainPlacement(); });
  }
  py::list inputs() const { return describe(program_->inputs()); }
  py::list outputs() const { return describe(program_->outputs()); }
  py::list params() const { return describe(program_->params()); }
  std::string source() const { return program_->source().name; }
  std::string device() const { return program_->device() ? program_->device()->describe() : "cpu"; }

private:
  static const api::Port *find(const std::vector<api::Port> &ports, const std::string &name) {
    for (const api::Port &port : ports)
      if (port.name == name) return &port;
    return nullptr;
  }

  std::optional<api::Program> program_; // empty once moved from
};

PyProgram compile(const std::string &text, bool isPath, const std::string &device, const py::dict &given) {
  api::Options options = optionsOf(given);
  api::Source source = isPath ? callTgc([&] { return api::Source::file(text); }) : api::Source::string(text);
  options.device = callTgc([&] { return deviceNamed(device).device; });
  if (options.distributed) callTgc([] { return api::joinRanks(); });
  return PyProgram(callTgc([&] { return api::Program::compile(source, options); }));
}

PyObject *newError(py::module_ &module, const char *name, PyObject *bases, const char *doc) {
  std::string qualified = std::string("tgc.") + name;
  PyObject *type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (!type) throw py::error_already_set();
  module.add_object(name, py::handle(type));
  return type;
}

} // namespace

PYBIND11_MODULE(_tgc, module) {
  module.doc() = "tgc's library (api/Api.h); use it through the tgc package";
  module.attr("__version__") = TGC_VERSION_STRING;
  errorTypes.base =
      newError(module, "Error", PyExc_Exception,
               "An error in a script, its inputs or options: str() is what tgc prints; message, "
               "file, line and column say what and where (None when unknown).");
  py::tuple usageBases = py::make_tuple(py::handle(errorTypes.base), py::handle(PyExc_ValueError));
  errorTypes.usage =
      newError(module, "UsageError", usageBases.ptr(), "An option or argument tgc cannot take.");
  errorTypes.compile =
      newError(module, "CompileError", errorTypes.base, "The script cannot be read, parsed or built.");
  py::tuple inputBases = py::make_tuple(py::handle(errorTypes.base), py::handle(PyExc_ValueError));
  errorTypes.input =
      newError(module, "InputError", inputBases.ptr(),
               "A missing, unknown or mistyped input, or a param value of another dtype or shape.");
  errorTypes.device =
      newError(module, "DeviceError", errorTypes.base, "The device asked for cannot be opened.");
  errorTypes.run = newError(module, "RunError", errorTypes.base,
                            "An error found while running: an index out of range, a file the script loads.");

  py::class_<PyProgram>(module, "Program")
      .def("run", &PyProgram::run, py::arg("inputs"), py::arg("step"))
      .def("param", &PyProgram::param)
      .def("set_param", &PyProgram::setParam)
      .def("emit", &PyProgram::emit)
      .def("explain", &PyProgram::explain)
      .def_property_readonly("inputs", &PyProgram::inputs)
      .def_property_readonly("outputs", &PyProgram::outputs)
      .def_property_readonly("params", &PyProgram::params)
      .def_property_readonly("source", &PyProgram::source)
      .def_property_readonly("device", &PyProgram::device);
  module.def("blas", &runtime::describeBlas, "The libraries host matmuls call and the kernels they chose.");
  module.def("better_blas_core", &runtime::betterBlasCore,
             "The OpenBLAS core this CPU calls for when the one loaded is older, else None.");
  module.def(
      "join_ranks",
      [] {
        api::Ranks ranks = callTgc([] { return api::joinRanks(); });
        return py::make_tuple(ranks.rank, ranks.size, ranks.description);
      },
      "Under mpirun, joins the run's other processes; (this rank, the number of ranks, a description).");
  module.def("compile", &compile, py::arg("text"), py::arg("is_path"), py::arg("device"), py::arg("options"));
}
