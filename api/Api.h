// tgc as a library: compile a script (a file or a string), describe its inputs, params and outputs, run it,
// step it (run, then apply its updates), read and write its params, print any stage `tgc compile` prints and
// explain its placement. `tgc run`, `tgc compile`, the REPL and the Python module are its clients.
//
//   tg::api::Options options;
//   options.device = tg::api::openDevice("auto").device;
//   tg::api::Program program = tg::api::Program::compile(tg::api::Source::file("logreg.tg"), options);
//   std::vector<tg::runtime::Tensor> outputs = program.step({{"X", x}, {"y", y}});
//
// Errors a user can cause (a bad script, bad inputs, a missing GPU) are thrown as api::Error, whose text is
// what `tgc` prints for them; anything else thrown is a compiler bug.
#pragma once

#include "ir/Program.h"
#include "ir/SourceLoc.h"
#include "ir/Type.h"
#include "opt/Pipeline.h"
#include "runtime/Device.h"
#include "runtime/Executor.h"
#include "runtime/Tensor.h"

#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tg::api {

/// Something a user got wrong, with the diagnostics `tgc` prints for it.
class Error : public std::exception {
public:
  enum class Kind {
    Usage,   // an option the library cannot take (the command line's exit code 2), or a call out of place
    Compile, // the script cannot be read, parsed, built or optimized
    Input,   // a run's inputs (a missing or unknown name, a wrong dtype or shape), or a param's new value
    Device,  // the device asked for cannot be opened
    Run,     // found while running: an index out of range, a file the script loads, memory exhausted
  };

  Error(Kind kind, std::string message, ir::SourceLoc loc, std::string text)
      : kind(kind), message(std::move(message)), loc(std::move(loc)), text(std::move(text)) {}
  const char *what() const noexcept override { return text.c_str(); }

  Kind kind;
  std::string message; // the (first) error's message, without location
  ir::SourceLoc loc;   // where it is; unknown for some
  std::string text;    // every diagnostic as tgc prints it: "FILE:LINE:COL: error: ...", the line, a caret
};

/// A script's text, and the name its diagnostics give it.
struct Source {
  std::string name; // a path (imports are searched beside it, then $TGC_PATH, then the standard library)
  std::string text;
  std::vector<ir::LineOrigin> origins; // where lines of the text came from, when not from the text itself
                                       // (the REPL's kept definitions and statements): diagnostics show them
                                       // there

  /// Reads a script file; Error(Compile) saying why when it cannot be read.
  static Source file(const std::string &path);
  /// Source text held in memory; imports are searched in the current folder first.
  static Source string(std::string text, std::string name = "<string>");
};

/// The script's abstract syntax tree (--emit=ast); only the parse has to succeed. Error(Compile) otherwise.
std::string printAst(const Source &source);

/// A device opened by name, for Options::device.
struct OpenedDevice {
  std::shared_ptr<runtime::Device> device; // null: none, the CPU runs everything
  std::string why;                         // which device and why, for -v
};

/// cpu: none; sim: the simulated device; cuda: the GPU (Error(Device) saying what is missing when it cannot
/// open); auto: cuda when a driver and a GPU answer, else none. Error(Usage) for another name.
OpenedDevice openDevice(const std::string &name);

/// This process's place among the processes of a run (one rank of one, without mpirun).
struct Ranks {
  int rank = 0, size = 1;
  std::string description; // "rank 1 of 2 on HOST (Open MPI v4.1.4)"
};

/// Under mpirun, joins the run's other processes (MPI, runtime/Collectives.h), so that programs compiled with
/// Options::distributed split their steps across them; nothing without mpirun. Error(Device) saying why when
/// mpirun started the process but MPI does not open.
Ranks joinRanks();

