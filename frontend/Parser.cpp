// Runs the lexer (frontend/Lexer.h) and the ANTLR-generated parser of grammar/Tg.g4 over a .tg file, rewrites
// ANTLR's syntax errors into short diagnostics that name the offending token, and builds the AST from an
// error-free parse tree.
#include "frontend/Parser.h"

#include "TgParser.h"
#include "frontend/Lexer.h"
#include "ir/Assert.h"

#include <charconv>
#include <cstdio>
#include <optional>

namespace tg::frontend {
namespace {

using grammar::TgParser;

/// The offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF), or nothing when the whole text is valid.
std::optional<size_t> findInvalidUtf8(const std::string &text) {
  for (size_t i = 0; i < text.size();) {
    unsigned char lead = text[i];
    size_t length = lead < 0x80   ? 1
                    : lead < 0xC2 ? 0
                    : lead < 0xE0 ? 2
                    : lead < 0xF0 ? 3
                    : lead < 0xF5 ? 4
                                  : 0;
    if (length == 0 || i + length > text.size()) return i;
    // The second byte's range is narrower after some lead bytes; later ones are plain continuation bytes.
    unsigned char low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
    unsigned char high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
    for (size_t k = 1; k < length; ++k) {
      unsigned char c = text[i + k];
      if (c < (k == 1 ? low : 0x80) || c > (k == 1 ? high : 0xBF)) return i;
    }
    i += length;
  }
  return std::nullopt;
}

/// Valid UTF-8 text as code points, without the text of comments: a comment runs to the end of its line, so
/// leaving it out moves no token, and the lexer would skip it anyway. Strings (which may hold a '#') are
/// followed as the grammar reads them: they end at a '"' not escaped by '\\', or at the end of the line.
std::u32string decodeWithoutComments(const std::string &text) {
  std::u32string decoded;
  for (int pass = 0; pass < 2; ++pass) { // count, then decode into storage of exactly that size
    size_t count = 0;
    bool inString = false, escaped = false;
    for (size_t i = 0; i < text.size();) {
      auto lead = static_cast<unsigned char>(text[i]);
      size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
      char32_t point = length == 1 ? lead : lead & (0x7F >> length);
      for (size_t k = 1; k < length; ++k)
        point = (point << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
      if (pass) decoded[count] = point;
      ++count;
      i += length;
      if (point == U'\r' || point == U'\n') {
        inString = escaped = false;
      } else if (inString) {
        inString = escaped || point != U'"';
        escaped = !escaped && point == U'\\';
      } else if (point == U'"') {
        inString = true;
      } else if (point == U'#') { // keep the '#' (a COMMENT token), drop the rest of the line
        i = std::min(text.find_first_of("\r\n", i), text.size());
      }
    }
    if (!pass) decoded.resize(count);
  }
  return decoded;
}

/// ANTLR's input stream over decodeWithoutComments(text). ANTLR's own UTF-8 decoder reserves 20 bytes per
/// input byte: a 50 MB script took more than 1 GB before the lexer started.
class SourceStream : public antlr4::ANTLRInputStream {
public:
  explicit SourceStream(const std::string &text) { _data = decodeWithoutComments(text); }
  std::u32string_view codePoints() const { return _data; }
};

/// "FF" for the byte 0xff.
std::string hexDigits(unsigned char byte) {
  char buffer[4];
  std::snprintf(buffer, sizeof buffer, "%02X", byte);
  return buffer;
}

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

/// How deep rules may nest in the parser, and expressions in the AST: both the parser and every later pass
/// over the AST recurse once per level, and must not run out of stack.
constexpr int kMaxNesting = 1000;

ir::UserError tooDeeplyNested(SourceLoc loc) {
  return ir::UserError("expression too deeply nested or too long", std::move(loc));
}

/// Stops the parse when rules nest too deeply (deep parentheses, long chains of prefix operators).
class NestingLimit : public antlr4::tree::ParseTreeListener {
public:
  NestingLimit(antlr4::Parser &parser, std::shared_ptr<const std::string> file)
      : parser_(parser), file_(std::move(file)) {}

  void enterEveryRule(antlr4::ParserRuleContext *) override {
    if (++depth_ > kMaxNesting) throw tooDeeplyNested(tokenLoc(parser_.getCurrentToken(), file_));
  }
  void exitEveryRule(antlr4::ParserRuleContext *) override { --depth_; }
  void visitTerminal(antlr4::tree::TerminalNode *) override {}
  void visitErrorNode(antlr4::tree::ErrorNode *) override {}

private:
  antlr4::Parser &parser_;
  std::shared_ptr<const std::string> file_;
  int depth_ = 0;
};

/// Builds the AST from a parse tree without syntax errors. Reports what the grammar cannot check: literals
/// out of range, unknown placements, positional arguments after keyword arguments.
class AstBuilder {
public:
  AstBuilder(std::shared_ptr<const std::string> file, DiagnosticEngine &diags)
      : file_(std::move(file)), diags_(diags) {}

  /// Adds a line's statement, if it has one, to `module`.
  void addLine(Module &module, TgParser::LineContext *line) {
    if (TgParser::StatementContext *statementCtx = line->statement())
      module.statements.push_back(statement(statementCtx));
  }

private:
  SourceLoc loc(const antlr4::Token *token) const { return tokenLoc(token, file_); }

  template <typename Node>
  std::unique_ptr<Node> make(const antlr4::Token *token) const {
    auto node = std::make_unique<Node>();
    node->loc = loc(token);
    return node;
  }

  Identifier identifier(antlr4::tree::TerminalNode *name) const {
    return {name->getText(), loc(name->getSymbol())};
  }

  std::vector<Identifier> names(TgParser::NameListContext *ctx) const {
    std::vector<Identifier> result;
    if (ctx)
      for (antlr4::tree::TerminalNode *name : ctx->NAME())
        result.push_back(identifier(name));
    return result;
  }

  StmtPtr statement(TgParser::StatementContext *ctx) {
    // The statement's one child, found by its rule (the generated accessors would try each kind in turn).
    auto *child = static_cast<antlr4::ParserRuleContext *>(ctx->children.at(0));
    switch (child->getRuleIndex()) {
    case TgParser::RuleImportStmt: {
      auto *importCtx = static_cast<TgParser::ImportStmtContext *>(child);
      auto stmt = make<ImportStmt>(importCtx->getStart());
      stmt->module = identifier(importCtx->NAME());
      return stmt;
    }
    case TgParser::RuleDefStmt:
      return def(static_cast<TgParser::DefStmtContext *>(child));
    case TgParser::RuleInputStmt: {
      auto *inputCtx = static_cast<TgParser::InputStmtContext *>(child);
      auto stmt = make<InputStmt>(inputCtx->getStart());
      stmt->name = identifier(inputCtx->NAME());
      stmt->type = type(inputCtx->type());
      return stmt;
    }
    case TgParser::RuleParamStmt: {
      auto *paramCtx = static_cast<TgParser::ParamStmtContext *>(child);
      auto stmt = make<ParamStmt>(paramCtx->getStart());
      stmt->name = identifier(paramCtx->NAME());
      stmt->type = type(paramCtx->type());
      stmt->init = expr(paramCtx->expr());
      return stmt;
    }
    case TgParser::RuleLetStmt:
      return let(static_cast<TgParser::LetStmtContext *>(child));
    case TgParser::RuleOutputStmt: {
      auto *outputCtx = static_cast<TgParser::OutputStmtContext *>(child);
      auto stmt = make<OutputStmt>(outputCtx->getStart());
      for (TgParser::ExprContext *value : outputCtx->expr()) {
        stmt->values.push_back(expr(value));
        antlr4::misc::Interval span(value->getStart()->getStartIndex(), value->getStop()->getStopIndex());
        stmt->names.push_back({value->getStart()->getInputStream()->getText(span), loc(value->getStart())});
      }
      return stmt;
    }
    case TgParser::RuleUpdateStmt: {
      auto *updateCtx = static_cast<TgParser::UpdateStmtContext *>(child);
      auto stmt = make<UpdateStmt>(updateCtx->getStart());
      stmt->name = identifier(updateCtx->NAME());
      stmt->value = expr(updateCtx->expr());
      return stmt;
    }
    default:
      TG_ASSERT(false) << "a statement the AST builder does not know: " << ctx->getText();
      return nullptr;
    }
  }

  std::unique_ptr<LetStmt> let(TgParser::LetStmtContext *ctx) {
    auto stmt = make<LetStmt>(ctx->getStart());
    stmt->names = names(ctx->nameList());
    stmt->value = expr(ctx->expr());
    return stmt;
  }

  std::unique_ptr<DefStmt> def(TgParser::DefStmtContext *ctx) {
    auto stmt = make<DefStmt>(ctx->getStart());
    stmt->name = identifier(ctx->NAME());
    stmt->params = names(ctx->nameList());
    TgParser::DefBlockContext *block = ctx->defBlock();
    if (!block) {
      stmt->result = expr(ctx->expr());
      return stmt;
    }
    for (TgParser::BodyStmtContext *bodyCtx : block->bodyStmt()) {
      if (stmt->result) {
        diags_.error(loc(bodyCtx->getStart()), "statement after the return of '" + stmt->name.name + "'");
        break;
      }
      if (TgParser::LetStmtContext *letCtx = bodyCtx->letStmt())
        stmt->body.push_back(let(letCtx));
      else
        stmt->result = expr(bodyCtx->expr());
    }
    if (!stmt->result)
      diags_.error(loc(block->getStop()),
                   "the body of '" + stmt->name.name + "' must end with 'return EXPR'");
    return stmt;
  }

  TypeExpr type(TgParser::TypeContext *ctx) {
    TypeExpr result{loc(ctx->dtype), ctx->dtype->getText(), {}};
    for (TgParser::DimContext *dimCtx : ctx->dim()) {
      DimExpr dim;
      dim.loc = loc(dimCtx->getStart());
      if (dimCtx->NAME()) {
        dim.isSymbol = true;
        dim.symbol = dimCtx->NAME()->getText();
      } else {
        dim.size = integer(dimCtx->INT()->getSymbol()).value_or(0);
      }
      result.dims.push_back(std::move(dim));
    }
    return result;
  }

  /// Left-associative chains (`a + b + ... + z`) nest the AST without nesting the parse: limit them here.
  ExprPtr expr(TgParser::ExprContext *ctx) {
    if (++exprDepth_ > kMaxNesting) throw tooDeeplyNested(loc(ctx->getStart()));
    ExprPtr result = buildExpr(ctx);
    --exprDepth_;
    return result;
  }

  ExprPtr buildExpr(TgParser::ExprContext *ctx) {
    if (auto *primaryCtx = dynamic_cast<TgParser::PrimaryExprContext *>(ctx))
      return primary(primaryCtx->primary());
    if (auto *binaryCtx = dynamic_cast<TgParser::BinaryExprContext *>(ctx)) {
      auto node = make<BinaryExpr>(binaryCtx->op);
      node->op = binaryCtx->op->getText();
      node->lhs = expr(binaryCtx->expr(0));
      node->rhs = expr(binaryCtx->expr(1));
      return node;
    }
    if (auto *unaryCtx = dynamic_cast<TgParser::UnaryExprContext *>(ctx)) {
      auto node = make<UnaryExpr>(unaryCtx->op);
      node->op = unaryCtx->op->getText();
      node->operand = expr(unaryCtx->expr());
      return node;
    }
    if (auto *pinnedCtx = dynamic_cast<TgParser::PinnedExprContext *>(ctx)) {
      auto node = make<PinnedExpr>(pinnedCtx->getStart());
      node->place = pinnedCtx->place->getText();
      if (node->place != "host" && node->place != "device")
        diags_.error(loc(pinnedCtx->place),
                     "unknown placement '@" + node->place + "'; expected '@host' or '@device'");
      node->operand = expr(pinnedCtx->expr());
      return node;
    }
    auto *indexCtx = dynamic_cast<TgParser::IndexExprContext *>(ctx);
    TG_ASSERT(indexCtx) << "an expression the AST builder does not know: " << ctx->getText();
    auto node = make<IndexExpr>(indexCtx->LBRACK()->getSymbol());
    node->base = expr(indexCtx->expr());
    for (TgParser::SubscriptContext *subscriptCtx : indexCtx->subscript())
      node->subscripts.push_back(subscript(subscriptCtx));
    return node;
  }

  ExprPtr optionalExpr(TgParser::ExprContext *ctx) { return ctx ? expr(ctx) : nullptr; }

  Subscript subscript(TgParser::SubscriptContext *ctx) {
    Subscript result;
    result.loc = loc(ctx->getStart());
    TgParser::SliceContext *slice = ctx->slice();
    if (!slice) {
      result.index = expr(ctx->expr());
      return result;
    }
    result.isRange = true;
    result.start = optionalExpr(ctx->expr());
    result.stop = optionalExpr(slice->upper);
    result.step = optionalExpr(slice->step);
    return result;
  }

  ExprPtr primary(TgParser::PrimaryContext *ctx) {
    if (auto *callCtx = dynamic_cast<TgParser::CallExprContext *>(ctx)) {
      auto node = make<CallExpr>(callCtx->getStart());
      node->callee = name(callCtx->qualifiedName());
      for (TgParser::ArgumentContext *argument : callCtx->argument()) {
        if (argument->keyword) {
          node->keywords.push_back(
              {argument->keyword->getText(), loc(argument->keyword), expr(argument->expr())});
          continue;
        }
        if (!node->keywords.empty())
          diags_.error(loc(argument->getStart()), "positional argument after keyword argument");
        node->args.push_back(expr(argument->expr()));
      }
      return node;
    }
    if (auto *nameCtx = dynamic_cast<TgParser::NameExprContext *>(ctx)) return name(nameCtx->qualifiedName());
    if (auto *intCtx = dynamic_cast<TgParser::IntExprContext *>(ctx))
      return number(intCtx->INT()->getSymbol(), false);
    if (auto *floatCtx = dynamic_cast<TgParser::FloatExprContext *>(ctx))
      return number(floatCtx->FLOAT()->getSymbol(), true);
    if (auto *boolCtx = dynamic_cast<TgParser::BoolExprContext *>(ctx)) {
      auto node = make<BoolExpr>(boolCtx->value);
      node->value = boolCtx->value->getType() == TgParser::TRUE;
      return node;
    }
    if (auto *stringCtx = dynamic_cast<TgParser::StringExprContext *>(ctx))
      return stringLiteral(stringCtx->STRING()->getSymbol());
    if (auto *listCtx = dynamic_cast<TgParser::ListExprContext *>(ctx)) {
      auto node = make<ListExpr>(listCtx->getStart());
      for (TgParser::ExprContext *element : listCtx->expr())
        node->elements.push_back(expr(element));
      return node;
    }
    auto *parenCtx = dynamic_cast<TgParser::ParenExprContext *>(ctx);
    TG_ASSERT(parenCtx) << "a primary expression the AST builder does not know: " << ctx->getText();
    return expr(parenCtx->expr());
  }

  /// `name` as a NameExpr, `module.name` as a MemberExpr.
  ExprPtr name(TgParser::QualifiedNameContext *ctx) {
    std::vector<antlr4::tree::TerminalNode *> parts = ctx->NAME();
    if (parts.size() == 1) {
      auto node = make<NameExpr>(parts[0]->getSymbol());
      node->name = parts[0]->getText();
      return node;
    }
    auto node = make<MemberExpr>(parts[0]->getSymbol());
    node->module = parts[0]->getText();
    node->name = parts[1]->getText();
    return node;
  }

  ExprPtr number(const antlr4::Token *token, bool isFloat) {
    auto node = make<NumberExpr>(token);
    node->text = token->getText();
    node->isFloat = isFloat;
    if (!isFloat) {
      node->intValue = integer(token).value_or(0);
      node->value = static_cast<double>(node->intValue);
      return node;
    }
    const std::string &text = node->text;
    if (std::from_chars(text.data(), text.data() + text.size(), node->value).ec != std::errc())
      diags_.error(loc(token), "floating-point literal out of range");
    return node;
  }

  /// A STRING token's text between the quotes, with its escapes resolved.
  ExprPtr stringLiteral(const antlr4::Token *token) {
    auto node = make<StringExpr>(token);
    std::string text = token->getText();
    for (size_t i = 1; i + 1 < text.size(); ++i) {
      if (text[i] != '\\') {
        node->value += text[i];
        continue;
      }
      char escaped = text[++i];
      switch (escaped) {
      case '"':
      case '\\':
        node->value += escaped;
        break;
      case 'n':
        node->value += '\n';
        break;
      case 't':
        node->value += '\t';
        break;
      default:
        diags_.error(loc(token), "unknown escape sequence in string (known: \\\" \\\\ \\n \\t)");
      }
    }
    return node;
  }

  /// The value of an INT token, or nothing (and a diagnostic) when it does not fit in 64 bits.
  std::optional<int64_t> integer(const antlr4::Token *token) {
    std::string text = token->getText();
    int64_t value = 0;
    if (std::from_chars(text.data(), text.data() + text.size(), value).ec == std::errc()) return value;
    diags_.error(loc(token), "integer literal out of range");
    return std::nullopt;
  }

  std::shared_ptr<const std::string> file_;
  DiagnosticEngine &diags_;
  int exprDepth_ = 0;
};

} // namespace

std::unique_ptr<Module> parseModule(std::string text, std::shared_ptr<const std::string> file,
                                    DiagnosticEngine &diags) {
  const std::string &source = diags.addSource(*file, std::move(text)); // one copy of a large file, not two
  unsigned errorsBefore = diags.errorCount();
  // ANTLR's input stream throws on invalid UTF-8 without saying where: find the byte first.
  if (std::optional<size_t> offset = findInvalidUtf8(source)) {
    diags.error(ir::locationOfOffset(source, *offset, file),
                "invalid UTF-8 byte 0x" + hexDigits(source[*offset]));
    return nullptr;
  }
  try {
    SourceStream input(source);
    Lexer lexer(input, input.codePoints()); // reports nothing: a character no rule takes is an ERROR_CHAR
    antlr4::CommonTokenStream tokens(&lexer);
    TgParser parser(&tokens);
    DiagnosticListener listener(file, diags);
    NestingLimit nestingLimit(parser, file);
    parser.addParseListener(&nestingLimit);
    // Line by line, each line's parse tree becomes AST and is freed before the next line is parsed. A line
    // is parsed in ANTLR's SLL mode first, which is fast and gets every valid line of this grammar right; a
    // line it stops on is parsed again in full LL mode with error recovery, which reports what is wrong.
    auto *prediction = parser.getInterpreter<antlr4::atn::ParserATNSimulator>();
    auto bail = std::make_shared<antlr4::BailErrorStrategy>();
    auto readable = std::make_shared<ReadableErrorStrategy>();
    auto fastMode = [&] {
      prediction->setPredictionMode(antlr4::atn::PredictionMode::SLL);
      parser.setErrorHandler(bail);
      parser.removeErrorListeners();
    };
    fastMode();
    AstBuilder builder(file, diags);
    auto module = std::make_unique<Module>();
    module->file = file;
    while (tokens.LA(1) != antlr4::Token::EOF) {
      size_t before = tokens.index();
      TgParser::LineContext *line;
      try {
        line = parser.line();
      } catch (const antlr4::ParseCancellationException &) {
        tokens.seek(before);
        prediction->setPredictionMode(antlr4::atn::PredictionMode::LL);
        parser.setErrorHandler(readable);
        parser.addErrorListener(&listener);
        line = parser.line();
        fastMode();
      }
      TG_ASSERT(tokens.index() > before || tokens.LA(1) == antlr4::Token::EOF)
          << "the parser made no progress";
      // After an error, the rest is only parsed, for its syntax errors.
      if (diags.errorCount() == errorsBefore) builder.addLine(*module, line);
      parser.getTreeTracker().reset();
    }
    return diags.errorCount() == errorsBefore ? std::move(module) : nullptr;
  } catch (const ir::UserError &error) {
    diags.report(error);
    return nullptr;
  } catch (const std::exception &error) {
    // A last resort: every known failure is reported above, with its location.
    diags.error({file, 1, 1}, std::string("cannot parse this file: ") + error.what());
    return nullptr;
  }
}

} // namespace tg::frontend
