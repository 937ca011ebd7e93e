#include "api/Api.h"

#include "api/Stages.h"
#include "codegen/Kernel.h"
#include "frontend/AstPrinter.h"
#include "frontend/Diagnostics.h"
#include "frontend/GraphBuilder.h"
#include "frontend/ModuleLoader.h"
#include "ir/Printers.h"
#include "opt/Shard.h"
#include "runtime/Collectives.h"
#include "runtime/ConstantEvaluator.h"
#include "runtime/Session.h"
#include "runtime/cuda/CudaDevice.h"

#include <algorithm>
#include <cstdio>
#include <new>
#include <optional>
#include <sstream>

namespace tg::api {

namespace {

/// Diagnostics kept as text: what the front end reports while reading a source, and the sources themselves,
/// so that errors found later (optimizing, running) show their line too.
struct Diagnostics {
  explicit Diagnostics(const Source &source) { engine.setLineOrigins(source.name, source.origins); }

  /// The errors reported so far, as one Error.
  [[noreturn]] void fail(Error::Kind kind) const {
    const ir::UserError &first = engine.firstError();
    throw Error(kind, first.message, first.loc, text.str());
  }
  /// An error found after the front end, shown as the front end shows its own.
  Error render(const ir::UserError &error, Error::Kind kind) const {
    return Error(kind, error.message, error.loc, engine.render(error.loc, "error", error.message));
  }

