// tgc: the command-line driver. Parses arguments, runs the front end, prints or runs the program.
//
//   tgc run FILE.tg [--device auto|cpu|sim|cuda] [--in NAME=FILE.npy]... [--out NAME=FILE.npy]... [--steps N]
//           [--batch B [--epochs E] [--shuffle SEED]] [-v] [--no-cache]
//   tgc compile FILE.tg --emit=ast|ir|opt|json|dot|llvm|ptx [-o FILE] [--gpu-arch sm_XX] [--no-cache]
//   tgc compile FILE.tg --emit=lib -o DIR/NAME [--shared] [--host-cpu CPU]
//           [optimizer options]
//   tgc repl [--in NAME=FILE.npy]... [--device ...] [--gpu-arch sm_XX] [--no-cache] [optimizer options]
//                                                                                   (also `tgc` alone)
//   optimizer options include --lift=global|local|cost (the device placement strategy) and --cost-model
//
// Exit codes: 0 success, 1 a user error in the script or its inputs, 2 bad usage, 3 an internal error.
#include "api/Api.h"
#include "api/Library.h"
#include "api/Stages.h"
#include "codegen/Kernel.h"
#include "frontend/Diagnostics.h"
#include "frontend/GraphBuilder.h"
#include "io/Npy.h"
#include "opt/Pipeline.h"
#include "runtime/Blas.h"
#include "runtime/Collectives.h"
#include "tools/Batches.h"
#include "tools/Repl.h"
#include "tools/ScalarArguments.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace tg;

constexpr const char *kVersion = TGC_VERSION_STRING;

constexpr const char *kUsage = R"(usage: tgc <command> [options]

commands:
  run FILE.tg       compile the script and run it
  compile FILE.tg   compile the script and print a stage of it, or (--emit=lib) write it as a library
  repl              an interactive session (also: tgc with no arguments on a terminal); :help inside;
                    --in NAME=FILE.npy binds an input of a script loaded there
  help [TOPIC]      this help; with a builtin or a standard library function (conv2d, nn.softmax), its
                    signature and what it computes
  --help            show this help
  --version         show the version

run options:
  --in NAME=FILE.npy    value of input NAME (every input needs one)
  --out NAME=FILE.npy   save output or param NAME to a .npy file instead of printing it
  --steps N             run N steps, applying the updates after each (default 1)
  --print-every K       also print the outputs after every K-th step, as "step N: name = value" (a param's
                        value as the step read it, before its update)
  --batch B             cut the inputs that lead with the same symbolic dimension into batches of B rows
                        (the last one partial) and run one step per batch; the other inputs go whole to
                        every step; a line per epoch (the mean of the scalar outputs over its steps)
                        when standard error is a terminal
  --epochs E            with --batch: E passes over the rows (default 1)
  --shuffle SEED        with --batch: each epoch takes the rows in an order shuffled by SEED and the
                        epoch's number (the same order on every machine)
  --shard NAME          under mpirun (mpirun -np N tgc run ...): split the inputs along symbolic dimension
                        NAME across the N processes (default: the one the inputs lead with); each reads
                        its own part of each file, or of each batch with --batch, and the outputs and
                        params are the single process's (docs/distributed.md)
  --device DEVICE       auto, cpu, sim or cuda (default auto: cuda when a driver and a GPU answer, else
                        cpu; -v says which and why); sim is a simulated device: separate memory, counted
                        transfers, device kernels run on the CPU
  --no-cache            neither read nor write the kernel cache ($XDG_CACHE_HOME/tgc, else ~/.cache/tgc,
                        where compiled kernels are kept for the next run)
  --host-cpu CPU        the CPU host kernels are compiled for: native (default; $TGC_HOST_CPU overrides
                        it) or an x86-64 level this machine can run: x86-64-v2 (SSE4.2), x86-64-v3 (AVX2),
                        x86-64-v4 (AVX-512); also for compile and repl
  -v                    say what happens