struct Options {
  std::shared_ptr<runtime::Device> device; // where device nodes run (openDevice); null: the CPU
  bool placeForDevice = false;     // place for a device even when none is open: the program can be printed
                                   // (PTX, placement) but not run
  bool optimize = true;            // false: no pass (-O0); the graph runs as built
  opt::OptimizerOptions optimizer; // the passes (lift, include, exclude, stop-after, the cost model, ...);
                                   // the device, constant folding, the log and the reasons are set by compile
  std::map<std::string, std::vector<int64_t>> inputShapes; // the inputs' shapes in the runs to come: they
                                                           // size the cost model's symbolic dimensions
  std::string gpuArch = "sm_90";                           // the GPU that emit("ptx") writes for
  bool kernelCache = true;             // false: this program's kernels neither read nor write the disk cache
  std::ostream *warnings = &std::cerr; // the optimizer's warnings and --print-after; null: dropped
  bool rebinding = false; // a name of the script's top level may be bound again, the later binding shadowing
                          // the earlier (the REPL: `let x = x + 1`); otherwise an error
  std::map<std::string, int64_t> sizes; // symbolic dimensions given a size: {"n": 128} makes f32[n, 4]
                                        // f32[128, 4], and `n` the integer 128
  bool distributed =
      false;         // split each step across the ranks of the run (runtime::communicator(), which
                     // runtime::openDistributed opens under mpirun): each rank's inputs are its block of
                     // the batch dimension, and the results are the single process's (docs/distributed.md);
                     // nothing changes on one rank unless `shard` is named (then the split program runs
                     // there too, its collectives copies: what `tgc compile --shard` shows)
  std::string shard; // the batch dimension split: a symbolic dimension of the inputs; empty: the one they
                     // lead with
};

/// An input, param or output: its name and declared type (dtype, and a shape whose dimensions may be
/// symbolic), with the declaration's place in the script (unknown for outputs).
struct Port {
  std::string name;
  ir::TensorType type;
  ir::SourceLoc loc;
};

/// A compiled script with its state (the params). Runs on the calling thread; one call at a time.
class Program {
public:
  using Values = std::map<std::string, runtime::Tensor>;

  /// Parses, builds and (unless options.optimize is false) optimizes a script. Error(Compile) with the
  /// diagnostics when it does not.
  static Program compile(const Source &source, const Options &options = {});

  Program(Program &&) noexcept;
  Program &operator=(Program &&) noexcept;
  ~Program();

  const std::vector<Port> &inputs() const;
  const std::vector<Port> &params() const;
  const std::vector<Port> &outputs() const;
  const Source &source() const;

  /// Runs the script on `inputs` (one host tensor per input, by name) and returns its outputs in outputs()
  /// order, without applying the updates. An input that only the updates read may be left out (then the
  /// program without its updates runs, compiled once). Error(Input) for inputs that do not fit; Error(Run)
  /// for errors found while running. The params are initialized on the first call.
  std::vector<runtime::Tensor> run(const Values &inputs);
  /// As run, then applies the updates (all at once).
  std::vector<runtime::Tensor> step(const Values &inputs);

  /// A param's current value, in host memory. Error(Input) for an unknown name.
  runtime::Tensor param(const std::string &name);
  /// Gives a param a copy of `value`; Error(Input) for an unknown name or another dtype or shape.
  void setParam(const std::string &name, const runtime::Tensor &value);

  /// A stage as `tgc compile --emit=STAGE` prints it: ast, ir (the graph as built, or as --stop-after
  /// leaves it), opt, json (with the optimizer's profile when `withProfile`), dot, llvm or ptx.
  /// Error(Usage) for another stage.
  std::string emit(const std::string &stage, bool withProfile = false) const;
  /// Each node in order, where it runs and why (--explain-placement).
  std::string explainPlacement() const;
  /// What each pass did (--opt-profile); empty when not optimized.
  const opt::OptimizerProfile &profile() const;

  /// The program as optimized and placed: what runs (and what a library made ahead of time holds).
  const ir::Program &compiled() const;
  /// The symbolic dimension a distributed run splits its inputs along; empty when it is not split (one
  /// rank, or not distributed).
  const std::string &shardDimension() const;

  /// The transfers between host and device memory so far (the params' first uploads included).
  runtime::TransferStats transfers() const;
  /// The device it runs on; null for the CPU.
  runtime::Device *device() const;

private:
  struct State;
  explicit Program(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

} // namespace tg::api