  std::ostringstream text;
  frontend::DiagnosticEngine engine{text};
};

/// The program `source` builds (names, types, shapes, grad), or Error(Compile) with every diagnostic.
std::unique_ptr<ir::Program> build(const Source &source, const Options &options, Diagnostics &diags,
                                   bool withUpdates = true) {
  frontend::ModuleLoader loader(diags.engine, frontend::ModuleLoader::searchPathFromEnvironment());
  std::unique_ptr<ir::Program> program;
  try {
    const frontend::Module *module = loader.loadSource(source.name, source.text);
    if (module && !diags.engine.hasErrors())
      program = frontend::buildProgram(*module, loader, diags.engine, {options.rebinding, options.sizes});
  } catch (const ir::UserError &error) {
    diags.engine.report(error);
  }
  if (!program || diags.engine.hasErrors()) diags.fail(Error::Kind::Compile);
  if (!withUpdates) { // the updates' values are the graph's last outputs
    program->graph.keepOutputs(program->outputs.size());
    program->updates.clear();
  }
  return program;
}

/// The cost model of placement describes `device` when it is a GPU that says what it is (the simulated
/// device stands for the model's default GPU).
void describeDevice(opt::CostModel &model, const runtime::Device *device) {
  std::optional<runtime::GpuAttributes> gpu = device ? device->gpuAttributes() : std::nullopt;
  if (!gpu) return;
  model.refineDevice(gpu->multiprocessors, gpu->computeMajor, gpu->computeMinor, gpu->clockHz,
                     gpu->memoryClockHz, gpu->memoryBusBits);
}

/// The "placement" member of --emit=json: the lift's strategy and what its placement costs under the cost
/// model (recorded by the optimizer once transfers are final).
std::string placementJson(const opt::OptimizerProfile &profile, const std::string &strategy) {
  double seconds = 0, bytes = 0, transfers = 0;
  for (const opt::PassProfile &pass : profile.passes) {
    auto detail = [&](const char *name, double &into) {
      auto found = pass.details.find(name);
      if (found != pass.details.end()) into = found->second;
    };
    detail("estimated seconds", seconds);
    detail("estimated transfer bytes", bytes);
    detail("estimated transfers", transfers);
  }
  char text[256];
  std::snprintf(
      text, sizeof text,
      "{\"strategy\": \"%s\", \"estimated_seconds\": %.6g, \"transfer_bytes\": %.17g, \"transfers\": %.0f}",
      strategy.c_str(), seconds, bytes, transfers);
  return text;
}

[[noreturn]] void usageError(const std::string &message) {
  throw Error(Error::Kind::Usage, message, {}, "tgc: error: " + message + "\n");
}

/// Refuses options the optimizer cannot take: an unknown lift strategy or pass, a GPU that is not sm_XX.
void validate(const Options &options) {
  const opt::OptimizerOptions &optimizer = options.optimizer;
  if (!opt::isLiftStrategy(optimizer.lift))
    usageError("unknown lift strategy '" + optimizer.lift + "'; expected global, local or cost");
  std::vector<std::pair<const char *, std::string>> passes{{"stop-after", optimizer.stopAfter},
                                                           {"print-after", optimizer.printAfter}};
  for (const std::string &name : optimizer.include)
    passes.emplace_back("opt-include", name);
  for (const std::string &name : optimizer.exclude)
    passes.emplace_back("opt-exclude", name);
  for (const auto &[option, name] : passes) {
    if (name.empty() || opt::isPassOrTag(name)) continue;
    std::string known;
    for (const opt::PassInfo &pass : opt::passTable())
      known += (known.empty() ? "" : ", ") + std::string(pass.name);
    usageError("unknown pass '" + name + "' for " + option + "; passes: " + known);
  }
  const std::string &arch = options.gpuArch;
  if (arch.size() < 4 || arch.rfind("sm_", 0) != 0 ||
      arch.find_first_not_of("0123456789", 3) != std::string::npos)
    usageError("unknown GPU architecture '" + arch + "'; expected sm_XX (sm_80, sm_90, ...)");
}

/// The dimension a distributed run splits `program`'s inputs along: options.shard, or the symbolic dimension
/// the inputs lead with; empty when none leads with one (every rank then runs the whole step, with a
/// warning). Error(Usage) for an unknown one, one given a size, or when inputs lead with different ones; a
/// UserError at the declaration of an input that has it on two axes.
std::string chooseShardDimension(const ir::Program &program, const Options &options) {
  std::vector<std::string> leading;
  std::string known;
  bool found = false;
  for (const ir::Program::Input &input : program.inputs) {
    const ir::Shape &shape = input.value->type().shape;
    known += (known.empty() ? "" : ", ") + input.name + ": " + input.value->type().str();
    if (!shape.empty() && !shape[0].isStatic() &&
        std::find(leading.begin(), leading.end(), shape[0].symbol()) == leading.end())
      leading.push_back(shape[0].symbol());
    for (const ir::Dim &dim : shape)
      found = found || (!dim.isStatic() && dim.symbol() == options.shard);
  }
  std::string dimension = options.shard;
  if (!dimension.empty() && !found)
    usageError("--shard " + dimension + ": no input has a dimension named '" + dimension + "' (" +
               (known.empty() ? "the script has no input" : known) + ")");
  if (dimension.empty() && leading.size() > 1)
    usageError("the inputs lead with different symbolic dimensions (" + leading[0] + ", " + leading[1] +
               "): name the one a distributed run splits with --shard NAME");
  if (dimension.empty() && leading.empty()) {
    if (options.warnings)
      *options.warnings << "tgc: warning: no input leads with a symbolic dimension, so there is no batch to "
                           "split: every rank runs the whole step (name a dimension with --shard NAME)\n";
    return "";
  }
  if (dimension.empty()) dimension = leading[0];
  if (options.sizes.count(dimension))
    usageError("--shard " + dimension + ": the dimension is given a size (" +
               std::to_string(options.sizes.at(dimension)) + "), but each rank holds a part of it");
  for (const ir::Program::Input &input : program.inputs) {
    const ir::Shape &shape = input.value->type().shape;
    if (std::count(shape.begin(), shape.end(), ir::Dim::named(dimension)) > 1) {
      std::string message = "input '" + input.name + "' has the split dimension " + dimension +
                            " on two axes (" + input.value->type().str() +
                            "): a distributed run splits one; give it another name or --shard another one";
      throw ir::UserError(message, input.loc);
    }
  }
  return dimension;
}

std::vector<Port> portsOf(const std::vector<ir::Program::Input> &inputs) {
  std::vector<Port> ports;
  for (const ir::Program::Input &input : inputs)
    ports.push_back({input.name, input.value->type(), input.loc});
  return ports;
}

} // namespace

Source Source::file(const std::string &path) {
  std::string why;
  std::optional<std::string> text = frontend::readSourceFile(path, why);
  if (!text) {
    std::string message = "cannot read '" + path + "': " + why;
    throw Error(Error::Kind::Compile, message, {}, "tgc: error: " + message + "\n");
  }
  return {path, std::move(*text), {}};
}

Source Source::string(std::string text, std::string name) {
  return {std::move(name), std::move(text), {}};
}

std::string printAst(const Source &source) {
  Diagnostics diags(source);
  frontend::ModuleLoader loader(diags.engine, {});
  const frontend::Module *module = loader.loadSource(source.name, source.text);
  if (!module || diags.engine.hasErrors()) diags.fail(Error::Kind::Compile);
  return frontend::printAst(*module);
}

OpenedDevice openDevice(const std::string &name) {
  if (name == "cpu") return {nullptr, "asked for"};
  if (name == "sim") return {runtime::makeSimDevice(), "asked for"};
  if (name == "cuda") {
    try {
      return {runtime::cuda::openCudaDevice(), "asked for"};
    } catch (const ir::UserError &error) {
      std::string message =
          "--device=cuda: " + error.message + "; --device=sim runs the device pipeline on the CPU";
      throw Error(Error::Kind::Device, message, {}, "tgc: error: " + message + "\n");
    }
  }
  if (name != "auto") {
    usageError("unknown device '" + name + "'; expected auto, cpu, sim or cuda");
  }
  try {
    return {runtime::cuda::openCudaDevice(), "auto: a CUDA driver and GPU answered"};
  } catch (const ir::UserError &error) {
    return {nullptr, "auto: " + error.message};
  }
}

Ranks joinRanks() {
  try {
    runtime::openDistributed();
  } catch (const ir::UserError &error) {
    throw Error(Error::Kind::Device, error.message, {}, "tgc: error: " + error.message + "\n");
  }
  runtime::Communicator &ranks = runtime::communicator();
  return {ranks.rank(), ranks.size(), ranks.describe()};
}

struct Program::State {
  State(Source source, Options options) : source(std::move(source)), options(std::move(options)) {}