compile options:
  --emit=ast|ir|opt|json|dot|llvm|ptx|lib
                               what to print (default ir): ir is the graph as built (or after --stop-after),
                               opt the optimized graph; json and dot show the optimized graph; llvm the
                               LLVM IR of every host kernel, ptx one PTX module of every device kernel (of
                               every kernel when nothing runs on a device): no GPU is needed; lib writes a
                               library that C and C++ programs link (-o DIR/NAME: NAME.h, libNAME.a,
                               NAME.cmake; docs/aot.md), its kernels compiled for --host-cpu (any x86-64
                               CPU LLVM knows: the library need not run here); with --device=cuda or auto,
                               also its device kernels as PTX for --gpu-arch
  --shared                     with --emit=lib, also libNAME.so
  --gpu-arch=sm_XX             the GPU the PTX is for (default sm_90: H100/H200; sm_80: A100)
  -o FILE                      write it to FILE instead of standard output
  --opt-profile                print each pass's time, node counts and rewrites (in the JSON with --emit=json)
  --explain-placement          print where each node runs and why (with --device=sim); with
                               --lift=cost, each node's estimated time on each place
  --dim NAME=SIZE              the size of symbolic dimension NAME for the cost model (default 1024; run
                               takes the sizes from its inputs)
  --device DEVICE              sim or cuda place the graph on a device (no GPU is needed to compile);
                               auto and cpu compile for the CPU
  --shard NAME                 the program as a distributed run splits it along symbolic dimension NAME
                               (docs/distributed.md)
  --no-cache                   as for run (PTX is cached too)

optimizer options (compile, run and repl):
  --stop-after=PASS        run no pass after PASS
  --print-after=PASS       print the graph after PASS (to standard error)
  --opt-include=NAME       also run the passes with this name or tag
  --opt-exclude=NAME       skip the passes with this name or tag
  --verify-each            verify the graph after every pass
  --lift=global|local|cost how the lift pass places nodes on the device (default global: one forward and
                           one backward pass, one validation); local is the legacy baseline, Theano's way:
                           one node at a time, validating the whole graph after each move; cost is the
                           placement of least estimated time under the cost model, by a minimum cut
  --cost-model FILE.json   override fields of the cost model (docs/optimizer.md lists them)
  -O0                      run no optimization pass
  passes, in order: merge, constant-fold, canonicalize, stabilize, specialize, shard (a distributed run),
  lift and cut-transfers (with a device), loop-bodies, loop-invariants, fusion

Options taking a value accept both --opt VALUE and --opt=VALUE.
)";

struct UsageError {
  std::string message;
};

struct Options {
  std::string command;
  std::string file;
  std::string emit = "ir";
  std::string gpuArch = "sm_90";
  std::string outputFile;
  std::string device = "auto";
  bool deviceGiven = false; // --device was given (a library is for the CPU unless it asks)
  std::string hostCpu;      // empty: $TGC_HOST_CPU, else native
  std::vector<std::pair<std::string, std::string>> inputs, outputs;
  long steps = 1;
  long printEvery = 0;
  long batch = 0, epochs = 0; // 0: not given
  std::optional<uint64_t> shuffle;
  std::string shard; // under mpirun: the dimension split across the ranks (empty: the inputs' leading one)
  bool verbose = false;
  bool optimize = true;
  bool optProfile = false;
  bool shared = false; // --emit=lib: also a shared library
  bool explainPlacement = false;
  bool kernelCache = true;
  opt::OptimizerOptions optimizer;
};

/// Appends `--in NAME=FILE` (or --out) to `assignments`; each name may be given once.
void addAssignment(std::vector<std::pair<std::string, std::string>> &assignments, const std::string &option,
                   const std::string &value) {
  size_t equals = value.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == value.size())
    throw UsageError{option + " expects NAME=FILE.npy, got '" + value + "'"};
  std::string name = value.substr(0, equals);
  for (const auto &[given, file] : assignments)
    if (given == name)
      throw UsageError{option + " " + name + " is given twice ('" + file + "' and '" +
                       value.substr(equals + 1) + "')"};
  assignments.emplace_back(name, value.substr(equals + 1));
}

/// The value of --steps or --print-every: a non-negative integer that fits in a long.
long parseCount(const std::string &option, const std::string &text) {
  long count = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error == std::errc::result_out_of_range)
    throw UsageError{option + " " + text + " is too large (at most " +
                     std::to_string(std::numeric_limits<long>::max()) + ")"};
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || count < 0)
    throw UsageError{option + " expects a non-negative integer, got '" + text + "'"};
  return count;
}

