// The parser: .tg source text to the AST of frontend/Ast.h, by ANTLR's parser of grammar/Tg.g4, with every
// syntax error reported as a diagnostic.
#pragma once

#include "frontend/Ast.h"
#include "frontend/Diagnostics.h"

#include <memory>
#include <string>

namespace tg::frontend {

/// How deep expressions may nest, each operator of a chain counting as a level: the parser and every later
/// pass over the AST recurse once per level, and must not run out of stack.
constexpr int kMaxNesting = 1000;

/// Parses one .tg file named *file. Registers the source with diags, then reports every lexical and syntax
/// error it finds (several per file: from the first line with a syntax error on, ANTLR's recovery finds
/// them), invalid UTF-8 and out-of-range literals. Returns the module (empty for a file of blank and comment
/// lines), or nullptr when this call reported any error: an AST is never built from a tree with errors. Bad
/// input never throws or crashes.
std::unique_ptr<Module> parseModule(std::string source, std::shared_ptr<const std::string> file,
                                    DiagnosticEngine &diags);

} // namespace tg::frontend