  /// The optimizer's options for this program: placed for a device when one is open or asked for, the cost
  /// model sized by the given input shapes and refined by the open GPU.
  opt::OptimizerOptions optimizerOptions(opt::PlacementReasons *reasons, std::ostream *log) const {
    opt::OptimizerOptions result = options.optimizer;
    result.device = options.device != nullptr || options.placeForDevice;
    result.pricePlacement = result.device;
    result.evaluate = runtime::evaluateConstant;
    result.log = log;
    result.placement = reasons;
    result.shard = shardDimension;
    result.costModel.ranks = runtime::communicator().size();
    for (const ir::Program::Input &input : program->inputs) {
      auto given = options.inputShapes.find(input.name);
      if (given == options.inputShapes.end()) continue;
      const ir::Shape &shape = input.value->type().shape;
      for (size_t d = 0; d < shape.size() && d < given->second.size(); ++d)
        if (!shape[d].isStatic()) result.costModel.dims.emplace(shape[d].symbol(), given->second[d]);
    }
    describeDevice(result.costModel, options.device.get());
    return result;
  }

  /// The program built again from the source (it built once), optimized when `optimize`, recording why
  /// each node is placed where it is in `reasons`.
  std::unique_ptr<ir::Program> rebuild(bool optimize, opt::PlacementReasons *reasons = nullptr) const {
    codegen::KernelCacheBypass bypass(!options.kernelCache); // constant folding compiles kernels
    Diagnostics quiet(source);
    std::unique_ptr<ir::Program> again = build(source, options, quiet);
    if (optimize) opt::optimize(*again, optimizerOptions(reasons, nullptr));
    return again;
  }