/// `--dim NAME=SIZE`: binds a symbolic dimension for the cost model; each name once.
void addDim(opt::CostModel &model, const std::string &text) {
  size_t equals = text.find('=');
  std::string name = text.substr(0, equals);
  bool identifier = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name)
    identifier = identifier && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (equals == std::string::npos || !identifier)
    throw UsageError{"--dim expects NAME=SIZE, got '" + text + "'"};
  if (model.dims.count(name)) throw UsageError{"--dim " + name + " is given twice"};
  model.dims[name] = parseCount("--dim " + name, text.substr(equals + 1));
}

/// Compiles host kernels for `name` (--host-cpu), else for $TGC_HOST_CPU, else for this machine's CPU.
void chooseHostCpu(const std::string &name) {
  const char *fromEnvironment = std::getenv("TGC_HOST_CPU");
  bool given = !name.empty();
  std::string chosen = given ? name : fromEnvironment && *fromEnvironment ? fromEnvironment : "native";
  try {
    codegen::setHostCpu(chosen);
  } catch (const ir::UserError &error) {
    throw UsageError{(given ? "--host-cpu: " : "$TGC_HOST_CPU: ") + error.message};
  }
}

/// Every option the usage text names: what a mistyped option is compared with.
std::vector<std::string> optionNames() {
  static const std::regex option(R"((^|[\s\[|])(--[a-z][a-z0-9-]*|-O0|-[ohv])\b)");
  std::vector<std::string> names;
  std::string usage = kUsage;
  for (auto it = std::sregex_iterator(usage.begin(), usage.end(), option); it != std::sregex_iterator(); ++it)
    if (std::find(names.begin(), names.end(), (*it)[2].str()) == names.end()) names.push_back((*it)[2].str());
  return names;
}

