// The parser: a .tg file to the AST of frontend/Ast.h. ANTLR's lexer and parser, generated from
// grammar/Tg.g4, read the file line by line; frontend/AstBuilder.cpp turns each line's parse tree into AST,
// and the tree and the line's tokens (an unbuffered token stream) are dropped before the next line. A line is
// parsed in ANTLR's SLL mode first, which is fast and gets every valid line of this grammar right; a line it
// stops on is parsed again in full LL mode with error recovery, which reports what is wrong
// (frontend/SyntaxErrors.h).
#include "frontend/Parser.h"

#include "TgLexer.h"
#include "TgParser.h"
#include "frontend/AstBuilder.h"
#include "frontend/SyntaxErrors.h"
#include "ir/Assert.h"

#include <optional>

namespace tg::frontend {
namespace {

using grammar::TgLexer;
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
};

/// Stops the parse when expressions nest deeper than kMaxNesting, each expr rule entered a level: the parser
/// recurses at most three rules a level (expr, primary, argument). A chain of operators is read in a loop,
/// and nests only the AST, where the AST builder limits it.
class NestingLimit : public antlr4::tree::ParseTreeListener {
public:
  NestingLimit(antlr4::Parser &parser, std::shared_ptr<const std::string> file)
      : parser_(parser), file_(std::move(file)) {}

  void enterEveryRule(antlr4::ParserRuleContext *ctx) override {
    if (ctx->getRuleIndex() == TgParser::RuleExpr && ++depth_ > kMaxNesting)
      throw ir::UserError("expression too deeply nested or too long",
                          tokenLoc(parser_.getCurrentToken(), file_));
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
    TgLexer lexer(&input);
    lexer.removeErrorListeners(); // the lexer makes an ERROR_CHAR token of what no rule matches, never an
                                  // error
    antlr4::UnbufferedTokenStream tokens(&lexer);
    TgParser parser(&tokens);
    NestingLimit nestingLimit(parser, file);
    parser.addParseListener(&nestingLimit);
    DiagnosticListener syntaxErrors(file, diags);
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
      ssize_t lineStart = tokens.mark(); // the line's tokens are kept until its AST is built, then freed
      size_t before = tokens.index();
      TgParser::LineContext *line;
      try {
        line = parser.line();
      } catch (const antlr4::ParseCancellationException &) {
        tokens.seek(before);
        prediction->setPredictionMode(antlr4::atn::PredictionMode::LL);
        parser.setErrorHandler(readable);
        parser.addErrorListener(&syntaxErrors);
        line = parser.line();
        fastMode();
      }
      TG_ASSERT(tokens.index() > before || tokens.LA(1) == antlr4::Token::EOF)
          << "the parser made no progress";
      // From the first syntax error on, lines are only parsed, for their syntax errors.
      if (syntaxErrors.errors() == 0) builder.addLine(*module, line);
      parser.getTreeTracker().reset();
      tokens.release(lineStart);
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
