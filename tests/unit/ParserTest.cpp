// The parser and the AST printer: precedence, every statement and expression form, locations, and the
// diagnostics for malformed scripts.
#include "frontend/Parser.h"

#include "frontend/AstPrinter.h"

#include <gtest/gtest.h>
#include <sstream>

namespace tg::frontend {
namespace {

struct ParseResult {
  std::unique_ptr<Module> module;
  std::string diagnostics;
  unsigned errors = 0;
};

ParseResult parse(const std::string &source) {
  std::ostringstream out;
  DiagnosticEngine diags(out);
  ParseResult result;
  result.module = parseModule(source, std::make_shared<const std::string>("t.tg"), diags);
  result.diagnostics = out.str();
  result.errors = diags.errorCount();
  return result;
}

/// The AST dump of a script that must parse without diagnostics.
std::string dump(const std::string &source) {
  ParseResult result = parse(source);
  EXPECT_EQ(result.diagnostics, "");
  return result.module ? printAst(*result.module) : "(null)";
}

/// The dump of one expression, parsed as `let v = EXPR`.
std::string dumpExpr(const std::string &expr) {
  std::string text = dump("let v = " + expr + "\n");
  const std::string prefix = "(let v ", suffix = ")\n";
  if (text.rfind(prefix, 0) != 0 || text.size() < prefix.size() + suffix.size()) return text;
  return text.substr(prefix.size(), text.size() - prefix.size() - suffix.size());
}

/// The diagnostics of a script that must fail to parse.
std::string errorsOf(const std::string &source) {
  ParseResult result = parse(source);
  EXPECT_EQ(result.module, nullptr) << "a module was built despite errors";
  EXPECT_GT(result.errors, 0u);
  return result.diagnostics;
}

TEST(ParserTest, Precedence) {
  EXPECT_EQ(dumpExpr("-x**2"), "(neg (** x 2))");
  EXPECT_EQ(dumpExpr("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(dumpExpr("a @ b + c"), "(+ (@ a b) c)");
  EXPECT_EQ(dumpExpr("not a and b or c"), "(or (and (not a) b) c)");
  EXPECT_EQ(dumpExpr("not a == b"), "(not (== a b))");
  EXPECT_EQ(dumpExpr("a < b + 1"), "(< a (+ b 1))");
  EXPECT_EQ(dumpExpr("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(dumpExpr("a / b % c"), "(% (/ a b) c)");
  EXPECT_EQ(dumpExpr("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(dumpExpr("+a * -b"), "(* (pos a) (neg b))");
}

TEST(ParserTest, PowerIsRightAssociativeWithUnaryExponent) {
  EXPECT_EQ(dumpExpr("a ** b ** c"), "(** a (** b c))");
  EXPECT_EQ(dumpExpr("2**-1"), "(** 2 (neg 1))");
  EXPECT_EQ(dumpExpr("-a**-b**c"), "(neg (** a (neg (** b c))))");
  EXPECT_EQ(dumpExpr("x[0]**2"), "(** (index x 0) 2)");
}

TEST(ParserTest, CallsWithKeywordsAndMembers) {
  EXPECT_EQ(dumpExpr("sum(x, axis=1)"), "(call sum x (kw axis 1))");
  EXPECT_EQ(dumpExpr("sum(x, axis=[0, 1], keepdims=true)"),
            "(call sum x (kw axis (list 0 1)) (kw keepdims true))");
  EXPECT_EQ(dumpExpr("nn.sigmoid(X @ w + b)"), "(call nn.sigmoid (+ (@ X w) b))");
  EXPECT_EQ(dumpExpr("nn.pi * 2"), "(* nn.pi 2)");
  EXPECT_EQ(dumpExpr("zeros([])"), "(call zeros (list))");
  EXPECT_EQ(dumpExpr("rand()"), "(call rand)");
  EXPECT_EQ(dumpExpr("f(g(x))[1]"), "(index (call f (call g x)) 1)");
}

TEST(ParserTest, SlicingForms) {
  EXPECT_EQ(dumpExpr("x[0, 1:3, :, ::2, -1]"), "(index x 0 (range 1 3) (range _ _) (range _ _ 2) (neg 1))");
  EXPECT_EQ(dumpExpr("x[1:, :n, 1:5:2, 2::]"), "(index x (range 1 _) (range _ n) (range 1 5 2) (range 2 _))");
  EXPECT_EQ(dumpExpr("x[i][j]"), "(index (index x i) j)");
}

TEST(ParserTest, Literals) {
  EXPECT_EQ(dumpExpr("[3, 2.5, 1e-3, .5, 3., true, false]"), "(list 3 2.5 1e-3 .5 3. true false)");
  ParseResult result = parse("let v = 1e-3\nlet w = 42\n");
  ASSERT_NE(result.module, nullptr);
  const auto *small = result.module->statements[0]->as<LetStmt>()->value->as<NumberExpr>();
  ASSERT_NE(small, nullptr);
  EXPECT_TRUE(small->isFloat);
  EXPECT_DOUBLE_EQ(small->value, 1e-3);
  const auto *answer = result.module->statements[1]->as<LetStmt>()->value->as<NumberExpr>();
  ASSERT_NE(answer, nullptr);
  EXPECT_FALSE(answer->isFloat);
  EXPECT_EQ(answer->intValue, 42);
  EXPECT_DOUBLE_EQ(answer->value, 42.0);
}

TEST(ParserTest, Strings) {
  EXPECT_EQ(dumpExpr(R"(load("data/w.npy"))"), R"((call load "data/w.npy"))");
  ParseResult result = parse(R"(let v = load("a\"b\\c\td"))");
  ASSERT_NE(result.module, nullptr);
  const auto *call = result.module->statements[0]->as<LetStmt>()->value->as<CallExpr>();
  ASSERT_NE(call, nullptr);
  const auto *path = call->args[0]->as<StringExpr>();
  ASSERT_NE(path, nullptr);
  EXPECT_EQ(path->value, "a\"b\\c\td");
  EXPECT_EQ(path->loc.str(), "t.tg:1:14");
  EXPECT_NE(errorsOf(R"(let v = load("a\q"))").find("t.tg:1:14: error: unknown escape sequence"),
            std::string::npos);
  EXPECT_NE(errorsOf("let v = load(\"x.npy)\n").find("t.tg:1:14: error: unterminated string"),
            std::string::npos);
}

TEST(ParserTest, Pins) {
  EXPECT_EQ(dumpExpr("@host argsort(p)"), "(@host (call argsort p))");
  EXPECT_EQ(dumpExpr("@device exp(x) + 1"), "(+ (@device (call exp x)) 1)");
  EXPECT_EQ(dumpExpr("X@w"), "(@ X w)");
}

TEST(ParserTest, Statements) {
  const char *source = "import nn\n"
                       "input X : f32[n, 4]\n"
                       "input b : f32\n"
                       "param w : f32[4] = zeros([4])\n"
                       "let gw, gb = grad(loss, w, b)\n"
                       "output loss, gw\n"
                       "update w = w - 0.5 * gw";
  EXPECT_EQ(dump(source), "(import nn)\n"
                          "(input X f32[n, 4])\n"
                          "(input b f32)\n"
                          "(param w f32[4] (call zeros (list 4)))\n"
                          "(let (gw gb) (call grad loss w b))\n"
                          "(output loss gw)\n"
                          "(update w (- w (* 0.5 gw)))\n");
}

TEST(ParserTest, DefBothForms) {
  EXPECT_EQ(dump("def predict(X, w, b) = nn.sigmoid(X @ w + b)\n"),
            "(def predict (X w b) (call nn.sigmoid (+ (@ X w) b)))\n");
  EXPECT_EQ(dump("def one() = 1\n"), "(def one () 1)\n");
  const char *block = "def f(x) {\n"
                      "  let y = x * 2   # doubled\n"
                      "\n"
                      "  let a, b = g(y)\n"
                      "  return a + b\n"
                      "}\n"
                      "let z = f(1)\n";
  EXPECT_EQ(dump(block), "(def f (x)\n"
                         "  (let y (* x 2))\n"
                         "  (let (a b) (call g y))\n"
                         "  (+ a b))\n"
                         "(let z (call f 1))\n");
  EXPECT_EQ(dump("def g(x) {\n  return x\n}"), "(def g (x) x)\n");
}

TEST(ParserTest, BracketsSpanLines) {
  const char *source = "let s = concat([a,\n"
                       "                b,   # second\n"
                       "\n"
                       "                c],\n"
                       "               axis=0)\n"
                       "let t = (1 +\n"
                       "         2)\n";
  EXPECT_EQ(dump(source), "(let s (call concat (list a b c) (kw axis 0)))\n(let t (+ 1 2))\n");
}

TEST(ParserTest, CommentsBlankLinesAndEmptyFiles) {
  EXPECT_EQ(dump(""), "");
  EXPECT_EQ(dump("\n\n"), "");
  EXPECT_EQ(dump("# only a comment"), "");
  EXPECT_EQ(dump("# a\n\n   # b\n"), "");
  EXPECT_EQ(dump("\n# header\nlet a = 1 # trailing\n\n\r\nlet b = 2\r\n"), "(let a 1)\n(let b 2)\n");
  // Comment text never reaches the lexer (a 50 MB comment once took a gigabyte there): a '#' inside a string,
  // even after an escaped quote, is text, and a string cut off by the end of its line ends there.
  EXPECT_EQ(dump("let a = load(\"a#b.npy\") # c \"d\nlet b = load(\"x\\\"#y\") # \"#\n"),
            "(let a (call load \"a#b.npy\"))\n(let b (call load \"x\\\"#y\"))\n");
  EXPECT_NE(errorsOf("let a = \"x # y\nlet b = 2 # \"\n").find("t.tg:1:9: error: unterminated string"),
            std::string::npos);
  EXPECT_EQ(dump("let a = 1 # \xc3\xa9\xe2\x82\xac # \"\nlet b = 2\n"), "(let a 1)\n(let b 2)\n");
}

TEST(ParserTest, Locations) {
  ParseResult result = parse("input X : f32[n, 4]\n\nlet y = f(a,\n  b) + X[0]\n");
  ASSERT_NE(result.module, nullptr);
  ASSERT_EQ(result.module->statements.size(), 2u);
  const auto *input = result.module->statements[0]->as<InputStmt>();
  ASSERT_NE(input, nullptr);
  EXPECT_EQ(input->loc.str(), "t.tg:1:1");
  EXPECT_EQ(input->name.loc.str(), "t.tg:1:7");
  EXPECT_EQ(input->type.loc.str(), "t.tg:1:11");
  EXPECT_EQ(input->type.dims[1].loc.str(), "t.tg:1:18");

  const auto *let = result.module->statements[1]->as<LetStmt>();
  ASSERT_NE(let, nullptr);
  EXPECT_EQ(let->loc.str(), "t.tg:3:1");
  EXPECT_EQ(let->names[0].loc.str(), "t.tg:3:5");
  const auto *sum = let->value->as<BinaryExpr>();
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->loc.str(), "t.tg:4:6"); // the operator
  const auto *call = sum->lhs->as<CallExpr>();
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->loc.str(), "t.tg:3:9");
  EXPECT_EQ(call->args[1]->loc.str(), "t.tg:4:3");
  const auto *index = sum->rhs->as<IndexExpr>();
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->loc.str(), "t.tg:4:9"); // the '['
  EXPECT_EQ(index->base->loc.str(), "t.tg:4:8");
  EXPECT_EQ(index->subscripts[0].loc.str(), "t.tg:4:10");
}

TEST(ParserTest, ColumnsCountCodePoints) {
  EXPECT_EQ(errorsOf("# é\nlet é = 1\n"), "t.tg:2:5: error: unexpected character 'é'\nlet é = 1\n    ^\n");
}

TEST(ParserTest, UnclosedParen) {
  EXPECT_EQ(errorsOf("let a = f(x, y\nlet b = 2\n"),
            "t.tg:1:15: error: missing ')' before end of line\nlet a = f(x, y\n              ^\n");
  EXPECT_EQ(errorsOf("let a = (1 + 2"), "t.tg:1:15: error: missing ')' before end of file\nlet a = (1 + 2\n"
                                        "              ^\n");
}

TEST(ParserTest, StrayCharacter) {
  EXPECT_EQ(errorsOf("let a = b $ c\n"), "t.tg:1:11: error: unexpected character '$'\nlet a = b $ c\n"
                                         "          ^\n");
  EXPECT_EQ(errorsOf("let a = \x01\n"), "t.tg:1:9: error: unexpected character U+0001\nlet a = \x01\n"
                                        "        ^\n");
}

TEST(ParserTest, BadStatementStart) {
  EXPECT_EQ(errorsOf("x = 3\n"), "t.tg:1:1: error: expected a statement, found 'x'\nx = 3\n^\n");
}

TEST(ParserTest, ShortMessagesForCommonMistakes) {
  EXPECT_EQ(errorsOf("input X f32\n"),
            "t.tg:1:9: error: expected ':', found 'f32'\ninput X f32\n        ^\n");
  EXPECT_EQ(errorsOf("let a = 1 +\n"), "t.tg:1:12: error: expected an expression, found end of line\n"
                                       "let a = 1 +\n           ^\n");
  EXPECT_EQ(errorsOf("let a = f(x))\n"), "t.tg:1:13: error: unexpected ')'\nlet a = f(x))\n            ^\n");
  EXPECT_EQ(errorsOf("let input = 1\n"), "t.tg:1:5: error: expected a name, found 'input'\nlet input = 1\n"
                                         "    ^\n");
  EXPECT_EQ(errorsOf("input X : f32[2.5]\n"), "t.tg:1:15: error: expected an integer or a name, found '2.5'\n"
                                              "input X : f32[2.5]\n              ^\n");
}

TEST(ParserTest, InvalidUtf8) {
  EXPECT_EQ(errorsOf("let a = 1\nlet b = \xff\n"), "t.tg:2:9: error: invalid UTF-8 byte 0xFF\nlet b = \xff\n"
                                                   "        ^\n");
  EXPECT_NE(errorsOf("let é = \xc3(").find("t.tg:1:9: error: invalid UTF-8 byte 0xC3"), std::string::npos);
  EXPECT_NE(errorsOf("\xed\xa0\x80").find("invalid UTF-8 byte 0xED"), std::string::npos); // a surrogate
  EXPECT_NE(errorsOf("\xe2\x82").find("invalid UTF-8 byte 0xE2"), std::string::npos);     // truncated
}

TEST(ParserTest, LiteralAndArgumentErrors) {
  EXPECT_NE(errorsOf("let a = 99999999999999999999\n").find("t.tg:1:9: error: integer literal out of range"),
            std::string::npos);
  EXPECT_NE(errorsOf("input X : f32[99999999999999999999]\n").find("integer literal out of range"),
            std::string::npos);
  EXPECT_NE(errorsOf("let a = @gpu x\n").find("t.tg:1:10: error: unknown placement '@gpu'"),
            std::string::npos);
  EXPECT_NE(errorsOf("let a = sum(axis=0, x)\n").find("t.tg:1:21: error: positional argument after keyword"),
            std::string::npos);
}

TEST(ParserTest, ReportsSeveralErrorsPerFile) {
  ParseResult result = parse("let a = (1\nlet b = 2 3\nx = 1\nlet c = $\nlet d = 4\n");
  EXPECT_EQ(result.module, nullptr);
  EXPECT_EQ(result.errors, 4u) << result.diagnostics;
  for (const char *where : {"t.tg:1:", "t.tg:2:", "t.tg:3:", "t.tg:4:"})
    EXPECT_NE(result.diagnostics.find(where), std::string::npos) << where << " missing in\n"
                                                                 << result.diagnostics;
}

TEST(ParserTest, DeepNestingIsAnErrorNotACrash) {
  const int depth = 5000; // far beyond the limit
  EXPECT_NE(errorsOf("let a = " + std::string(depth, '(') + "1" + std::string(depth, ')'))
                .find("too deeply nested"),
            std::string::npos);
  EXPECT_NE(errorsOf("let a = " + std::string(depth, '-') + "1").find("too deeply nested"),
            std::string::npos);
  std::string longSum = "let a = 1";
  for (int i = 0; i < depth; ++i)
    longSum += "+1";
  EXPECT_NE(errorsOf(longSum).find("too deeply nested"), std::string::npos);
  EXPECT_EQ(dumpExpr(std::string(100, '(') + "1" + std::string(100, ')')), "1");
}

TEST(ParserTest, NestingAfterASyntaxErrorIsLimitedAlike) {
  // The same limit before and after a syntax error, after which lines are only parsed (each level is three
  // rules of the parser here: expr, primary, argument).
  auto nestedCalls = [](int depth) {
    std::string text;
    for (int i = 0; i < depth; ++i)
      text += "f(";
    return text + "1" + std::string(depth, ')');
  };
  EXPECT_NE(errorsOf("let a = " + nestedCalls(kMaxNesting) + "\n")
                .find("t.tg:1:2009: error: expression too deeply"),
            std::string::npos);
  ParseResult result = parse("let a = (1\nlet b = " + nestedCalls(kMaxNesting - 1) + "\nlet c = (2\n");
  EXPECT_EQ(result.errors, 2u) << result.diagnostics;
  EXPECT_NE(result.diagnostics.find("t.tg:3:11: error: missing ')'"), std::string::npos)
      << result.diagnostics;
  result = parse("let a = (1\nlet b = " + nestedCalls(kMaxNesting) + "\n");
  EXPECT_NE(result.diagnostics.find("t.tg:2:2009: error: expression too deeply"), std::string::npos)
      << result.diagnostics;
}

TEST(ParserTest, DefBlockNeedsItsOwnLines) {
  EXPECT_NE(errorsOf("def f(x) { return x }\n").find("t.tg:1:"), std::string::npos);
  EXPECT_EQ(errorsOf("def f(x) {\n  let y = x\n}\n"),
            "t.tg:3:1: error: the body of 'f' must end with 'return EXPR'\n}\n^\n");
  EXPECT_EQ(errorsOf("def f(x) {\n  return x\n  let y = x\n}\n"),
            "t.tg:3:3: error: statement after the return of 'f'\n  let y = x\n  ^\n");
}

} // namespace
} // namespace tg::frontend
