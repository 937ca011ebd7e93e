// tgc repl: an interactive session in which every statement is compiled through the whole pipeline and run
// at once. `import`s, `def`s and `let`s are kept for the statements that follow (a `let` keeps its value, not
// its expression, so randomness and cost are paid once); an expression prints its value with its type. A
// training script can be explored: its `input`s take values from `:bind` (or `--in`), its `param`s are
// initialized, and `:step [N]` applies its `update`s. Each statement compiles only what it reads of the
// session, so it costs the same at line 10 and at line 10,000. `:` commands show the stages of an expression
// (`:type :ir :opt :llvm :ptx :explain :time`), switch the device, load scripts and save values. An error
// prints a diagnostic, located in the script a statement came from, and the session goes on (a piped
// session with errors exits with 1).
//
// On a terminal: a prompt, line editing and a history file (libedit). Otherwise (piped input) no prompt or
// banner, so sessions can be scripted and tested.
#pragma once

#include "opt/Pipeline.h"

#include <istream>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace tg::tools {

struct ReplOptions {
  std::string device = "auto"; // as tgc run --device
  std::string gpuArch = "sm_90";
  bool interactive = false;        // a terminal: line editing, prompts, banner, history
  std::string historyFile;         // interactive only; empty for none
  opt::OptimizerOptions optimizer; // as tgc run's optimizer options (the device is the session's)
  bool optimize = true;            // false: -O0, no pass
  std::vector<std::pair<std::string, std::string>> binds; // --in NAME=FILE.npy: as :bind at the start
};

/// Runs a session until the input ends or `:quit [CODE]`; returns the exit code (CODE; else 1 when a session
/// that is not interactive had errors; else 0).
/// Values go to `out`, diagnostics to `err`. Non-interactive sessions read `in`.
int runRepl(const ReplOptions &options, std::istream &in, std::ostream &out, std::ostream &err);

/// The default history file: $TGC_HISTORY, else ~/.tgc_history (empty when neither can be named).
std::string defaultHistoryFile();

} // namespace tg::tools
