// ANTLR's parser of grammar/Tg.g4 over a script that frontend/Parser.cpp found a syntax error in: it reports
// every syntax error from that line on, with short messages that name the offending token in place of ANTLR's
// token sets, resuming at the next line after each.
#include "frontend/SyntaxErrors.h"

#include "TgParser.h"
#include "ir/Assert.h"

#include <optional>

namespace tg::frontend {
namespace {

using grammar::TgParser;

bool isLineEnd(const antlr4::Token *token) {
  return token->getType() == TgParser::NEWLINE || token->getType() == antlr4::Token::EOF;
}

/// A found token as a message names it: 'foo', end of line.
std::string describeToken(const antlr4::Token *token) {
  if (token->getType() == antlr4::Token::EOF) return "end of file";
  if (token->getType() == TgParser::NEWLINE) return "end of line";
  std::string text = token->getText();
  return "'" + text + "'";
}

/// The message for a token that is an error by itself, whatever the parser expected there.
std::optional<std::string> lexicalError(const antlr4::Token *token) {
  std::string text = token->getText();
  if (token->getType() == TgParser::UNTERMINATED_STRING) return "unterminated string";
  if (token->getType() != TgParser::ERROR_CHAR) return std::nullopt;
  if (text.size() == 1 && (static_cast<unsigned char>(text[0]) < 0x20 || text[0] == 0x7F))
    return "unexpected character U+00" + hexDigits(text[0]);
  return "unexpected character '" + text + "'";
}

/// IntervalSet::contains is overloaded for size_t and ssize_t, which makes it ambiguous for token types.
bool contains(const antlr4::misc::IntervalSet &set, size_t tokenType) {
  return set.contains(tokenType);
}

/// A few expected tokens as a message lists them ("':' or '='"), or nothing when there are too many to help.
/// Ends of lines are left out when one was found: a line that ends too soon lacks something else.
std::optional<std::string> listExpected(const antlr4::misc::IntervalSet &expected, const antlr4::Token *found,
                                        const antlr4::dfa::Vocabulary &vocabulary) {
  std::vector<std::string> names;
  for (ssize_t type : expected.toList()) {
    switch (static_cast<size_t>(type)) {
    case antlr4::Token::EOF:
      if (!isLineEnd(found) && !contains(expected, TgParser::NEWLINE)) // the end of the file ends a line too
        names.push_back("end of file");
      break;
    case TgParser::NEWLINE:
      if (!isLineEnd(found)) names.push_back("end of line");
      break;
    case TgParser::NAME:
      names.push_back("a name");
      break;
    case TgParser::INT:
      names.push_back("an integer");
      break;
    default:
      names.push_back(vocabulary.getLiteralName(type));
    }
  }
  if (names.empty() || names.size() > 4) return std::nullopt;
  std::string text = names[0];
  for (size_t i = 1; i < names.size(); ++i)
    text += (i + 1 == names.size() ? " or " : ", ") + names[i];
  return text;
}

/// The message for a syntax error at `token` where the parser expected one of `expected`.
std::string syntaxErrorMessage(const antlr4::Token *token, const antlr4::misc::IntervalSet &expected,
                               const antlr4::dfa::Vocabulary &vocabulary) {
  if (std::optional<std::string> message = lexicalError(token)) return *message;
  std::string found = describeToken(token);
  if (contains(expected, TgParser::FLOAT)) return "expected an expression, found " + found;
  if (contains(expected, TgParser::LET) && contains(expected, TgParser::IMPORT))
    return "expected a statement, found " + found;
  if (isLineEnd(token) && contains(expected, TgParser::RPAREN)) return "missing ')' before " + found;
  if (isLineEnd(token) && contains(expected, TgParser::RBRACK)) return "missing ']' before " + found;
  if (std::optional<std::string> names = listExpected(expected, token, vocabulary))
    return "expected " + *names + ", found " + found;
  return "unexpected " + found;
}

/// ANTLR's error recovery, with short messages ("expected ':', found 'f32'", "unexpected ')'", "missing ')'
/// before end of line") in place of its "extraneous input 'x' expecting {...}" with whole token sets, and
/// resuming at the end of the line at the latest.
class ReadableErrorStrategy : public antlr4::DefaultErrorStrategy {
protected:
  void reportNoViableAlternative(antlr4::Parser *parser, const antlr4::NoViableAltException &e) override {
    report(parser, e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportInputMismatch(antlr4::Parser *parser, const antlr4::InputMismatchException &e) override {
    report(parser, e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportMissingToken(antlr4::Parser *parser) override {
    if (inErrorRecoveryMode(parser)) return;
    beginErrorCondition(parser);
    report(parser, parser->getCurrentToken(), getExpectedTokens(parser));
  }
  void reportUnwantedToken(antlr4::Parser *parser) override {
    if (inErrorRecoveryMode(parser)) return;
    beginErrorCondition(parser);
    antlr4::Token *token = parser->getCurrentToken();
    // An extra token is just unexpected, but a line cannot end too soon without something missing.
    if (isLineEnd(token))
      report(parser, token, getExpectedTokens(parser));
    else
      parser->notifyErrorListeners(token, lexicalError(token).value_or("unexpected " + describeToken(token)),
                                   nullptr);
  }
  antlr4::misc::IntervalSet getErrorRecoverySet(antlr4::Parser *parser) override {
    antlr4::misc::IntervalSet set = DefaultErrorStrategy::getErrorRecoverySet(parser);
    set.add(static_cast<ssize_t>(TgParser::NEWLINE));
    return set;
  }

private:
  static void report(antlr4::Parser *parser, antlr4::Token *token,
                     const antlr4::misc::IntervalSet &expected) {
    parser->notifyErrorListeners(token, syntaxErrorMessage(token, expected, parser->getVocabulary()),
                                 nullptr);
  }
};

/// Sends the lexer's and the parser's errors to the diagnostics, with 1-based columns. Only the first error
/// of a line is reported: the others on it are mostly echoes of the first, left by ANTLR's recovery.
class DiagnosticListener : public antlr4::BaseErrorListener {
public:
  DiagnosticListener(std::shared_ptr<const std::string> file, DiagnosticEngine &diags)
      : file_(std::move(file)), diags_(diags) {}

  void syntaxError(antlr4::Recognizer *, antlr4::Token *, size_t line, size_t column,
                   const std::string &message, std::exception_ptr) override {
    if (line == lastErrorLine_) return;
    lastErrorLine_ = line;
    diags_.error({file_, static_cast<int>(line), static_cast<int>(column) + 1}, message);
  }

private:
  std::shared_ptr<const std::string> file_;
  DiagnosticEngine &diags_;
  size_t lastErrorLine_ = 0;
};

/// The 1-based location of a token (ANTLR's columns are 0-based).
SourceLoc tokenLoc(const antlr4::Token *token, std::shared_ptr<const std::string> file) {
  return {std::move(file), static_cast<int>(token->getLine()),
          static_cast<int>(token->getCharPositionInLine()) + 1};
}

/// Stops the parse when expressions nest deeper than frontend/Parser.cpp lets them: each expr rule entered,
/// including each operator of a chain (ANTLR enters a context per operator of a left-recursive rule), is a
/// level, as there. ANTLR's parser recurses once per rule, at most three rules per level (expr, primary,
/// argument), and must not run out of stack.
class NestingLimit : public antlr4::tree::ParseTreeListener {
public:
  NestingLimit(antlr4::Parser &parser, std::shared_ptr<const std::string> file)
      : parser_(parser), file_(std::move(file)) {}

  void enterEveryRule(antlr4::ParserRuleContext *ctx) override {
    if (ctx->getRuleIndex() == TgParser::RuleExpr && ++depth_ > kMaxNesting)
      throw tooDeeplyNested(tokenLoc(parser_.getCurrentToken(), file_));
  }
  void exitEveryRule(antlr4::ParserRuleContext *ctx) override {
    if (ctx->getRuleIndex() == TgParser::RuleExpr) --depth_;
  }
  void visitTerminal(antlr4::tree::TerminalNode *) override {}
  void visitErrorNode(antlr4::tree::ErrorNode *) override {}

private:
  antlr4::Parser &parser_;
  std::shared_ptr<const std::string> file_;
  int depth_ = 0;
};

} // namespace

ir::UserError tooDeeplyNested(SourceLoc loc) {
  return ir::UserError("expression too deeply nested or too long", std::move(loc));
}

void reportSyntaxErrors(Lexer lexer, CodePointStream &input, std::shared_ptr<const std::string> file,
                        DiagnosticEngine &diags) {
  unsigned errorsBefore = diags.errorCount();
  size_t firstLine = lexer.line();
  AntlrTokenSource source(lexer, input);
  antlr4::CommonTokenStream tokens(&source);
  TgParser parser(&tokens);
  DiagnosticListener listener(file, diags);
  NestingLimit nestingLimit(parser, file);
  parser.addParseListener(&nestingLimit);
  // Line by line, as frontend/Parser.cpp parses: each line in ANTLR's SLL mode first, which is fast and gets
  // every valid line of this grammar right; a line it stops on is parsed again in full LL mode with error
  // recovery, which reports what is wrong.
  auto *prediction = parser.getInterpreter<antlr4::atn::ParserATNSimulator>();
  auto bail = std::make_shared<antlr4::BailErrorStrategy>();
  auto readable = std::make_shared<ReadableErrorStrategy>();
  auto fastMode = [&] {
    prediction->setPredictionMode(antlr4::atn::PredictionMode::SLL);
    parser.setErrorHandler(bail);
    parser.removeErrorListeners();
  };
  fastMode();
  bool firstLineParsed = false;
  while (tokens.LA(1) != antlr4::Token::EOF) {
    size_t before = tokens.index();
    try {
      parser.line();
    } catch (const antlr4::ParseCancellationException &) {
      tokens.seek(before);
      prediction->setPredictionMode(antlr4::atn::PredictionMode::LL);
      parser.setErrorHandler(readable);
      parser.addErrorListener(&listener);
      parser.line();
      fastMode();
    }
    TG_ASSERT(tokens.index() > before || tokens.LA(1) == antlr4::Token::EOF) << "the parser made no progress";
    parser.getTreeTracker().reset();
    if (!firstLineParsed) {
      firstLineParsed = true;
      TG_ASSERT(diags.errorCount() > errorsBefore)
          << "frontend/Parser.cpp rejected line " << firstLine << ", which the grammar accepts";
    }
  }
}

} // namespace tg::frontend