  /// Optimizes the program when asked, and splits it along shardDimension either way (unsplit, the ranks'
  /// results would be wrong).
  opt::OptimizerProfile optimizeProgram(std::ostream *log) {
    if (options.optimize) return opt::optimize(*program, optimizerOptions(nullptr, log));
    if (!shardDimension.empty()) {
      opt::PassProfile unused;
      opt::shardAlong(program->graph, shardDimension, unused);
      program->graph.removeDeadNodes();
      program->syncWithGraph();
    }
    return {};
  }

  /// Calls `work`, handing a user error on as an Error (`kind` for one that is not about inputs), with the
  /// disk cache bypassed when the program was compiled without it.
  template <typename Work>
  auto guarded(Error::Kind kind, Work work) -> decltype(work()) {
    codegen::KernelCacheBypass bypass(!options.kernelCache);
    try {
      return work();
    } catch (const runtime::InputError &error) {
      throw diags.render(error, Error::Kind::Input);
    } catch (const ir::UserError &error) {
      throw diags.render(error, kind);
    } catch (const std::bad_alloc &) {
      throw Error(Error::Kind::Run, "out of memory", {}, "tgc: error: out of memory\n");
    }
  }

  /// The session, made (the params initialized) on first use.
  runtime::Session &session() {
    if (session_) return *session_;
    if (!options.device && options.placeForDevice)
      usageError("this program is placed for a device, but none is open: compile it with a device "
                 "(Options::device) to run it");
    session_ = std::make_unique<runtime::Session>(*program, options.device.get());
    return *session_;
  }

  /// The program without its updates, compiled on first use: what a run given only some inputs runs, so
  /// that an input only the updates read (a learning rate) may be left out, however fusion merged them.
  State &outputsOnly() {
    if (outputsOnly_) return *outputsOnly_;
    auto variant = std::make_unique<State>(source, options);
    variant->options.warnings = nullptr;
    variant->program = build(variant->source, variant->options, variant->diags, /*withUpdates=*/false);
    variant->shardDimension = shardDimension;
    variant->optimizeProgram(nullptr);
    outputsOnly_ = std::move(variant);
    return *outputsOnly_;
  }

