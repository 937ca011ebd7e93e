// Finds, reads and parses .tg files: the script itself and the modules it imports, searched in the script's
// folder, then each folder of $TGC_PATH, then the standard library embedded in the binary.
#pragma once

#include "frontend/Ast.h"
#include "frontend/Diagnostics.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tg::frontend {

class ModuleLoader {
public:
  /// `searchPath` lists folders to look in after the script's own folder (usually from $TGC_PATH).
  ModuleLoader(DiagnosticEngine &diags, std::vector<std::string> searchPath);

  /// Reads and parses a script; nullptr (with diagnostics, at `importLoc` for an imported module) when it
  /// cannot be read or parsed.
  const Module *loadScript(const std::string &path, const SourceLoc &importLoc = {});
  /// Reads and parses source text held in memory (the REPL, tests) under a display name.
  const Module *loadSource(const std::string &displayName, std::string text);
  /// Finds and parses module `name` imported at `loc` from a file in `importerFolder`; nullptr with a
  /// diagnostic when it is not found or does not parse. Each module is parsed once.
  const Module *loadModule(const std::string &name, const std::string &importerFolder, const SourceLoc &loc);

  /// The folders searched, from $TGC_PATH (split on ':').
  static std::vector<std::string> searchPathFromEnvironment();

private:
  const Module *parse(const std::string &displayName, std::string text);

  DiagnosticEngine &diags_;
  std::vector<std::string> searchPath_;
  std::vector<std::unique_ptr<Module>> modules_;
  std::map<std::string, const Module *> byName_;
};

/// The standard library's modules, compiled into the binary: module name -> source text.
const std::map<std::string, std::string> &embeddedStdlib();

/// Scripts and modules larger than this are refused (a stream that never ends, such as a device, would
/// otherwise be read until memory runs out).
constexpr size_t kMaxSourceBytes = size_t(256) << 20;

/// The text of a source file; nullopt with `error` saying why when it cannot be read (missing, a directory,
/// unreadable, larger than kMaxSourceBytes).
std::optional<std::string> readSourceFile(const std::string &path, std::string &error);

/// The folder part of a path ("." when it has none).
std::string folderOf(const std::string &path);

} // namespace tg::frontend
