#include "api/Library.h"

#include "codegen/KernelSupply.h"
#include "ir/Loop.h"
#include "ir/ProgramArchive.h"
#include "ir/ScalarGraph.h"
#include "runtime/ArgReduction.h"
#include "runtime/DevicePlan.h"
#include "runtime/aot/LibraryImage.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

namespace tg::api {

const char *aotHeaderText(); // runtime/aot/tgc_aot.h, embedded by api/CMakeLists.txt

namespace {

[[noreturn]] void fail(Error::Kind kind, const std::string &message) {
  throw Error(kind, message, {}, "tgc: error: " + message + "\n");
}

/// The kernels a library holds: host kernels by spec, device kernels by what the device layer asks for (the
/// simulated device asks for the very kernels whose PTX the CUDA device would load). Specs point at programs
/// it keeps.
struct KernelSet {
  std::vector<codegen::KernelSpec> host, device;
  std::set<ir::DType> matmuls;
  std::set<std::pair<ir::OpKind, ir::DType>> creations;
  std::set<std::pair<codegen::IndexKernel, ir::DType>> indexing;
  std::set<std::pair<codegen::WindowKernel, ir::DType>> windows;

  /// `spec` with a program of its own (the device layer's are temporaries).
  codegen::KernelSpec kept(codegen::KernelSpec spec) {
    programs.push_back(std::make_shared<ir::ScalarGraph>(*spec.body));
    spec.body = programs.back().get();
    return spec;
  }
  void addHost(const codegen::KernelSpec &spec) { host.push_back(kept(spec)); }
  void addDevice(const codegen::KernelSpec &spec) { device.push_back(kept(spec)); }
  /// The general kernels of `program` into `specs` (host or device): Strided for any strides, which reads any
  /// operands, and Contiguous where the program allows it (codegen::kernelLayout: one that gathers never is).
  void addGeneral(std::vector<codegen::KernelSpec> &specs, const ir::ScalarGraph &program) {
    specs.push_back(kept({&program, codegen::Layout::Strided}));
    if (program.gatheredAxes() == 0) specs.push_back(kept({&program, codegen::Layout::Contiguous}));
  }
  void addDeviceLayouts(const ir::ScalarGraph &program) { addGeneral(device, program); }

private:
  std::vector<std::shared_ptr<ir::ScalarGraph>> programs;
};

/// Records the kernels a run asks for into a KernelSet, and has the JIT compile them for the run.
class RecordingSupply final : public codegen::KernelSupply {
public:
  explicit RecordingSupply(KernelSet &kernels) : kernels_(kernels) {}

