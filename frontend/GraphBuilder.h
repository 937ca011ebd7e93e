// Semantic analysis and graph building in one walk over the AST: scopes and name resolution, imports,
// inlining of `def`s, NumPy promotion with weak literals, and shape inference (through ir::inferType as each
// node is added). The result is an ir::Program.
#pragma once

#include "frontend/Ast.h"
#include "frontend/Diagnostics.h"
#include "frontend/ModuleLoader.h"
#include "ir/Program.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tg::frontend {

/// How a script is built, beyond its text.
struct BuildOptions {
  /// A name of the script's top level may be bound again (the REPL's `let x = x + 1`): the later binding
  /// shadows the earlier; otherwise that is an error.
  bool rebinding = false;
  /// Symbolic dimensions given a size when the script is compiled: with {"n": 128}, `f32[n, 4]` declares
  /// f32[128, 4] and `n` is the integer 128 (sizes without formatting the script's text).
  std::map<std::string, int64_t> sizes;
};

/// Builds the program of a parsed script. Returns nullptr when any error was reported (several may be).
std::unique_ptr<ir::Program> buildProgram(const Module &script, ModuleLoader &loader, DiagnosticEngine &diags,
                                          const BuildOptions &options = {});

/// `tgc help TOPIC`: a builtin's signature, as calls are checked against it, and its line of doc; a cast's
/// (f32(x)); or a standard library function's (nn.softmax, or softmax alone) from its def and the comment
/// above it. Nothing for an unknown topic.
std::optional<std::string> builtinHelp(const std::string &topic);
/// Every topic builtinHelp knows: the builtins, the casts and the standard library's functions.
std::vector<std::string> helpTopics();

/// Parses and builds a script file: what `tgc run` and `tgc compile` do first.
std::unique_ptr<ir::Program> compileScript(const std::string &path, DiagnosticEngine &diags);

} // namespace tg::frontend