  Source source;
  Options options;
  Diagnostics diags{source}; // keeps the sources read, to show the line of an error found later
  std::unique_ptr<ir::Program> program;
  std::string shardDimension; // what the shard pass splits along (empty: nothing)
  opt::OptimizerProfile profile;
  std::vector<Port> inputs, params, outputs;
  std::unique_ptr<runtime::Session> session_;
  std::unique_ptr<State> outputsOnly_;
};

Program Program::compile(const Source &source, const Options &options) {
  validate(options);
  auto state = std::make_unique<State>(source, options);
  codegen::KernelCacheBypass bypass(!options.kernelCache); // constant folding compiles kernels too
  state->program = build(state->source, state->options, state->diags);
  const ir::Program &built = *state->program;
  state->inputs = portsOf(built.inputs);
  for (const ir::Program::Param &param : built.params)
    state->params.push_back({param.name, param.value->type(), param.loc});
  for (const ir::Program::Output &output : built.outputs)
    state->outputs.push_back({output.name, output.value->type(), {}});
  // Split on several ranks, or where a dimension is named (one rank runs the split program as it is).
  bool split = options.distributed && (runtime::communicator().size() > 1 || !options.shard.empty());
  State &compiled = *state;
  if (split)
    state->shardDimension =
        compiled.guarded(Error::Kind::Compile, [&] { return chooseShardDimension(built, options); });
  compiled.profile =
      compiled.guarded(Error::Kind::Compile, [&] { return compiled.optimizeProgram(options.warnings); });
  if (split) opt::broadcastInitialValues(*compiled.program);
  return Program(std::move(state));
}

Program::Program(std::unique_ptr<State> state) : state_(std::move(state)) {}
Program::Program(Program &&) noexcept = default;
Program &Program::operator=(Program &&) noexcept = default;
Program::~Program() = default;

const std::vector<Port> &Program::inputs() const {
  return state_->inputs;
}
const std::vector<Port> &Program::params() const {
  return state_->params;
}
const std::string &Program::shardDimension() const {
  return state_->shardDimension;
}
const std::vector<Port> &Program::outputs() const {
  return state_->outputs;
}
const Source &Program::source() const {
  return state_->source;
}

std::vector<runtime::Tensor> Program::run(const Values &inputs) {
  State &state = *state_;
  bool missing = false;
  for (const Port &input : state.inputs)
    missing = missing || !inputs.count(input.name);
  if (!missing || state.program->updates.empty())
    return state.guarded(Error::Kind::Run, [&] { return state.session().step(inputs, false); });
  // Some input is not given: the program without its updates runs, on the params' current values.
  return state.guarded(Error::Kind::Run, [&] {
    runtime::Session &variant = state.outputsOnly().session();
    for (const Port &param : state.params)
      variant.setParam(param.name, state.session().param(param.name));
    return variant.step(inputs, false);
  });
}

std::vector<runtime::Tensor> Program::step(const Values &inputs) {
  return state_->guarded(Error::Kind::Run, [&] { return state_->session().step(inputs, true); });
}

runtime::Tensor Program::param(const std::string &name) {
  return state_->guarded(Error::Kind::Input, [&] { return state_->session().param(name); });
}

void Program::setParam(const std::string &name, const runtime::Tensor &value) {
  state_->guarded(Error::Kind::Input, [&] { state_->session().setParam(name, value); });
}

std::string Program::emit(const std::string &stage, bool withProfile) const {
  const State &state = *state_;
  const ir::Program &program = *state.program;
  const Options &options = state.options;
  if (stage == "ast") return printAst(state.source);
  if (stage == "ir") {
    // The graph as built, unless a stopping point asks for the graph after it.
    bool asBuilt = !options.optimize || !options.optimizer.stopAfter.empty();
    return ir::printIr(asBuilt ? program : *state.rebuild(false));
  }
  if (stage == "opt") return ir::printIr(program);
  if (stage == "dot") return ir::printDot(program);
  if (stage == "json") {
    std::vector<std::pair<std::string, std::string>> members;
    if (options.device || options.placeForDevice)
      members.emplace_back("placement", placementJson(state.profile, options.optimizer.lift));
    if (withProfile) members.emplace_back("profile", opt::profileJson(state.profile));
    return ir::printJson(program, members);
  }
  if (stage == "llvm" || stage == "ptx") {
    codegen::KernelCacheBypass bypass(!options.kernelCache);
    return tools::printKernels(program, stage == "ptx", options.gpuArch);
  }
  usageError("unknown stage '" + stage + "'; expected ast, ir, opt, json, dot, llvm or ptx");
}

std::string Program::explainPlacement() const {
  opt::PlacementReasons reasons;
  std::unique_ptr<ir::Program> placed = state_->rebuild(state_->options.optimize, &reasons);
  return tools::explainPlacement(*placed, reasons);
}

const opt::OptimizerProfile &Program::profile() const {
  return state_->profile;
}

runtime::TransferStats Program::transfers() const {
  return state_->session_ ? state_->session_->transfers() : runtime::TransferStats{};
}

const ir::Program &Program::compiled() const {
  return *state_->program;
}

runtime::Device *Program::device() const {
  return state_->options.device.get();
}

} // namespace tg::api