  codegen::HostKernel host(codegen::KernelSpec &spec) override {
    kernels_.addHost(spec);
    return jit().host(spec);
  }
  codegen::SimDeviceKernel simDevice(const codegen::KernelSpec &spec) override {
    kernels_.addDevice(spec);
    return jit().simDevice(spec);
  }
  codegen::SimMatmulKernel simMatmul(ir::DType dtype) override {
    kernels_.matmuls.insert(dtype);
    return jit().simMatmul(dtype);
  }
  codegen::SimCreationKernel simCreation(ir::OpKind kind, ir::DType dtype) override {
    kernels_.creations.emplace(kind, dtype);
    return jit().simCreation(kind, dtype);
  }
  codegen::SimIndexKernel simIndex(codegen::IndexKernel kind, ir::DType dtype) override {
    kernels_.indexing.emplace(kind, dtype);
    return jit().simIndex(kind, dtype);
  }
  codegen::SimWindowKernel simWindow(codegen::WindowKernel kind, ir::DType dtype) override {
    kernels_.windows.emplace(kind, dtype);
    return jit().simWindow(kind, dtype);
  }
  std::string ptx(const codegen::KernelSpec &spec, const std::string &arch) override {
    return jit().ptx(spec, arch);
  }
  std::string matmulPtx(ir::DType dtype, const std::string &arch) override {
    return jit().matmulPtx(dtype, arch);
  }
  std::string creationPtx(ir::OpKind kind, ir::DType dtype, const std::string &arch) override {
    return jit().creationPtx(kind, dtype, arch);
  }
  std::string indexPtx(codegen::IndexKernel kind, ir::DType dtype, const std::string &arch) override {
    return jit().indexPtx(kind, dtype, arch);
  }
  std::string windowPtx(codegen::WindowKernel kind, ir::DType dtype, const std::string &arch) override {
    return jit().windowPtx(kind, dtype, arch);
  }

private:
  static codegen::KernelSupply &jit() { return codegen::defaultKernelSupply(); }
  KernelSet &kernels_;
};

/// Every device node's kernels (DevicePlan.h) in both layouts, and the device layer's own kernels that a run
/// of other shapes may ask for: copies into C order, fills, index arrays made i64, the fills of reductions of
/// no element.
void addDeviceKernels(const ir::Program &program, KernelSet &kernels) {
  using Kind = runtime::DeviceStep::Kind;
  auto visit = [&](const ir::Node &node) {
    bool transfer = node.op().kind() == ir::OpKind::ToDevice || node.op().kind() == ir::OpKind::ToHost;
    if (node.op().place() != ir::Place::Device || transfer) return;
    runtime::DeviceStep step = runtime::planDeviceStep(node);
    ir::DType dtype = node.output()->type().dtype;
    switch (step.kind) {
    case Kind::Kernel:
    case Kind::Reduction:
    case Kind::Fill:
    case Kind::Broadcast: {
      const ir::ScalarGraph &program = *step.fused->attrs().body;
      kernels.addDeviceLayouts(program);
      if (program.reduction)
        kernels.addDeviceLayouts(runtime::fillProgram(codegen::kernelOutputDtype(program),
                                                      runtime::emptyReduction(*program.reduction)));
      break;
    }
    case Kind::PositionalReduction: {
      runtime::ArgReduction plan =
          runtime::planArgReduction(node.op(), node.input(0)->type().dtype, 0, false);
      kernels.addDeviceLayouts(*plan.extreme.attrs().body);
      kernels.addDeviceLayouts(*plan.first.attrs().body);
      break;
    }
    case Kind::Matmul:
      kernels.matmuls.insert(dtype);
      break;
    case Kind::Creation:
      kernels.creations.emplace(node.op().kind(), dtype);
      break;
    case Kind::Index:
      for (auto kernel : runtime::indexKernels(node))
        kernels.indexing.insert(kernel);
      for (const ir::Value *input : node.inputs())
        kernels.addDeviceLayouts(runtime::toI64Program(input->type().dtype));
      break;
    case Kind::Window:
      for (auto kernel : runtime::windowKernels(node))
        kernels.windows.insert(kernel);
      break;
    default:
      break;
    }
  };
  for (const ir::Graph *graph : {&program.graph, &program.init})
    for (const ir::Node *node : ir::nodesWithLoopBodies(*graph))
      visit(*node);
  for (ir::DType dtype : ir::kAllDTypes) {
    kernels.addDeviceLayouts(runtime::copyProgram(dtype));
    kernels.addDeviceLayouts(runtime::fillProgram(dtype, 0));
  }
}

/// The PTX of each device kernel of `kernels`, by its entry's name.
std::vector<std::pair<std::string, std::string>> devicePtx(const KernelSet &kernels,
                                                           const std::string &arch) {
  std::map<std::string, std::string> modules;
  auto add = [&](const std::string &name, const std::function<std::string()> &emit) {
    if (!modules.count(name)) modules[name] = emit();
  };
  for (const codegen::KernelSpec &spec : kernels.device)
    add(codegen::kernelName(spec), [&] { return codegen::emitPtx(spec, arch); });
  for (ir::DType dtype : kernels.matmuls)
    add(codegen::matmulKernelName(dtype), [&] { return codegen::emitMatmulPtx(dtype, arch); });
  for (auto [kind, dtype] : kernels.creations)
    if (codegen::hasCreationKernel(kind, dtype))
      add(codegen::creationKernelName(kind, dtype),
          [&] { return codegen::emitCreationPtx(kind, dtype, arch); });
  for (auto [kind, dtype] : kernels.indexing)
    add(codegen::indexKernelName(kind, dtype), [&] { return codegen::emitIndexPtx(kind, dtype, arch); });
  for (auto [kind, dtype] : kernels.windows)
    add(codegen::windowKernelName(kind, dtype), [&] { return codegen::emitWindowPtx(kind, dtype, arch); });
  return {modules.begin(), modules.end()};
}

/// Every host fused node's general kernels, in `graph` and the bodies of its loops: Strided for any inner
/// strides (which reads any operands) and, unless the body gathers, Contiguous.
void addGeneralKernels(const ir::Program &program, KernelSet &kernels) {
  auto visit = [&](const ir::Node &node) {
    const ir::Op &op = node.op();
    if (op.kind() != ir::OpKind::Fused || op.place() != ir::Place::Host) return;
    kernels.addGeneral(kernels.host, *op.attrs().body);
  };
  for (const ir::Graph *graph : {&program.graph, &program.init})
    for (const ir::Node *node : ir::nodesWithLoopBodies(*graph))
      visit(*node);
}

/// Runs the program once on zeros, symbolic dimensions 2 (a size that keeps every axis's layout as a larger
/// one would), recording the host kernels it asks for. A run that fails (a script that divides by an integer
/// input) records what it got to: the general kernels cover the rest.
void recordRun(Program &program, KernelSet &kernels) {
  RecordingSupply recorder(kernels);
  codegen::ScopedKernelSupply scope(recorder);
  Program::Values inputs;
  for (const Port &input : program.inputs()) {
    std::vector<int64_t> shape;
    for (const ir::Dim &dim : input.type.shape)
      shape.push_back(dim.isStatic() ? dim.size() : 2);
    runtime::Tensor zeros = runtime::Tensor::empty(input.type.dtype, shape);
    std::memset(zeros.rawData(), 0,
                static_cast<size_t>(zeros.numElements()) * ir::dtypeSize(input.type.dtype));
    inputs[input.name] = zeros;
  }
  try {
    program.step(inputs);
    program.step(inputs); // a second step reads the params as updated, as every later step does
  } catch (const Error &) {
  }
}

/// The AOT runtime's archive: $TGC_AOT_RUNTIME, else lib/ beside the tgc executable (a build tree), else
/// ../lib/ (an installed prefix).
std::string aotRuntimeArchive() {
  if (const char *given = std::getenv("TGC_AOT_RUNTIME")) return given;
  std::error_code error;
  std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  for (const char *relative : {"lib", "../lib"}) {
    std::filesystem::path candidate = executable.parent_path() / relative / "libtgc_aot_runtime.a";
    if (!error && std::filesystem::exists(candidate)) return candidate.lexically_normal().string();
  }
  fail(Error::Kind::Run, "cannot find tgc's AOT runtime (libtgc_aot_runtime.a) beside " +
                             executable.string() + " in lib/ or ../lib/; set TGC_AOT_RUNTIME to its path");
}

const std::set<std::string> &cKeywords() {
  static const std::set<std::string> words{
      "auto",     "bool",     "break",     "case",    "catch",    "char",     "class",     "const",
      "continue", "default",  "delete",    "do",      "double",   "else",     "enum",      "explicit",
      "extern",   "false",    "float",     "for",     "friend",   "goto",     "if",        "inline",
      "int",      "long",     "namespace", "new",     "operator", "private",  "protected", "public",
      "register", "restrict", "return",    "short",   "signed",   "sizeof",   "static",    "struct",
      "switch",   "template", "this",      "throw",   "true",     "try",      "typedef",   "typename",
      "union",    "unsigned", "using",     "virtual", "void",     "volatile", "while"};
  return words;
}

/// A script name as a C identifier: a C or C++ keyword gets a '_' after it.
std::string cName(const std::string &name) {
  return cKeywords().count(name) ? name + "_" : name;
}

/// The tgc_dtype enumerator of `dtype` (tgc_aot.h names them after the script's spellings: TGC_F32,
/// TGC_BOOL).
std::string cDtype(ir::DType dtype) {
  std::string name = ir::dtypeName(dtype);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  return "TGC_" + name;
}

const char *cType(ir::DType dtype) {
  switch (dtype) {
  case ir::DType::F32:
    return "float";
  case ir::DType::F64:
    return "double";
  case ir::DType::I32:
    return "int32_t";
  case ir::DType::I64:
    return "int64_t";
  case ir::DType::Bool:
    return "uint8_t";
  }
  return "void";
}

std::string typeComment(const ir::TensorType &type) {
  return type.str() + (type.dtype == ir::DType::Bool ? " (one byte each, 0 or 1)" : "");
}

/// NAME.h: the C API, then the script's typed functions over it.
std::string headerText(const std::string &name, const Program &program, const std::string &script) {
  std::ostringstream out;
  std::string guard = name;
  std::transform(guard.begin(), guard.end(), guard.begin(), [](unsigned char c) { return std::toupper(c); });
  out << "/* " << name << ".h: " << script
      << " compiled ahead of time by tgc compile --emit=lib (docs/aot.md).\n"
      << " * With CMake, include(" << name << ".cmake) and link tgc::" << name << "; otherwise link lib"
      << name << ".a\n * " << TGC_AOT_LINK_FLAGS << " -lstdc++. */\n"
      << "#ifndef TGC_MODEL_" << guard << "_H\n#define TGC_MODEL_" << guard << "_H\n\n"
      << aotHeaderText() << "\n#include <string.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
      << "/* The compiled script: open it with tgc_model_open(&" << name << "_library, ...) or " << name
      << "_open. */\nextern const tgc_library " << name << "_library;\n\n";

  auto field = [&](const Port &port) {
    out << "  const " << cType(port.type.dtype) << " *" << cName(port.name) << "; /* "
        << typeComment(port.type) << " */\n";
    if (!port.type.isScalar())
      out << "  int64_t " << cName(port.name) << "_shape[" << port.type.rank() << "];\n";
  };
  out << "/* The inputs of a run or step, in host memory, C order. */\ntypedef struct " << name
      << "_inputs {\n";
  for (const Port &input : program.inputs())
    field(input);
  if (program.inputs().empty()) out << "  int unused; /* the script has no input */\n";
  out << "} " << name << "_inputs;\n\n";
  out << "/* The outputs of a run or step: memory the model holds until its next run or step. */\ntypedef "
         "struct "
      << name << "_outputs {\n";
  for (const Port &output : program.outputs())
    field(output);
  if (program.outputs().empty()) out << "  int unused; /* the script has no output */\n";
  out << "} " << name << "_outputs;\n\n";

  out << "/* Opens the script on `device` (NULL: the CPU; see tgc_model_open). */\nstatic inline tgc_status "
      << name << "_open(tgc_model **model, const char *device) {\n  return tgc_model_open(&" << name
      << "_library, device, model);\n}\n\n";
  for (const char *call : {"run", "step"}) {
    out << "static inline tgc_status " << name << "_" << call << "(tgc_model *model, const " << name
        << "_inputs *in, " << name << "_outputs *out) {\n";
    size_t inputs = program.inputs().size(), outputs = program.outputs().size();
    out << "  tgc_array arrays[" << std::max<size_t>(inputs, 1) << "], results["
        << std::max<size_t>(outputs, 1) << "];\n  tgc_status status;\n";
    for (size_t i = 0; i < inputs; ++i) {
      const Port &input = program.inputs()[i];
      std::string field = cName(input.name);
      out << "  arrays[" << i << "].dtype = " << cDtype(input.type.dtype) << ";\n"
          << "  arrays[" << i << "].rank = " << input.type.rank() << ";\n"
          << "  arrays[" << i << "].shape = " << (input.type.isScalar() ? "NULL" : "in->" + field + "_shape")
          << ";\n"
          << "  arrays[" << i << "].data = (void *)in->" << field << ";\n";
    }
    out << "  status = tgc_model_" << call << "(model, arrays, results);\n"
        << "  if (status != TGC_OK) return status;\n";
    for (size_t i = 0; i < outputs; ++i) {
      const Port &output = program.outputs()[i];
      std::string field = cName(output.name);
      out << "  out->" << field << " = (const " << cType(output.type.dtype) << " *)results[" << i
          << "].data;\n";
      if (!output.type.isScalar())
        out << "  memcpy(out->" << field << "_shape, results[" << i << "].shape, sizeof out->" << field
            << "_shape);\n";
    }
    out << "  return TGC_OK;\n}\n\n";
  }
  for (size_t i = 0; i < program.params().size(); ++i) {
    const Port &param = program.params()[i];
    std::optional<int64_t> count = param.type.staticNumElements();
    if (!count) continue; // a param of symbolic size: tgc_model_param and tgc_model_set_param
    std::string field = cName(param.name);
    out << "/* param " << param.name << " : " << typeComment(param.type) << ", " << *count
        << " elements in C order. */\n"
        << "static inline tgc_status " << name << "_get_" << field << "(tgc_model *model, "
        << cType(param.type.dtype) << " *values) {\n"
        << "  tgc_array value;\n  tgc_status status = tgc_model_param(model, " << i << ", &value);\n"
        << "  if (status == TGC_OK) memcpy(values, value.data, " << *count << " * sizeof *values);\n"
        << "  return status;\n}\n"
        << "static inline tgc_status " << name << "_set_" << field << "(tgc_model *model, const "
        << cType(param.type.dtype) << " *values) {\n";
    if (param.type.isScalar()) {
      out << "  tgc_array value = {" << cDtype(param.type.dtype) << ", 0, NULL, (void *)values};\n";
    } else {
      out << "  static const int64_t shape[" << param.type.rank() << "] = {";
      for (size_t d = 0; d < param.type.rank(); ++d)
        out << (d ? ", " : "") << param.type.shape[d].size();
      out << "};\n  tgc_array value = {" << cDtype(param.type.dtype) << ", " << param.type.rank()
          << ", shape, (void *)values};\n";
    }
    out << "  return tgc_model_set_param(model, " << i << ", &value);\n}\n\n";
  }
  out << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return out.str();
}

/// NAME.cmake: the imported target tgc::NAME.
std::string cmakeText(const std::string &name) {
  std::ostringstream out;
  out << "# " << name << ".cmake: the library " << name
      << " made by tgc compile --emit=lib, as the imported\n"
      << "# target tgc::" << name << ": include(" << name
      << ".cmake), then target_link_libraries(app tgc::" << name << ").\n"
      << "if(NOT TARGET tgc::" << name << ")\n"
      << "  find_package(Threads REQUIRED)\n"
      << "  add_library(tgc::" << name << " STATIC IMPORTED)\n"
      << "  set_target_properties(tgc::" << name << " PROPERTIES\n"
      << "    IMPORTED_LOCATION \"${CMAKE_CURRENT_LIST_DIR}/lib" << name << ".a\"\n"
      << "    INTERFACE_INCLUDE_DIRECTORIES \"${CMAKE_CURRENT_LIST_DIR}\"\n"
      << "    IMPORTED_LINK_INTERFACE_LANGUAGES CXX\n"
      << "    INTERFACE_LINK_LIBRARIES \"" << TGC_AOT_LINK_LIBRARIES << "\")\n"
      << "endif()\n";
  return out.str();
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream file(path, std::ios::binary);
  file << text;
  file.close();
  if (!file) fail(Error::Kind::Run, "cannot write " + path);
}

} // namespace

std::string libraryName(const std::string &output) {
  std::string base = std::filesystem::path(output).filename().string();
  std::string name;
  for (char c : base)
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "_" + name;
  return name;
}

std::vector<std::string> writeLibrary(const Source &source, const Options &options,
                                      const LibraryOptions &library) {
  if (options.device || options.placeForDevice)
    fail(Error::Kind::Usage,
         "writeLibrary places the program itself: give LibraryOptions::device, not a device");
  if (library.device != "cpu" && library.device != "cuda" && library.device != "auto")
    fail(Error::Kind::Usage,
         "a library runs on cpu or cuda (or auto: cuda where a GPU answers), not '" + library.device + "'");
  if (library.output.empty() || std::filesystem::path(library.output).filename().empty())
    fail(Error::Kind::Usage, "--emit=lib needs -o DIR/NAME: the library's folder and name");
  std::string name = libraryName(library.output);
  std::filesystem::path folder = std::filesystem::path(library.output).parent_path();
  if (folder.empty()) folder = ".";
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) fail(Error::Kind::Run, "cannot create " + folder.string() + ": " + error.message());

