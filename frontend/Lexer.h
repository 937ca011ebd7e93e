// The tokens the parser reads: the lexer rules of grammar/Tg.g4, hand-written. The grammar stays the
// reference (ANTLR generates TgLexer from it, and tests/unit/LexerTest.cpp checks that both give the same
// tokens, with the same types, text and positions, on every script of the repository and on random text);
// this one makes the same tokens in about a tenth of the time, without ANTLR's lexer DFA and its locks, and
// without a heap object per token: frontend/Parser.cpp reads Tokens, and ANTLR's parser
// (frontend/SyntaxErrors.h) reads them as CommonTokens through AntlrTokenSource.
#pragma once

#include "antlr4-runtime.h"

#include <memory>
#include <string>
#include <string_view>

namespace tg::frontend {

/// ANTLR's input stream over a text's code points, which the lexer reads and tokens index.
class CodePointStream : public antlr4::ANTLRInputStream {
public:
  explicit CodePointStream(std::u32string codePoints) { _data = std::move(codePoints); }
  /// Decodes UTF-8 text (ANTLR throws on invalid UTF-8).
  explicit CodePointStream(const std::string &utf8) : antlr4::ANTLRInputStream(utf8) {}
  std::u32string_view codePoints() const { return _data; }
};

/// A token: its type (TgLexer's), its text (the code points [start, end) of the lexer's text) and where it
/// starts (line from 1, column from 0, in code points, as ANTLR counts). The end of the text is an EOF token
/// with no text.
struct Token {
  size_t type = 0;
  size_t start = 0, end = 0;
  size_t line = 1, column = 0;
};

/// The type of the grammar's literal token `text` ("**", "=", "let"), or 0 when the grammar has none.
size_t literalType(std::string_view text);

/// Tokens of `text`: TgLexer's token types, with SPACE and COMMENT dropped, newlines inside brackets joined
/// (unless the next line starts a statement) and the newlines of blank lines dropped, as Tg.g4's lexer
/// actions do. A lexer is a small value: a copy taken before a token resumes there.
class Lexer {
public:
  explicit Lexer(std::u32string_view text) : text_(text) {}

  /// The next token; at the end of the text, an EOF token every time.
  Token next();
  size_t line() const { return line_; }
  size_t column() const { return column_; }

private:
  /// The code point at `index`, or 0 past the end (no rule continues with a NUL).
  char32_t at(size_t index) const { return index < text_.size() ? text_[index] : 0; }
  /// Moves past the code points up to `end`, counting lines and columns.
  void advanceTo(size_t end);
  /// The next rule's token; false for skipped text (blanks, comments, joined lines).
  bool match(Token &token);
  /// Tg.g4's nextLineStartsStatement(): from `index`, past blank lines and comments, the end of the text or
  /// a statement keyword.
  bool lineStartsStatement(size_t index) const;

  std::u32string_view text_;
  size_t index_ = 0, line_ = 1, column_ = 0;
  int bracketDepth_ = 0;
  bool atLineStart_ = true;
};

/// A lexer's tokens as ANTLR's parsers read them: CommonTokens over `input`, the stream of the lexer's text.
class AntlrTokenSource : public antlr4::TokenSource {
public:
  AntlrTokenSource(Lexer lexer, CodePointStream &input) : lexer_(lexer), input_(input) {}

  std::unique_ptr<antlr4::Token> nextToken() override;
  size_t getLine() const override { return lexer_.line(); }
  size_t getCharPositionInLine() override { return lexer_.column(); }
  antlr4::CharStream *getInputStream() override { return &input_; }
  std::string getSourceName() override { return input_.getSourceName(); }
  antlr4::TokenFactory<antlr4::CommonToken> *getTokenFactory() override;

private:
  Lexer lexer_;
  CodePointStream &input_;
};

} // namespace tg::frontend
