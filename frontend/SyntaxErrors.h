// The syntax errors of a script, reported by ANTLR's parser of grammar/Tg.g4 with its error recovery:
// frontend/Parser.cpp's parser stops at the first line it cannot parse, and hands the rest of the file here.
#pragma once

#include "frontend/Diagnostics.h"
#include "frontend/Lexer.h"

#include <memory>
#include <string>

namespace tg::frontend {

/// How deep expressions may nest: in the AST that frontend/Parser.cpp builds, where each operator of a chain
/// counts as a level, and in ANTLR's parser, which reads a chain without recursing. The parsers and every
/// later pass over the AST recurse once per level, and must not run out of stack.
constexpr int kMaxNesting = 1000;

/// The error for an expression nested deeper than kMaxNesting, at `loc`.
ir::UserError tooDeeplyNested(SourceLoc loc);

/// Reports the syntax errors of *file from the line where `lexer` stands to the end: at least one on that
/// line, which must have one, then those of later lines, the first of each line only. Its lexer reads
/// `input`'s code points. Throws tooDeeplyNested() when rules nest too deeply.
void reportSyntaxErrors(Lexer lexer, CodePointStream &input, std::shared_ptr<const std::string> file,
                        DiagnosticEngine &diags);

} // namespace tg::frontend