Options parseOptions(int argc, char **argv) {
  Options options;
  bool stepsGiven = false;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) throw UsageError{"no command given"};
  options.command = args[0];
  for (size_t i = 1; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inlineValue;
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
      inlineValue = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
    }
    auto value = [&]() -> std::string {
      if (inlineValue) return *inlineValue;
      if (i + 1 >= args.size()) throw UsageError{arg + " needs a value"};
      return args[++i];
    };
    bool forRun = options.command == "run", forCompile = options.command == "compile",
         forRepl = options.command == "repl";
    if (arg == "--in" && (forRun || forRepl)) {
      addAssignment(options.inputs, arg, value());
    } else if (arg == "--out" && forRun) {
      addAssignment(options.outputs, arg, value());
    } else if ((arg == "--steps" || arg == "--print-every") && forRun) {
      (arg == "--steps" ? options.steps : options.printEvery) = parseCount(arg, value());
      if (arg == "--steps") stepsGiven = true;
    } else if ((arg == "--batch" || arg == "--epochs") && forRun) {
      long &count = arg == "--batch" ? options.batch : options.epochs;
      count = parseCount(arg, value());
      if (count == 0) throw UsageError{arg + " expects a positive integer, got 0"};
    } else if (arg == "--shard" && (forRun || forCompile)) {
      options.shard = value();
    } else if (arg == "--shuffle" && forRun) {
      options.shuffle = static_cast<uint64_t>(parseCount(arg, value()));
    } else if (arg == "--device" && (forRun || forCompile || forRepl)) {
      options.device = value();
      options.deviceGiven = true;
      if (options.device != "auto" && options.device != "cpu" && options.device != "sim" &&
          options.device != "cuda")
        throw UsageError{"unknown device '" + options.device + "'; expected auto, cpu, sim or cuda"};
      // Compiling for cuda needs no driver: the graph is placed as for any device, and PTX is text. Running
      // decides when the device is open (run()).
      options.optimizer.device = options.device == "sim" || options.device == "cuda";
    } else if (arg == "--emit" && forCompile) {
      options.emit = value();
      static const std::set<std::string> kinds{"ast", "ir", "opt", "json", "dot", "llvm", "ptx", "lib"};
      if (!kinds.count(options.emit))
        throw UsageError{"unknown --emit value '" + options.emit +
                         "'; expected ast, ir, opt, json, dot, llvm, ptx or lib"};
    } else if (arg == "--gpu-arch" && (forCompile || forRepl)) {
      options.gpuArch = value();
      bool valid = options.gpuArch.size() > 3 && options.gpuArch.rfind("sm_", 0) == 0 &&
                   std::isdigit(static_cast<unsigned char>(options.gpuArch[3]));
      if (!valid)
        throw UsageError{"--gpu-arch expects sm_XX (sm_80, sm_90, ...), got '" + options.gpuArch + "'"};
    } else if (arg == "-o" && forCompile) {
      options.outputFile = value();
    } else if (arg == "--shared" && forCompile) {
      options.shared = true;
    } else if (arg == "--opt-profile" && forCompile) {
      options.optProfile = true;
    } else if (arg == "--explain-placement" && forCompile) {
      options.explainPlacement = true;
    } else if (arg == "--dim" && forCompile) {
      addDim(options.optimizer.costModel, value());
    } else if (arg == "--cost-model") {
      options.optimizer.costModel.loadOverrides(value()); // a bad file is an error in an input: exit 1
    } else if (arg == "--host-cpu" && (forRun || forCompile || forRepl)) {
      options.hostCpu = value();
      if (options.hostCpu.empty()) throw UsageError{"--host-cpu needs a CPU name, e.g. x86-64-v3"};
    } else if (arg == "--no-cache" && (forRun || forCompile || forRepl)) {
      options.kernelCache = false;
    } else if (arg == "--stop-after" || arg == "--print-after" || arg == "--opt-include" ||
               arg == "--opt-exclude") {
      std::string pass = value();
      if (!opt::isPassOrTag(pass)) {
        std::string names;
        for (const opt::PassInfo &info : opt::passTable())
          names += std::string(names.empty() ? "" : ", ") + info.name;
        throw UsageError{"unknown pass '" + pass + "' for " + arg + "; passes: " + names};
      }
      if (arg == "--stop-after")
        options.optimizer.stopAfter = pass;
      else if (arg == "--print-after")
        options.optimizer.printAfter = pass;
      else
        (arg == "--opt-include" ? options.optimizer.include : options.optimizer.exclude).push_back(pass);
    } else if (arg == "--lift") {
      options.optimizer.lift = value();
      if (!opt::isLiftStrategy(options.optimizer.lift))
        throw UsageError{"unknown --lift value '" + options.optimizer.lift +
                         "'; expected global, local or cost"};
    } else if (arg == "--verify-each") {
      options.optimizer.verifyEach = true;
    } else if (arg == "-O0") {
      options.optimize = false;
    } else if (arg == "-v" || arg == "--verbose") {
      options.verbose = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      std::vector<std::string> names = optionNames();
      if (std::find(names.begin(), names.end(), arg) != names.end())
        throw UsageError{"'" + arg + "' is not an option of 'tgc " + options.command +
                         "'; 'tgc help' says which command takes it"};
      throw UsageError{"unknown option '" + arg + "' for 'tgc " + options.command + "'" +
                       frontend::didYouMean(arg, names)};
    } else if (forRepl) {
      throw UsageError{"'tgc repl' takes no script; load one inside with :load FILE.tg"};
    } else if (options.file.empty()) {
      options.file = arg;
    } else {
      throw UsageError{"unexpected argument '" + arg + "'; give one script"};
    }
  }
  if (options.command != "run" && options.command != "compile" && options.command != "repl") {
    bool script = options.command.size() > 3 && options.command.ends_with(".tg");
    throw UsageError{"unknown command '" + options.command + "'" +
                     (script ? "; to run a script: tgc run " + options.command
                             : frontend::didYouMean(options.command, {"run", "compile", "repl", "help"}))};
  }
  if (options.batch == 0 && (options.epochs > 0 || options.shuffle))
    throw UsageError{std::string(options.epochs > 0 ? "--epochs" : "--shuffle") +
                     " needs --batch B: it orders the batches of B rows"};
  if (options.batch > 0 && stepsGiven)
    throw UsageError{"--steps and --batch both set the steps: give --epochs E with --batch instead"};
  if (options.file.empty() && options.command != "repl")
    throw UsageError{"'tgc " + options.command + "' needs a script, e.g. tgc " + options.command + " x.tg"};
  if (options.shared && options.emit != "lib") throw UsageError{"--shared goes with --emit=lib"};
  if (options.emit == "lib" && options.outputFile.empty())
    throw UsageError{"--emit=lib needs -o DIR/NAME: where to write NAME.h, libNAME.a and NAME.cmake"};
  if (options.emit == "lib" && options.device == "sim")
    throw UsageError{"--emit=lib makes libraries for cpu, cuda or auto (cuda where a GPU answers): the "
                     "simulated device is tgc's own test device"};
  // A library's kernels are compiled for --host-cpu, which need not be this machine's; the JIT (which runs
  // the library's program once to see its kernels) keeps this machine's.
  if (options.emit != "lib") chooseHostCpu(options.hostCpu);
  return options;
}

