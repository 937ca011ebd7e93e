// How ANTLR's parser of grammar/Tg.g4 reports syntax errors: short messages that name the offending token in
// place of ANTLR's token sets, the first error of each line only, resuming at the next line.
#include "frontend/SyntaxErrors.h"

#include "TgParser.h"

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

/// A param's line that ends after its type: the message shows the statement with an initial value.
std::optional<std::string> missingInitializer(antlr4::Parser *parser, const antlr4::Token *token) {
  auto *param = dynamic_cast<TgParser::ParamStmtContext *>(parser->getContext());
  if (!param || !isLineEnd(token) || !param->NAME() || !param->type() || !param->type()->dtype ||
      param->expr())
    return std::nullopt;
  std::string dims, shape;
  for (TgParser::DimContext *dim : param->type()->dim())
    dims += (dims.empty() ? "" : ", ") + dim->getText();
  std::string dtype = param->type()->dtype->getText();
  std::string type = dtype + (param->type()->LBRACK() ? "[" + dims + "]" : "");
  std::string zeros = "zeros([" + dims + "]" + (dtype == "f32" ? "" : ", dtype=" + dtype) + ")";
  return "a param needs an initial value, e.g. 'param " + param->NAME()->getText() + " : " + type + " = " +
         zeros + "'";
}

void report(antlr4::Parser *parser, antlr4::Token *token, const antlr4::misc::IntervalSet &expected) {
  parser->notifyErrorListeners(token,
                               missingInitializer(parser, token)
                                   .value_or(syntaxErrorMessage(token, expected, parser->getVocabulary())),
                               nullptr);
}

} // namespace

void ReadableErrorStrategy::reportNoViableAlternative(antlr4::Parser *parser,
                                                      const antlr4::NoViableAltException &e) {
  report(parser, e.getOffendingToken(), e.getExpectedTokens());
}

void ReadableErrorStrategy::reportInputMismatch(antlr4::Parser *parser,
                                                const antlr4::InputMismatchException &e) {
  report(parser, e.getOffendingToken(), e.getExpectedTokens());
}

void ReadableErrorStrategy::reportMissingToken(antlr4::Parser *parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  report(parser, parser->getCurrentToken(), getExpectedTokens(parser));
}

void ReadableErrorStrategy::reportUnwantedToken(antlr4::Parser *parser) {
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

antlr4::misc::IntervalSet ReadableErrorStrategy::getErrorRecoverySet(antlr4::Parser *parser) {
  antlr4::misc::IntervalSet set = DefaultErrorStrategy::getErrorRecoverySet(parser);
  set.add(static_cast<ssize_t>(TgParser::NEWLINE));
  return set;
}

void DiagnosticListener::syntaxError(antlr4::Recognizer *, antlr4::Token *, size_t line, size_t column,
                                     const std::string &message, std::exception_ptr) {
  ++errors_;
  if (line == lastErrorLine_) return;
  lastErrorLine_ = line;
  diags_.error({file_, static_cast<int>(line), static_cast<int>(column) + 1}, message);
}

} // namespace tg::frontend
