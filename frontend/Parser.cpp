// The parser: a .tg file to the AST of frontend/Ast.h, by recursive descent over the lexer's tokens
// (frontend/Lexer.h), rule for rule as grammar/Tg.g4 states the language. It reports what the grammar cannot
// check: literals out of range, unknown placements, positional arguments after keyword arguments, a def's
// body without its return. At the first line it cannot parse it stops, and ANTLR's parser of the grammar
// reports the syntax errors from there on (frontend/SyntaxErrors.h). tests/unit/ParserTest.cpp checks that
// the two accept the same lines and that their trees agree, on every script of the repository and on random
// ones. (ANTLR's parse, with a heap object per token and per rule, took half the time from a 10,000-line
// script to its optimized graph.)
#include "frontend/Parser.h"

#include "TgLexer.h"
#include "frontend/Lexer.h"
#include "frontend/SyntaxErrors.h"
#include "ir/Assert.h"

#include <array>
#include <charconv>
#include <optional>

namespace tg::frontend {
namespace {

using grammar::TgLexer;

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

/// Code points as UTF-8.
std::string utf8(std::u32string_view points) {
  std::string text;
  text.reserve(points.size());
  for (char32_t c : points) {
    if (c < 0x80) {
      text += static_cast<char>(c);
    } else if (c < 0x800) {
      text += {static_cast<char>(0xC0 | c >> 6), static_cast<char>(0x80 | (c & 0x3F))};
    } else if (c < 0x10000) {
      text += {static_cast<char>(0xE0 | c >> 12), static_cast<char>(0x80 | (c >> 6 & 0x3F)),
               static_cast<char>(0x80 | (c & 0x3F))};
    } else {
      text += {static_cast<char>(0xF0 | c >> 18), static_cast<char>(0x80 | (c >> 12 & 0x3F)),
               static_cast<char>(0x80 | (c >> 6 & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
    }
  }
  return text;
}

/// How tightly the alternatives of Tg.g4's expr bind, numbered as ANTLR numbers them: the later in the rule,
/// the looser. An expression's operator loop goes on with an operator that binds at least as tightly as its
/// caller asked. A prefix operator's operand binds at the operator's own strength, so does the right operand
/// of '**' (right-associative), and that of a left-associative operator one stronger. Subscripts bind
/// tightest of all.
enum Binding : int { kOr = 1, kAnd, kNot, kCompare, kAdd, kMultiply, kPin, kSign, kPower };

/// The types of the tokens the grammar writes as literals ('=', '**'), and the binding of each binary
/// operator by its token type (0 for a token that is none).
struct LiteralTypes {
  size_t assign = literalType("="), colon = literalType(":"), comma = literalType(","),
         dot = literalType("."), openBrace = literalType("{"), closeBrace = literalType("}"),
         at = literalType("@"), minus = literalType("-"), plus = literalType("+");
  std::array<int, 64> binding{};

  LiteralTypes() {
    const std::pair<const char *, Binding> operators[] = {
        {"**", kPower},   {"*", kMultiply}, {"/", kMultiply}, {"%", kMultiply}, {"@", kMultiply},
        {"+", kAdd},      {"-", kAdd},      {"<", kCompare},  {"<=", kCompare}, {">", kCompare},
        {">=", kCompare}, {"==", kCompare}, {"!=", kCompare}, {"and", kAnd},    {"or", kOr}};
    for (const auto &[text, strength] : operators) {
      size_t type = literalType(text);
      TG_ASSERT(type > 0 && type < binding.size()) << "Tg.g4 has no operator '" << text << "'";
      binding[type] = strength;
    }
  }
};

const LiteralTypes &literalTypes() {
  static const LiteralTypes table;
  return table;
}

/// A line the parser cannot parse: ANTLR's parser reports what is wrong with it.
struct SyntaxError {};

class Parser {
public:
  Parser(std::u32string_view text, std::shared_ptr<const std::string> file, DiagnosticEngine &diags)
      : text_(text), lexer_(text), beforeCurrent_(text), file_(std::move(file)), diags_(diags),
        literals_(literalTypes()) {
    current_ = lexer_.next();
  }

  /// Adds the statements of the file's lines to `module`, up to the first line with a syntax error, and
  /// returns the lexer at that line's start; nothing when every line parses.
  std::optional<Lexer> parse(Module &module) {
    while (current_.type != antlr4::Token::EOF) {
      Lexer lineStart = beforeCurrent_;
      try {
        line(module);
      } catch (const SyntaxError &) {
        return lineStart;
      }
    }
    return std::nullopt;
  }

private:
  // Tokens.

  bool at(size_t type) const { return current_.type == type; }
  Token take() {
    Token token = current_;
    beforeCurrent_ = lexer_;
    current_ = lexer_.next();
    lastEnd_ = token.end;
    return token;
  }
  bool accept(size_t type) {
    if (!at(type)) return false;
    take();
    return true;
  }
  Token expect(size_t type) {
    if (!at(type)) throw SyntaxError();
    return take();
  }
  /// The token after the current one.
  Token lookahead() const {
    Lexer ahead = lexer_;
    return ahead.next();
  }
  std::string text(const Token &token) const {
    return utf8(text_.substr(token.start, token.end - token.start));
  }
  SourceLoc loc(const Token &token) const {
    return {file_, static_cast<int>(token.line), static_cast<int>(token.column) + 1};
  }
  template <typename Node>
  std::unique_ptr<Node> make(const Token &token) const {
    auto node = std::make_unique<Node>();
    node->loc = loc(token);
    return node;
  }
  /// An error the grammar does not see, reported once its line has parsed: a line with a syntax error reports
  /// that alone.
  void lineError(SourceLoc loc, std::string message) { lineErrors_.emplace_back(std::move(message), loc); }

  // Statements.

  /// line : statement? (NEWLINE | EOF)
  void line(Module &module) {
    StmtPtr stmt;
    switch (current_.type) {
    case TgLexer::IMPORT: {
      auto import = make<ImportStmt>(take());
      import->module = identifier();
      stmt = std::move(import);
      break;
    }
    case TgLexer::DEF:
      stmt = def();
      break;
    case TgLexer::INPUT: {
      auto input = make<InputStmt>(take());
      input->name = identifier();
      expect(literals_.colon);
      input->type = type();
      stmt = std::move(input);
      break;
    }
    case TgLexer::PARAM: {
      auto param = make<ParamStmt>(take());
      param->name = identifier();
      expect(literals_.colon);
      param->type = type();
      expect(literals_.assign);
      param->init = expr();
      stmt = std::move(param);
      break;
    }
    case TgLexer::LET:
      stmt = let();
      break;
    case TgLexer::OUTPUT: {
      auto output = make<OutputStmt>(take());
      do { // an output is named by its source text: a name's is the name
        Token first = current_;
        output->values.push_back(expr());
        output->names.push_back({utf8(text_.substr(first.start, lastEnd_ - first.start)), loc(first)});
      } while (accept(literals_.comma));
      stmt = std::move(output);
      break;
    }
    case TgLexer::UPDATE: {
      auto update = make<UpdateStmt>(take());
      update->name = identifier();
      expect(literals_.assign);
      update->value = expr();
      stmt = std::move(update);
      break;
    }
    case TgLexer::NEWLINE:
    case antlr4::Token::EOF:
      break;
    default:
      throw SyntaxError();
    }
    if (!accept(TgLexer::NEWLINE) && !at(antlr4::Token::EOF)) throw SyntaxError();
    for (const ir::UserError &error : lineErrors_)
      diags_.report(error);
    lineErrors_.clear();
    if (stmt) module.statements.push_back(std::move(stmt));
  }

  /// defStmt : DEF NAME LPAREN nameList? RPAREN ('=' expr | defBlock)
  /// defBlock : '{' NEWLINE (bodyStmt? NEWLINE)* '}'    bodyStmt : letStmt | RETURN expr
  std::unique_ptr<DefStmt> def() {
    auto stmt = make<DefStmt>(take());
    stmt->name = identifier();
    expect(TgLexer::LPAREN);
    if (at(TgLexer::NAME)) stmt->params = nameList();
    expect(TgLexer::RPAREN);
    if (accept(literals_.assign)) {
      stmt->result = expr();
      return stmt;
    }
    expect(literals_.openBrace);
    expect(TgLexer::NEWLINE);
    bool extraReported = false;
    while (!at(literals_.closeBrace)) {
      if (at(TgLexer::LET) || at(TgLexer::RETURN)) {
        if (stmt->result && !extraReported) {
          lineError(loc(current_), "statement after the return of '" + stmt->name.name + "'");
          extraReported = true;
        }
        if (at(TgLexer::LET)) {
          std::unique_ptr<LetStmt> body = let();
          if (!stmt->result) stmt->body.push_back(std::move(body));
        } else {
          take();
          ExprPtr result = expr();
          if (!stmt->result) stmt->result = std::move(result);
        }
      }
      expect(TgLexer::NEWLINE);
    }
    Token close = take();
    if (!stmt->result)
      lineError(loc(close), "the body of '" + stmt->name.name + "' must end with 'return EXPR'");
    return stmt;
  }

  /// letStmt : LET nameList '=' expr
  std::unique_ptr<LetStmt> let() {
    auto stmt = make<LetStmt>(take());
    stmt->names = nameList();
    expect(literals_.assign);
    stmt->value = expr();
    return stmt;
  }

  Identifier identifier() {
    Token name = expect(TgLexer::NAME);
    return {text(name), loc(name)};
  }

  /// nameList : NAME (',' NAME)*
  std::vector<Identifier> nameList() {
    std::vector<Identifier> names;
    do
      names.push_back(identifier());
    while (accept(literals_.comma));
    return names;
  }

  /// type : dtype=NAME (LBRACK dim (',' dim)* RBRACK)?    dim : INT | NAME
  TypeExpr type() {
    Token dtype = expect(TgLexer::NAME);
    TypeExpr result{loc(dtype), text(dtype), {}};
    if (!accept(TgLexer::LBRACK)) return result;
    do {
      DimExpr dim;
      dim.loc = loc(current_);
      if (at(TgLexer::NAME)) {
        dim.isSymbol = true;
        dim.symbol = text(take());
      } else {
        dim.size = integer(expect(TgLexer::INT)).value_or(0);
      }
      result.dims.push_back(std::move(dim));
    } while (accept(literals_.comma));
    expect(TgLexer::RBRACK);
    return result;
  }

  // Expressions.

  /// One more level of nesting, given back when the expression that took it returns.
  void deeper() {
    if (++depth_ > kMaxNesting) throw tooDeeplyNested(loc(current_));
  }

  /// expr, binding at least as tightly as `binding`: a prefix operator or a primary, then operators and
  /// subscripts in a loop (ANTLR's form of a left-recursive rule).
  ExprPtr expr(int binding = 0) {
    int depth = depth_;
    deeper();
    ExprPtr result = prefixOrPrimary();
    for (;;) {
      if (at(TgLexer::LBRACK)) {
        deeper();
        result = index(std::move(result));
        continue;
      }
      int strength = current_.type < literals_.binding.size() ? literals_.binding[current_.type] : 0;
      if (strength == 0 || strength < binding) break;
      deeper();
      Token op = take();
      auto node = make<BinaryExpr>(op);
      node->op = text(op);
      node->lhs = std::move(result);
      node->rhs = expr(strength == kPower ? kPower : strength + 1);
      result = std::move(node);
    }
    depth_ = depth;
    return result;
  }

  ExprPtr prefixOrPrimary() {
    if (at(literals_.minus) || at(literals_.plus) || at(TgLexer::NOT)) {
      Token op = take();
      auto node = make<UnaryExpr>(op);
      node->op = text(op);
      node->operand = expr(op.type == TgLexer::NOT ? kNot : kSign);
      return node;
    }
    if (at(literals_.at)) {
      auto node = make<PinnedExpr>(take());
      Token place = expect(TgLexer::NAME);
      node->place = text(place);
      if (node->place != "host" && node->place != "device")
        lineError(loc(place), "unknown placement '@" + node->place + "'; expected '@host' or '@device'");
      node->operand = expr(kPin);
      return node;
    }
    return primary();
  }

  /// Whether the current token can start an expression.
  bool atExpr() const {
    switch (current_.type) {
    case TgLexer::NOT:
    case TgLexer::NAME:
    case TgLexer::INT:
    case TgLexer::FLOAT:
    case TgLexer::TRUE:
    case TgLexer::FALSE:
    case TgLexer::STRING:
    case TgLexer::LBRACK:
    case TgLexer::LPAREN:
      return true;
    default:
      return at(literals_.minus) || at(literals_.plus) || at(literals_.at);
    }
  }

  /// Elements separated by commas up to `close`, with a comma after the last allowed: `(a, b,)`.
  template <typename Element>
  void commaList(size_t close, Element element) {
    if (!at(close)) {
      do
        element();
      while (accept(literals_.comma) && !at(close));
    }
    expect(close);
  }

  ExprPtr primary() {
    switch (current_.type) {
    case TgLexer::NAME: {
      ExprPtr name = qualifiedName();
      return at(TgLexer::LPAREN) ? call(std::move(name)) : std::move(name);
    }
    case TgLexer::INT:
      return number(take(), false);
    case TgLexer::FLOAT:
      return number(take(), true);
    case TgLexer::TRUE:
    case TgLexer::FALSE: {
      Token value = take();
      auto node = make<BoolExpr>(value);
      node->value = value.type == TgLexer::TRUE;
      return node;
    }
    case TgLexer::STRING:
      return stringLiteral(take());
    case TgLexer::LBRACK: {
      auto node = make<ListExpr>(take());
      commaList(TgLexer::RBRACK, [&] { node->elements.push_back(expr()); });
      return node;
    }
    case TgLexer::LPAREN: {
      take();
      ExprPtr inner = expr();
      expect(TgLexer::RPAREN);
      return inner;
    }
    default:
      throw SyntaxError();
    }
  }

  /// qualifiedName : NAME ('.' NAME)?, as a NameExpr or a MemberExpr.
  ExprPtr qualifiedName() {
    Token first = take();
    if (!accept(literals_.dot)) {
      auto node = make<NameExpr>(first);
      node->name = text(first);
      return node;
    }
    auto node = make<MemberExpr>(first);
    node->module = text(first);
    node->name = text(expect(TgLexer::NAME));
    return node;
  }

  /// LPAREN (argument (',' argument)* ','?)? RPAREN    argument : (keyword=NAME '=')? expr
  ExprPtr call(ExprPtr callee) {
    auto node = std::make_unique<CallExpr>();
    node->loc = callee->loc;
    node->callee = std::move(callee);
    take();
    commaList(TgLexer::RPAREN, [&] {
      if (at(TgLexer::NAME) && lookahead().type == literals_.assign) {
        Token keyword = take();
        take();
        node->keywords.push_back({text(keyword), loc(keyword), expr()});
        return;
      }
      if (!node->keywords.empty()) lineError(loc(current_), "positional argument after keyword argument");
      node->args.push_back(expr());
    });
    return node;
  }

  /// `base[subscript, ...]`    subscript : expr slice? | slice    slice : ':' upper=expr? (':' step=expr?)?
  ExprPtr index(ExprPtr base) {
    auto node = make<IndexExpr>(take());
    node->base = std::move(base);
    do {
      Subscript subscript;
      subscript.loc = loc(current_);
      ExprPtr start = at(literals_.colon) ? nullptr : expr();
      if (accept(literals_.colon)) {
        subscript.isRange = true;
        subscript.start = std::move(start);
        subscript.stop = atExpr() ? expr() : nullptr;
        if (accept(literals_.colon)) subscript.step = atExpr() ? expr() : nullptr;
      } else {
        subscript.index = std::move(start);
      }
      node->subscripts.push_back(std::move(subscript));
    } while (accept(literals_.comma));
    expect(TgLexer::RBRACK);
    return node;
  }

  ExprPtr number(const Token &token, bool isFloat) {
    auto node = make<NumberExpr>(token);
    node->text = text(token);
    node->isFloat = isFloat;
    if (!isFloat) {
      node->intValue = integer(token).value_or(0);
      node->value = static_cast<double>(node->intValue);
      return node;
    }
    const std::string &digits = node->text;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), node->value).ec != std::errc())
      lineError(loc(token), "floating-point literal out of range");
    return node;
  }

  /// A STRING token's text between the quotes, with its escapes resolved.
  ExprPtr stringLiteral(const Token &token) {
    auto node = make<StringExpr>(token);
    std::string quoted = text(token);
    for (size_t i = 1; i + 1 < quoted.size(); ++i) {
      if (quoted[i] != '\\') {
        node->value += quoted[i];
        continue;
      }
      char escaped = quoted[++i];
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
        lineError(loc(token), "unknown escape sequence in string (known: \\\" \\\\ \\n \\t)");
      }
    }
    return node;
  }