/// The library's options for what the command line asks (the device is the caller's to open or not).
api::Options libraryOptions(const Options &options) {
  api::Options library;
  library.distributed = !options.shard.empty();
  library.shard = options.shard;
  library.optimize = options.optimize;
  library.optimizer = options.optimizer;
  library.gpuArch = options.gpuArch;
  library.kernelCache = options.kernelCache;
  return library;
}

int compile(const Options &options) {
  api::Source source = api::Source::file(options.file);
  std::string text;
  if (options.emit == "lib") {
    api::LibraryOptions library{options.outputFile, options.shared, options.hostCpu,
                                options.deviceGiven ? options.device : "cpu"};
    if (library.hostCpu.empty()) {
      const char *fromEnvironment = std::getenv("TGC_HOST_CPU");
      library.hostCpu = fromEnvironment && *fromEnvironment ? fromEnvironment : "native";
    }
    api::Options compileOptions = libraryOptions(options);
    compileOptions.optimizer.device = false; // writeLibrary places the program for each device itself
    for (const std::string &path : api::writeLibrary(source, compileOptions, library))
      std::cerr << "tgc: wrote " << path << "\n";
    return 0;
  }
  if (options.emit == "ast") {
    text = api::printAst(source);
  } else {
    api::Options library = libraryOptions(options);
    // Compiling for sim or cuda places the graph as for a device without opening one: PTX is text.
    library.placeForDevice = options.optimizer.device;
    // --emit=ir shows the graph as built, unless a stopping point asks for the graph after it.
    library.optimize = options.optimize && (options.emit != "ir" || !options.optimizer.stopAfter.empty() ||
                                            options.optProfile || options.explainPlacement);
    api::Program program = api::Program::compile(source, library);
    if (options.explainPlacement) {
      std::cout << program.explainPlacement();
      return 0;
    }
    text = program.emit(options.emit, options.optProfile);
    if (options.optProfile && options.emit != "json") std::cerr << opt::formatProfile(program.profile());
  }
  if (options.outputFile.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(options.outputFile, std::ios::binary);
  out << text;
  if (!out) throw ir::UserError("cannot write '" + options.outputFile + "'");
  return 0;
}

/// Whether `ports` has one named `name`.
bool hasPort(const std::vector<api::Port> &ports, const std::string &name) {
  for (const api::Port &port : ports)
    if (port.name == name) return true;
  return false;
}

/// A distributed run's inputs: each rank reads its block of the split dimension of each file (only those
/// rows, when it is the first axis); with --batch, the whole files, each batch to be split as it is cut.
/// The files must agree on the dimension's size, checked here, where every rank sees every file's.
void loadParts(const api::Program &program, const std::map<std::string, std::string> &files, bool batched,
               api::Program::Values &inputs) {
  const std::string &dimension = program.shardDimension();
  std::string sizedBy;
  int64_t size = -1;
  for (const auto &[name, path] : files) {
    int axis = -1;
    for (const api::Port &port : program.inputs())
      for (size_t d = 0; d < port.type.shape.size() && port.name == name && axis < 0; ++d)
        if (port.type.shape[d] == ir::Dim::named(dimension)) axis = static_cast<int>(d);
    int64_t length = -1;
    runtime::Tensor tensor;
    if (axis == 0 && !batched) {
      tensor = runtime::Tensor::fromData(io::loadNpyRows(path, [&](int64_t rows) {
        length = rows;
        runtime::Communicator &ranks = runtime::communicator();
        return runtime::blockOf(rows, ranks.rank(), ranks.size());
      }));
    } else {
      tensor = runtime::Tensor::fromData(io::loadNpy(path));
      if (axis >= 0 && static_cast<size_t>(axis) < tensor.rank()) {
        length = tensor.shape()[static_cast<size_t>(axis)];
        if (!batched) tensor = runtime::ownBlock(tensor, static_cast<size_t>(axis)).contiguous();
      }
    }
    if (length >= 0 && size >= 0 && length != size)
      throw ir::UserError("input '" + name + "': dimension " + std::to_string(axis) + " is " + dimension +
                          "=" + std::to_string(length) + ", but " + dimension + "=" + std::to_string(size) +
                          " from input '" + sizedBy + "'");
    if (length >= 0 && size < 0) {
      size = length;
      sizedBy = name;
    }
    inputs[name] = tensor;
  }
}

int run(const Options &options, frontend::DiagnosticEngine &diags) {
  api::Source source = api::Source::file(options.file);
  diags.addSource(source.name, source.text); // for the errors about --in and --out below
  api::Ranks ranks = api::joinRanks();
  bool split = ranks.size > 1, first = ranks.rank == 0; // the first rank prints and saves
  api::OpenedDevice device = api::openDevice(options.device);
  if (options.verbose && first)
    std::cerr << "tgc: device " << (device.device ? device.device->describe() : "cpu") << " (" << device.why
              << ")\n"
              << "tgc: BLAS " << runtime::describeBlas() << "\n";
  api::Program::Values inputs;
  api::Options library = libraryOptions(options);
  library.device = device.device;
  library.distributed = true;
  if (!first) library.warnings = nullptr;
  std::map<std::string, std::string> numbers; // --in NAME=NUMBER: typed once the input's dtype is known
  std::map<std::string, std::string> files;   // split runs read theirs once the split dimension is known
  for (const auto &[name, path] : options.inputs) {
    if (tools::looksLikeScalar(path)) {
      numbers[name] = path;
      library.inputShapes[name] = {};
    } else if (split) {
      files[name] = path;
    } else {
      inputs[name] = runtime::Tensor::fromData(io::loadNpy(path));
      library.inputShapes[name] = inputs[name].shape(); // the cost model prices the run's own sizes
    }
  }
  if (!split && !options.shard.empty())
    throw UsageError{"--shard " + options.shard +
                     " splits a run across the processes mpirun starts: mpirun -np N tgc run ..."};
  api::Program program = api::Program::compile(source, library);
  loadParts(program, files, options.batch > 0, inputs);
  if (options.verbose && first && split)
    std::cerr << "tgc: " << ranks.size << " ranks (" << ranks.description << "), "
              << (program.shardDimension().empty() ? "nothing split"
                                                   : "split along " + program.shardDimension())
              << "\n";
  for (const api::Port &input : program.inputs()) {
    if (auto number = numbers.find(input.name); number != numbers.end())
      inputs[input.name] = runtime::Tensor::fromData(
          tools::commandLineScalar(input, number->second, "--in " + input.name + "=" + number->second));
    else if (auto given = inputs.find(input.name);
             given != inputs.end() && input.type.shape.empty() && given->second.numElements() == 1)
      given->second = given->second.reshaped({}); // a one-element array (shape (1,)) for a scalar input
  }
  for (const auto &[name, path] : options.outputs)
    if (!hasPort(program.outputs(), name) && !hasPort(program.params(), name))
      throw ir::UserError("--out " + name + ": the script has no output or param named '" + name + "'");
  for (const api::Port &input : program.inputs())
    if (!inputs.count(input.name))
      throw ir::UserError("missing input '" + input.name + "': pass it with --in " + input.name + "=FILE.npy",
                          input.loc);
  if (program.outputs().empty() && options.outputs.empty() && first)
    std::cerr << source.name
              << ": note: the script has no 'output', so a run prints nothing; name what to print with "
                 "'output NAME' (or save a param with --out NAME=FILE.npy)\n";
  std::vector<runtime::Tensor> results;
  long step = 0;
  double firstStepSeconds = 0, laterStepsSeconds = 0; // for -v: the first step compiles what it runs
  auto runStep = [&](const api::Program::Values &values) {
    auto start = std::chrono::steady_clock::now();
    results = program.step(values);
    (step == 0 ? firstStepSeconds : laterStepsSeconds) +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++step;
    if (options.printEvery > 0 && step % options.printEvery == 0 && first)
      for (size_t i = 0; i < program.outputs().size(); ++i) {
        // An output that is a param shows the value the step read: its update comes after.
        const std::string &name = program.outputs()[i].name;
        tools::printNamed(std::cout,
                          "step " + std::to_string(step) + ": " + name +
                              (hasPort(program.params(), name) ? " (before the step's update)" : ""),
                          results[i]);
      }
  };
  if (options.batch == 0) {
    for (long s = 0; s < options.steps; ++s)
      runStep(inputs);
  } else {
    tools::Batches batches(program.inputs(), inputs, options.batch, options.shuffle);
    if (split && !program.shardDimension().empty() && program.shardDimension() != batches.dimension())
      throw UsageError{"--shard " + program.shardDimension() + " with --batch: the batches are cut along " +
                       batches.dimension() + ", which a distributed run with --batch splits"};
    // A split run's batch: this rank's block of each batched input's rows.
    auto part = [&](api::Program::Values values) {
      if (!split || program.shardDimension().empty()) return values;
      for (const api::Port &port : program.inputs())
        if (!port.type.shape.empty() && port.type.shape[0] == ir::Dim::named(batches.dimension()))
          values[port.name] = runtime::ownBlock(values[port.name], 0);
      return values;
    };
    long epochs = std::max(options.epochs, 1L);
    bool progress = isatty(STDERR_FILENO) && first;
    for (long epoch = 0; epoch < epochs; ++epoch) {
      auto start = std::chrono::steady_clock::now();
      std::vector<double> sums(program.outputs().size(), 0.0);
      for (int64_t b = 0; b < batches.perEpoch(); ++b) {
        runStep(part(batches.batch(epoch, b)));
        for (size_t i = 0; i < results.size() && progress; ++i)
          if (results[i].rank() == 0 && results[i].dtype() != ir::DType::Bool)
            sums[i] += results[i].toData().get(0);
      }
      if (!progress) continue;
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "epoch %ld/%ld: %lld steps of %ld rows, %.2f s", epoch + 1, epochs,
                   static_cast<long long>(batches.perEpoch()), options.batch, seconds);
      for (size_t i = 0; i < results.size(); ++i)
        if (results[i].rank() == 0 && results[i].dtype() != ir::DType::Bool && batches.perEpoch() > 0)
          std::fprintf(stderr, "; %s %.6g", program.outputs()[i].name.c_str(),
                       sums[i] / static_cast<double>(batches.perEpoch()));
      std::fprintf(stderr, "\n");
    }
  }
  auto saved = [&](const std::string &name) -> const std::string * {
    for (const auto &[outName, path] : options.outputs)
      if (outName == name) return &path;
    return nullptr;
  };
  for (size_t i = 0; i < program.outputs().size() && i < results.size() && first; ++i) {
    const std::string &name = program.outputs()[i].name;
    if (const std::string *path = saved(name))
      io::saveNpy(*path, results[i].toData());
    else
      tools::printNamed(std::cout, name, results[i]);
  }
  for (const api::Port &param : program.params())
    if (const std::string *path = saved(param.name); path && first)
      io::saveNpy(*path, program.param(param.name).toData());
  if (options.verbose && split) {
    // Every rank's line: how long each waited in collectives shows how evenly the work was split.
    const runtime::CollectiveStats &collectives = runtime::collectiveStats();
    char line[160];
    std::snprintf(line, sizeof line, "tgc: rank %d: collectives: %zu calls, %zu bytes, %.6f s\n", ranks.rank,
                  collectives.calls, collectives.bytes, collectives.seconds);
    std::cerr << line;
  }
  if (options.verbose && first) {
    if (step > 0) { // through std::cerr, which flushes the outputs printed before it
      char line[160];
      std::snprintf(line, sizeof line, "tgc: %ld steps: the first %.6f s, the others %.6f s each\n", step,
                    firstStepSeconds, step > 1 ? laterStepsSeconds / static_cast<double>(step - 1) : 0.0);
      std::cerr << line;
    }
    runtime::TransferStats transfers = program.transfers();
    std::cerr << "tgc: transfers: " << transfers.toDevice << " to the device, " << transfers.toHost
              << " to the host, " << transfers.bytes << " bytes\n";
    codegen::KernelCacheStats cache = codegen::kernelCacheStats();
    if (program.device() && !program.device()->report().empty())
      std::cerr << program.device()->report() << "\n";
    std::cerr << "tgc: kernel cache " << codegen::describeKernelCache() << ": " << cache.diskHits << " hits, "
              << cache.diskMisses << " misses, " << cache.diskWrites << " writes, " << cache.corruptEntries
              << " corrupt entries\n";
  }
  return 0;
}