  KernelSet kernels;
  runtime::aot::LibraryImage image;
  image.device = library.device;
  image.gpuArch = options.gpuArch;
  Program program = Program::compile(source, options);
  recordRun(program, kernels);
  addGeneralKernels(program.compiled(), kernels);
  image.hostProgram = ir::writeProgram(program.compiled());
  if (library.device != "cpu") {
    // Placed for a device and run on the simulated one, which asks for the kernels CUDA would load.
    Options placed = options;
    placed.device = openDevice("sim").device;
    Program onDevice = Program::compile(source, placed);
    recordRun(onDevice, kernels);
    addGeneralKernels(onDevice.compiled(), kernels);
    addDeviceKernels(onDevice.compiled(), kernels);
    image.deviceProgram = ir::writeProgram(onDevice.compiled());
    image.ptx = devicePtx(kernels, options.gpuArch);
  }
  std::vector<codegen::KernelSpec> distinct;
  std::set<std::string> seen;
  for (const codegen::KernelSpec &spec : kernels.host) {
    std::string kernel = codegen::kernelName(spec);
    if (!seen.insert(kernel).second) continue;
    distinct.push_back(spec);
    image.hostKernels.push_back(kernel);
  }
  std::string object;
  try {
    object = codegen::compileLibraryObject(name + "_library", distinct, image.write(), library.hostCpu);
  } catch (const ir::UserError &cpu) {
    fail(Error::Kind::Usage, "--host-cpu: " + cpu.message);
  }

  std::string prefix = (folder / name).string();
  std::string archive = (folder / ("lib" + name + ".a")).string();
  try {
    codegen::writeStaticLibrary(archive, aotRuntimeArchive(), {{name + ".o", object}});
  } catch (const ir::UserError &written) {
    fail(Error::Kind::Run, written.message);
  }
  std::vector<std::string> written{prefix + ".h", archive, prefix + ".cmake"};
  writeFile(prefix + ".h", headerText(name, program, std::filesystem::path(source.name).filename().string()));
  writeFile(prefix + ".cmake", cmakeText(name));
  if (library.shared) {
    std::string sharedPath = (folder / ("lib" + name + ".so")).string();
    const char *compiler = std::getenv("CXX");
    std::string command = std::string(compiler && *compiler ? compiler : "c++") + " -shared -o '" +
                          sharedPath + "' -Wl,--whole-archive '" + archive + "' -Wl,--no-whole-archive " +
                          TGC_AOT_LINK_FLAGS;
    if (std::system(command.c_str()) != 0)
      fail(Error::Kind::Run,
           "--shared: the C++ compiler could not link " + sharedPath + " (ran: " + command + ")");
    written.push_back(sharedPath);
  }
  return written;
}

} // namespace tg::api