  /// The value of an INT token, or nothing (and an error) when it does not fit in 64 bits.
  std::optional<int64_t> integer(const Token &token) {
    std::string digits = text(token);
    int64_t value = 0;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), value).ec == std::errc()) return value;
    lineError(loc(token), "integer literal out of range");
    return std::nullopt;
  }

  std::u32string_view text_;
  Lexer lexer_;
  Lexer beforeCurrent_; // the lexer as it was before it made current_
  Token current_;
  size_t lastEnd_ = 0; // where the last token taken ends
  std::shared_ptr<const std::string> file_;
  DiagnosticEngine &diags_;
  const LiteralTypes &literals_;
  std::vector<ir::UserError> lineErrors_;
  int depth_ = 0;
};

} // namespace

std::unique_ptr<Module> parseModule(std::string text, std::shared_ptr<const std::string> file,
                                    DiagnosticEngine &diags) {
  const std::string &source = diags.addSource(*file, std::move(text)); // one copy of a large file, not two
  unsigned errorsBefore = diags.errorCount();
  if (std::optional<size_t> offset = findInvalidUtf8(source)) {
    diags.error(ir::locationOfOffset(source, *offset, file),
                "invalid UTF-8 byte 0x" + hexDigits(source[*offset]));
    return nullptr;
  }
  try {
    CodePointStream input(decodeWithoutComments(source));
    auto module = std::make_unique<Module>();
    module->file = file;
    if (std::optional<Lexer> failed = Parser(input.codePoints(), file, diags).parse(*module))
      reportSyntaxErrors(*failed, input, file, diags);
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