int repl(const Options &options, bool terminal) {
  tools::ReplOptions repl;
  repl.device = options.device;
  repl.gpuArch = options.gpuArch;
  repl.interactive = terminal;
  repl.optimizer = options.optimizer;
  repl.optimize = options.optimize;
  repl.binds = options.inputs;
  if (terminal) repl.historyFile = tools::defaultHistoryFile();
  return tools::runRepl(repl, std::cin, std::cout, std::cerr);
}

/// OpenBLAS chose its kernels when it loaded, before main: when they are older than this CPU (an unknown
/// newer model gets SSE3 kernels), run again with the core the CPU's features call for. A core the user
/// names in $OPENBLAS_CORETYPE is kept.
void chooseBlasKernels(char **argv) {
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  std::optional<std::string> core = runtime::betterBlasCore();
  if (!core) return;
  setenv("OPENBLAS_CORETYPE", core->c_str(), 1);
  execv("/proc/self/exe", argv); // returns only when it fails: then go on with the kernels loaded
  unsetenv("OPENBLAS_CORETYPE");
}

} // namespace

/// The command's exit code.
int runCommand(int argc, char **argv) {
  std::ios::sync_with_stdio(false);
  frontend::DiagnosticEngine diags(std::cerr);
  try {
    std::string first = argc > 1 ? argv[1] : "";
    if (first == "--help" || first == "-h" || first == "--version") {
      if (argc > 2) throw UsageError{"'" + first + "' takes no arguments, got '" + argv[2] + "'"};
      std::cout << (first == "--version" ? std::string("tgc ") + kVersion + "\n" : kUsage);
      return 0;
    }
    // Help on the language's builtins and the standard library: `tgc help conv2d`, `tgc help nn.softmax`.
    if (first == "help" && argc == 3 && std::string(argv[2]) != "run" && std::string(argv[2]) != "compile" &&
        std::string(argv[2]) != "repl") {
      std::string topic = argv[2];
      std::optional<std::string> text = frontend::builtinHelp(topic);
      if (!text)
        throw UsageError{"no builtin or standard library function named '" + topic + "'" +
                         frontend::didYouMean(topic, frontend::helpTopics()) +
                         " ('tgc help' alone shows the commands)"};
      std::cout << *text;
      return 0;
    }
    // Help asked for any way a user might: `tgc help`, `tgc help run`, `tgc run --help`, `tgc compile -h`.
    bool help = first == "help";
    for (int i = 2; i < argc && !help; ++i)
      help = std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h";
    if (help) {
      std::cout << kUsage;
      return 0;
    }
    // No arguments on a terminal: the REPL.
    if (argc == 1 && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
      chooseHostCpu("");
      return repl({}, true);
    }
    Options options = parseOptions(argc, argv);
    if (!options.kernelCache) codegen::setKernelCacheDirectory(std::nullopt);
    if (options.command == "repl") return repl(options, isatty(STDIN_FILENO) && isatty(STDOUT_FILENO));
    return options.command == "run" ? run(options, diags) : compile(options);
  } catch (const UsageError &error) {
    std::cerr << "tgc: error: " << error.message << "\n"
              << "Run 'tgc --help' for usage.\n";
    return 2;
  } catch (const api::Error &error) {
    std::cout.flush();
    std::cerr << error.text;
    if (error.kind != api::Error::Kind::Usage) return 1;
    std::cerr << "Run 'tgc --help' for usage.\n";
    return 2;
  } catch (const ir::UserError &error) {
    std::cout.flush();
    diags.report(error);
    return 1;
  } catch (const std::bad_alloc &) {
    std::cerr << "tgc: error: out of memory\n";
    return 1;
  } catch (const std::exception &error) {
    std::cerr << "tgc: internal compiler error: " << error.what() << "\n";
    return 3;
  }
}

int main(int argc, char **argv) {
  chooseBlasKernels(argv);
  int code = runCommand(argc, argv);
  // One rank of a distributed run failed: the others must not wait for it in a collective.
  if (code != 0 && runtime::communicator().size() > 1) {
    std::cout.flush();
    std::cerr.flush();
    runtime::communicator().abort(code);
  }
  return code;
}
