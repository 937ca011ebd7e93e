// The hand-written lexer (frontend/Lexer.h) against the reference, ANTLR's TgLexer generated from the
// grammar's lexer rules: the same tokens (type, text, line, column, start and stop) on every script in the
// repository and on random text built from the pieces where the rules meet (numbers and exponents, strings
// and escapes, comments, line breaks inside and outside brackets, two-character operators, non-ASCII).
#include "frontend/Lexer.h"

#include "RepositoryScripts.h"
#include "TgLexer.h"

#include <gtest/gtest.h>
#include <random>
#include <sstream>

namespace {

using tg::frontend::CodePointStream;

/// "type 'text' line:column [start, stop]" of every token up to and including the end of the file.
template <typename Source>
std::vector<std::string> tokens(Source &source) {
  std::vector<std::string> seen;
  for (;;) {
    std::unique_ptr<antlr4::Token> token = source.nextToken();
    std::ostringstream line;
    line << token->getType() << " '" << token->getText() << "' " << token->getLine() << ":"
         << token->getCharPositionInLine() << " [" << token->getStartIndex() << ", " << token->getStopIndex()
         << "]";
    seen.push_back(line.str());
    if (token->getType() == antlr4::Token::EOF) return seen;
    if (seen.size() > 100000) return seen; // a lexer that makes no progress
  }
}

void expectSameTokens(const std::string &text, const std::string &what) {
  CodePointStream referenceInput(text), input(text);
  tg::grammar::TgLexer reference(&referenceInput);
  reference.removeErrorListeners();
  tg::frontend::AntlrTokenSource lexer(tg::frontend::Lexer(input.codePoints()), input);
  std::vector<std::string> want = tokens(reference), have = tokens(lexer);
  ASSERT_EQ(want, have) << what;
}

TEST(LexerTest, EveryScriptInTheRepositoryLexesAsTheGrammarSays) {
  std::vector<std::pair<std::string, std::string>> scripts = tg::frontend::repositoryScripts();
  for (const auto &[path, text] : scripts)
    expectSameTokens(text, path);
  // A source tree has over a hundred; a bundle (tools/bundle.sh) has its examples and stdlib alone.
  EXPECT_GE(scripts.size(), 8u);
}

TEST(LexerTest, RandomTextLexesAsTheGrammarSays) {
  const std::vector<std::string> pieces = {"1",      "42",
                                           ".",      "5",
                                           "e",      "E",
                                           "+",      "-",
                                           "e+",     "1e",
                                           "1.",     ".5e-3",
                                           "\"",     "\\",
                                           "\\\"",   "\r",
                                           "\n",     "\r\n",
                                           " ",      "\t",
                                           "\f",     "#",
                                           "# c",    "(",
                                           ")",      "[",
                                           "]",      "{",
                                           "}",      "*",
                                           "**",     "<",
                                           "<=",     "=",
                                           "==",     "!",
                                           "!=",     ">=",
                                           ">",      ",",
                                           ":",      "@",
                                           "%",      "/",
                                           "x",      "_a",
                                           "let",    "def",
                                           "import", "output",
                                           "return", "letter",
                                           "and",    "not",
                                           "true",   "é",
                                           "λ",      std::string(1, '\0'),
                                           "\x7f",   "$",
                                           "input",  "param",
                                           "update"};
  std::mt19937 random(20261206);
  std::uniform_int_distribution<size_t> piece(0, pieces.size() - 1), length(0, 40);
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    for (size_t n = length(random); n > 0; --n)
      text += pieces[piece(random)];
    expectSameTokens(text, "random text " + std::to_string(i) + ": \"" + text + "\"");
    if (HasFatalFailure()) return;
  }
}

} // namespace
