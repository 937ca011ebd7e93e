// The tokens the parser reads: the lexer rules of grammar/Tg.g4, hand-written. The grammar stays the
// reference (ANTLR generates TgLexer from it, and tests/unit/LexerTest.cpp checks that both give the same
// tokens, with the same types, text and positions, on every script of the repository and on random text);
// this one makes the same tokens in about a tenth of the time, without ANTLR's lexer DFA and its locks.
// ANTLR's lexer took a third of the time from a 10,000-line script to its optimized graph
// (bench/compile_scale.py).
#pragma once

#include "antlr4-runtime.h"

#include <memory>
#include <string>
#include <string_view>

namespace tg::frontend {

/// Tokens over `input`, whose code points are `text` (positions and columns count code points, as ANTLR's
/// do): TgLexer's token types, with SPACE and COMMENT dropped, newlines inside brackets joined (unless the
/// next line starts a statement) and the newlines of blank lines dropped, as Tg.g4's lexer actions do.
class Lexer : public antlr4::TokenSource {
public:
  Lexer(antlr4::CharStream &input, std::u32string_view text);

  std::unique_ptr<antlr4::Token> nextToken() override;
  size_t getLine() const override { return line_; }
  size_t getCharPositionInLine() override { return column_; }
  antlr4::CharStream *getInputStream() override { return &input_; }
  std::string getSourceName() override { return input_.getSourceName(); }
  antlr4::TokenFactory<antlr4::CommonToken> *getTokenFactory() override;

private:
  /// The code point at `index`, or 0 past the end (no rule continues with a NUL).
  char32_t at(size_t index) const { return index < text_.size() ? text_[index] : 0; }
  /// Moves past the code points up to `end`, counting lines and columns.
  void advanceTo(size_t end);
  /// The token of the next rule that matches, or nothing for skipped text (blanks, comments, joined lines).
  std::unique_ptr<antlr4::Token> match();
  /// Tg.g4's nextLineStartsStatement(): from `index`, past blank lines and comments, the end of the text or
  /// a statement keyword.
  bool lineStartsStatement(size_t index) const;

  antlr4::CharStream &input_;
  std::u32string_view text_;
  size_t index_ = 0, line_ = 1, column_ = 0;
  int bracketDepth_ = 0;
  bool atLineStart_ = true;
};

} // namespace tg::frontend
