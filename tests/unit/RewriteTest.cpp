// The rewrite sets (canonicalize, stabilize, specialize) and the equilibrium driver. The heart of it is one
// table of small scripts, at least one per rule: each is compiled twice, once optimized by the default
// pipeline; the test checks that its rule fired and that both graphs compute the same numbers on random
// inputs (and on NaN,
// +-inf and +-0 where the rule claims to keep them). Then: each rule set is at a fixed point after its pass,
// a ping-ponging rule pair is stopped with a warning, optimizing is deterministic, and a 10,000-node chain
// optimizes to the right graph.
#include "frontend/GraphBuilder.h"
#include "ir/Printers.h"
#include "opt/Canonicalize.h"
#include "opt/ConstantFold.h"
#include "opt/Equilibrium.h"
#include "opt/Pipeline.h"
#include "opt/Specialize.h"
#include "opt/Stabilize.h"
#include "runtime/ConstantEvaluator.h"
#include "runtime/Executor.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

namespace tg {
namespace {

using ir::Dim;
using ir::DType;
using ir::OpKind;
using ir::Value;

// ---- scripts, optimization, execution ----

/// Every case script starts with these inputs (n is 3 when run).
constexpr const char *kHeader = R"(import nn
input x : f32[n, 4]
input y : f32[n, 4]
input d : f64[n, 4]
input v : f32[4]
input w : f32[1]
input z : f32[3, 4]
input m : f32[3, 1, 4]
input s : f32[3, 1]
input i : i32[n, 4]
input j : i32[3]
input p : bool[n, 4]
input q : bool[n, 4]
)";

/// "r1 = x + 0.0; r2 = 0.0 + y" as `let` statements and one output statement.
std::string caseScript(const std::string &body) {
  std::string script = kHeader, names;
  std::stringstream statements(body);
  std::string statement;
  while (std::getline(statements, statement, ';')) {
    size_t equals = statement.find('=');
    std::string name = statement.substr(0, equals);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    script += "let " + statement.substr(statement.find_first_not_of(' ')) + "\n";
    names += (names.empty() ? "" : ", ") + name;
  }
  return script + "output " + names + "\n";
}

std::unique_ptr<ir::Program> compile(const std::string &script) {
  std::ostringstream errors;
  frontend::DiagnosticEngine diags(errors);
  // In memory: ctest runs these cases in parallel processes, so a shared temporary file would race.
  frontend::ModuleLoader loader(diags, {});
  const frontend::Module *module = loader.loadSource("rewrite_test.tg", script);
  std::unique_ptr<ir::Program> program = module ? frontend::buildProgram(*module, loader, diags) : nullptr;
  EXPECT_TRUE(program) << errors.str() << "\nin:\n" << script;
  return program;
}

opt::OptimizerProfile optimize(ir::Program &program, const std::string &stopAfter = "") {
  opt::OptimizerOptions options;
  options.evaluate = runtime::evaluateConstant;
  options.verifyEach = true;
  options.stopAfter = stopAfter;
  options.exclude = {"fusion"}; // these tests are about the rewrite sets; FusionTest.cpp covers fusion
  return opt::optimize(program, options);
}

size_t applications(const opt::OptimizerProfile &profile, const std::string &rule) {
  size_t count = 0;
  for (const opt::PassProfile &pass : profile.passes)
    if (auto it = pass.rewrites.find(rule); it != pass.rewrites.end()) count += it->second;
  return count;
}

std::string profileText(const opt::OptimizerProfile &profile) {
  return opt::formatProfile(profile);
}

struct InputRange {
  double low = -3, high = 3;
  bool specials = false; // NaN, +-inf, +-0 in every fifth float element
};

/// Random tensors for the graph's inputs: floats uniform in the range, integers in [-5, 5], bools fair;
/// symbolic sizes are 3.
std::vector<runtime::Tensor> randomInputs(const ir::Graph &graph, const InputRange &range, unsigned seed) {
  std::mt19937 rng(seed);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(), INFINITY, -INFINITY, 0.0, -0.0};
  std::vector<runtime::Tensor> tensors;
  for (const Value *input : graph.inputs()) {
    std::vector<int64_t> shape;
    for (const Dim &dim : input->type().shape)
      shape.push_back(dim.isStatic() ? dim.size() : 3);
    ir::TensorData data(input->type().dtype, shape);
    for (int64_t k = 0; k < data.numElements(); ++k) {
      switch (data.dtype) {
      case DType::Bool:
        data.set(k, rng() % 2);
        break;
      case DType::I32:
      case DType::I64:
        data.set(k, static_cast<double>(rng() % 11) - 5);
        break;
      default:
        if (range.specials && k % 5 == 0)
          data.set(k, specials[(k / 5 + seed) % 5]);
        else
          data.set(k, std::uniform_real_distribution<double>(range.low, range.high)(rng));
      }
    }
    tensors.push_back(runtime::Tensor::fromData(data));
  }
  return tensors;
}

/// Whether `actual` is `expected` up to rounding: NaN where NaN, equal infinities, else close.
::testing::AssertionResult closeTo(const runtime::Tensor &actual, const runtime::Tensor &expected) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "dtype or shape differs";
  ir::TensorData a = actual.toData(), e = expected.toData();
  bool single = e.dtype == DType::F32;
  double relative = single ? 1e-5 : 1e-12, absolute = single ? 1e-5 : 1e-12;
  for (int64_t k = 0; k < e.numElements(); ++k) {
    double got = a.get(k), want = e.get(k);
    if (got == want || (std::isnan(got) && std::isnan(want))) continue;
    bool close = ir::isFloat(e.dtype) && std::isfinite(got) && std::isfinite(want) &&
                 std::abs(got - want) <= absolute + relative * std::abs(want);
    if (!close)
      return ::testing::AssertionFailure() << "element " << k << " is " << got << ", expected " << want;
  }
  return ::testing::AssertionSuccess();
}

// ---- the table: every rule, firing, computing what the unoptimized graph computes ----

struct RuleCase {
  const char *rule;
  const char *body;
  InputRange range;
};

const InputRange kAny{-3, 3, true};     // any inputs, specials included
const InputRange kFinite{-3, 3, false}; // finite inputs only
const InputRange kWide{-20, 20, true};  // for the log-sum-exp
const InputRange kAboveMinusOne{-0.9, 3, true};
const InputRange kBelowOne{-3, 0.9, true};
// Where 1 - sigmoid(x) still has the digits the unoptimized graph's log needs (at x = 8 it has lost 1e-4).
const InputRange kSigmoid{-5, 5, true};

const RuleCase kCases[] = {
    // canonicalize
    {"add(x, 0) -> x", "r1 = x + 0.0; r2 = 0.0 + y; r3 = w + zeros([4]); r4 = j + 0", kAny},
    {"sub(x, 0) -> x", "r1 = x - 0.0; r2 = j - 0", kAny},
    {"sub(0, x) -> neg(x)", "r1 = 0.0 - x; r2 = 0 - j", kAny},
    {"mul(x, 1) -> x", "r1 = x * 1.0; r2 = 1.0 * y; r3 = j * 1", kAny},
    {"mul(x, 0) -> 0 (integers)", "r1 = j * 0; r2 = 0 * i", kAny},
    {"mul(x, -1) -> neg(x)", "r1 = x * -1.0; r2 = -1 * j", kAny},
    {"div(x, 1) -> x", "r1 = x / 1.0", kAny},
    {"div(x, -1) -> neg(x)", "r1 = d / -1.0", kAny},
    {"pow(x, 1) -> x", "r1 = x ** 1.0; r2 = j ** 1", kAny},
    {"sub(x, x) -> 0 (integers)", "r1 = i - i", kAny},
    {"neg(neg(x)) -> x", "r1 = -(-x); r2 = -(-j)", kAny},
    {"sub(x, neg(y)) -> add(x, y)", "r1 = x - (-y); r2 = j - (-j)", kAny},
    {"add(x, neg(y)) -> sub(x, y)", "r1 = x + (-y); r2 = (-x) + v", kAny},
    {"mul(neg(x), neg(y)) -> mul(x, y)", "r1 = (-x) * (-y)", kAny},
    {"div(neg(x), neg(y)) -> div(x, y)", "r1 = (-x) / (-y)", kAny},
    {"abs(abs(x)) -> abs(x)", "r1 = abs(abs(x)); r2 = abs(abs(j))", kAny},
    {"abs(neg(x)) -> abs(x)", "r1 = abs(-x); r2 = abs(-j)", kAny},
    {"not(not(x)) -> x", "r1 = not (not p)", kAny},
    {"not(a < b) -> a >= b (not(eq) -> ne for every dtype)",
     "r1 = not (i < 2); r2 = not (i >= 0); r3 = not (i > 1); r4 = not (i <= 1); r5 = not (x == y); "
     "r6 = not (x != y)",
     kAny},
    {"maximum(x, x) -> x (and minimum, and, or)",
     "r1 = maximum(x, x); r2 = minimum(i, i); r3 = p and p; r4 = q or q", kAny},
    {"and(x, true) -> x (or(x, false) -> x)", "r1 = p and true; r2 = false or p", kAny},
    {"and(x, false) -> false (or(x, true) -> true)", "r1 = p and false; r2 = true or p", kAny},
    {"where(true, a, b) -> a (where(false, a, b) -> b)",
     "r1 = where(true, x, y); r2 = where(false, x, y); r3 = where(true, w, v)", kAny},
    {"where(c, a, a) -> a", "r1 = where(p, x, x)", kAny},
    {"where(not(c), a, b) -> where(c, b, a)", "r1 = where(not p, x, y)", kAny},
    {"reshape(reshape(x)) -> reshape(x)",
     "r1 = reshape(reshape(z, [12]), [2, 6]); r2 = reshape(reshape(m, [4, 3]), [12])", kAny},
    {"reshape(x, shape of x) -> x", "r1 = reshape(reshape(z, [12]), [3, 4])", kAny},
    {"transpose(transpose(x, p), q) -> transpose(x, p[q])",
     "r1 = transpose(transpose(m, [1, 0, 2]), [0, 2, 1]); r2 = transpose(transpose(z)); "
     "r3 = transpose(transpose(m, [2, 0, 1]), [2, 0, 1])",
     kAny},
    {"transpose(x, identity) -> x", "r1 = transpose(m, [0, 1, 2])", kAny},
    {"broadcast_to(broadcast_to(x), s) -> broadcast_to(x, s)",
     "r1 = broadcast_to(broadcast_to(v, [3, 4]), [2, 3, 4]); r2 = broadcast_to(broadcast_to(s, [3, 4]), [2, "
     "3, 4])",
     kAny},
    {"broadcast_to(x, shape of x) -> x", "r1 = broadcast_to(z, [3, 4])", kAny},
    {"x[:] -> x", "r1 = x[:]; r2 = z[0:3, :]; r3 = z[:, 0:10]", kAny},
    {"reduce(x) over no or size-1 axes, keepdims -> x",
     "r1 = sum(z, axis=[]); r2 = max(m, axis=1, keepdims=true); r3 = mean(m, axis=1, keepdims=true); "
     "r4 = prod(m, axis=1, keepdims=true); r5 = min(s, axis=1, keepdims=true)",
     kAny},
    {"reduce(x) over size-1 axes -> reshape(x)", "r1 = sum(m, axis=1); r2 = max(s, axis=1)", kAny},
    {"cast(cast(x, wider), t) -> cast(x, t)",
     "r1 = f32(f64(x)); r2 = i64(f64(j)); r3 = f32(i32(p)); r4 = f32(f64(j))", kAny},
    {"op(c, x) -> op(x, c) (commutative op, c constant)",
     "r1 = 2.0 + x; r2 = 3.0 * x; r3 = maximum(0.0, x); r4 = minimum(1.0, x); r5 = 2 == j; r6 = 2 != j",
     kAny},
    // stabilize
    {"log(1 - sigmoid(x)) -> -softplus(x)", "r1 = log(1.0 - sigmoid(x)); r2 = log(1.0 - sigmoid(d))",
     kSigmoid},
    {"log1p(-sigmoid(x)) -> -softplus(x)", "r1 = log1p(-sigmoid(x))", kSigmoid},
    {"log(sigmoid(x)) -> -softplus(-x)",
     "r1 = log(sigmoid(x)); r2 = log(sigmoid(-y)); r3 = log(nn.sigmoid(x))", kSigmoid},
    {"log(1 + x) -> log1p(x)", "r1 = log(1.0 + x); r2 = log(x + 1.0)", kAboveMinusOne},
    {"log(1 - x) -> log1p(-x)", "r1 = log(1.0 - x); r2 = log(1.0 - (x * y))", kBelowOne},
    {"exp(x) - 1 -> expm1(x)", "r1 = exp(x) - 1.0; r2 = -1.0 + exp(y)", kAny},
    {"log1p(exp(x)) -> softplus(x)", "r1 = log1p(exp(x)); r2 = log(1.0 + exp(y))", kSigmoid},
    {"1 / (1 + exp(-x)) -> sigmoid(x)",
     "r1 = 1.0 / (1.0 + exp(-x)); r2 = 1.0 / (exp(y) + 1.0); r3 = nn.sigmoid(d)", kSigmoid},
    {"log(exp(x)) -> x", "r1 = log(exp(x))", kAny},
    {"log(exp(x) / y) -> x - log(y)", "r1 = log(exp(x) / (y * y + 1.0)); r2 = log(nn.softmax(x, 1))", kWide},
    {"log(sum(exp(x))) -> m + log(sum(exp(x - m))), m = max(x)",
     "r1 = log(sum(exp(x), axis=1)); r2 = log(sum(exp(z), axis=[0, 1])); "
     "r3 = log(sum(exp(m), axis=[0, 2], keepdims=true)); r4 = log(exp(d) / sum(exp(d), axis=1, "
     "keepdims=true))",
     kWide},
    {"sqrt(x * x) -> abs(x)", "r1 = sqrt(x * x)", kAny},
    // specialize
    {"x ** 2 -> x * x", "r1 = x ** 2.0; r2 = j ** 2", kAny},
    {"x ** 3 -> x * x * x", "r1 = x ** 3.0; r2 = j ** 3", kAny},
    {"x ** 0 -> 1", "r1 = x ** 0.0; r2 = z ** 0.0; r3 = j ** 0", kAny},
    {"x ** 0.5 -> sqrt(x)", "r1 = abs(x) ** 0.5", kAny},
    {"x ** 0.5 -> sqrt(x)", "r1 = x ** 0.5; r2 = d ** 0.5",
     kFinite}, // -inf: NaN (NumPy's sqrt), not pow's +inf
    {"x ** -1 -> 1 / x", "r1 = x ** -1.0; r2 = d ** -1.0", kAny},
    {"1 / sqrt(x) -> rsqrt(x)", "r1 = 1.0 / sqrt(x)", kAny},
    {"x / sqrt(y) -> x * rsqrt(y)", "r1 = x / sqrt(y); r2 = z / sqrt(v)", kAny},
    {"x / c -> x * (1/c)",
     "r1 = x / 4.0; r2 = x / 3.0; r3 = d / 7.0; r4 = x / -0.1; r5 = x / (v * 0.0 + 5.0)", kAny},
    {"neg(x) * c -> x * (-c)", "r1 = -x * 3.0; r2 = 2.5 * -d", kAny},
    {"mean(x) -> sum(x) * (1/n)",
     "r1 = mean(z); r2 = mean(x, axis=1); r3 = mean(m, axis=[0, 2], keepdims=true)", kAny},
    {"sum(broadcast_to(x)) -> sum(x) * count",
     "r1 = sum(broadcast_to(v, [3, 4]), axis=0); r2 = sum(broadcast_to(m, [2, 3, 5, 4]), axis=[0, 1], "
     "keepdims=true); "
     "r3 = sum(broadcast_to(m, [3, 2, 4]), axis=1); r4 = sum(broadcast_to(x, [2, 3, 4]), axis=[0, 1]); "
     "r5 = sum(broadcast_to(j, [4, 3]), axis=0); r6 = sum(broadcast_to(s, [3, 3, 3]), axis=2); "
     "r7 = sum(broadcast_to(s, [3, 5])); r8 = sum(broadcast_to(m, [2, 3, 5, 4]), axis=[1, 2])",
     kAny},
    {"x + scatter_add(0, g, i) -> scatter_add(x, g, i)",
     "r1 = z + inc_subtensor(zeros_like(z)[[0, 2, 0]], v); r2 = inc_subtensor(zeros_like(j)[[1, 1]], 3) + j",
     kAny},
    {"x - scatter_add(0, g, i) -> scatter_add(x, -g, i)",
     "r1 = z - inc_subtensor(zeros_like(z)[[2, -1]], z[:2])", kAny},
    {"c * scatter_add(0, g, i) -> scatter_add(0, c * g, i)",
     "r1 = z - 0.5 * inc_subtensor(zeros_like(z)[[1, 1, 0]], z); r2 = inc_subtensor(zeros_like(z)[[2]], v) * "
     "3.0",
     kAny},
};

class RuleCaseTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(RuleCaseTest, FiresAndComputesTheSameNumbers) {
  const RuleCase &c = GetParam();
  std::string script = caseScript(c.body);
  std::unique_ptr<ir::Program> reference = compile(script), optimized = compile(script);
  ASSERT_TRUE(reference && optimized);
  opt::OptimizerProfile profile = optimize(*optimized);
  EXPECT_GT(applications(profile, c.rule), 0u) << "'" << c.rule << "' did not fire on\n"
                                               << script << profileText(profile) << ir::printIr(*optimized);
  runtime::Executor before(reference->graph), after(optimized->graph);
  for (unsigned seed : {1u, 2u, 3u}) {
    std::vector<runtime::Tensor> inputs = randomInputs(reference->graph, c.range, seed);
    std::vector<runtime::Tensor> expected = before.run(inputs), actual = after.run(inputs);
    ASSERT_EQ(expected.size(), actual.size());
    for (size_t k = 0; k < expected.size(); ++k)
      EXPECT_TRUE(closeTo(actual[k], expected[k])) << "output " << reference->outputs[k].name << " of '"
                                                   << c.rule << "', seed " << seed << ", after:\n"
                                                   << ir::printIr(*optimized);
  }
}

void PrintTo(const RuleCase &c, std::ostream *out) {
  *out << "'" << c.rule << "' on " << c.body;
}

/// "Case3_sub_0_x_neg_x" for "sub(0, x) -> neg(x)".
std::string caseName(const ::testing::TestParamInfo<RuleCase> &info) {
  std::string name = "Case" + std::to_string(info.index) + "_";
  for (const char *c = info.param.rule; *c; ++c)
    if (std::isalnum(static_cast<unsigned char>(*c)))
      name += *c;
    else if (name.back() != '_')
      name += '_';
  while (name.back() == '_')
    name.pop_back();
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryRule, RuleCaseTest, ::testing::ValuesIn(kCases), caseName);

/// Rules the front end gives no occasion for, tested on hand-built graphs below.
const char *const kHandBuiltCases[] = {"cast(x, dtype of x) -> x"};

TEST(RewriteTest, EveryRuleHasACase) {
  std::set<std::string> covered(std::begin(kHandBuiltCases), std::end(kHandBuiltCases));
  for (const RuleCase &c : kCases)
    covered.insert(c.rule);
  for (const auto &rules : {opt::canonicalizeRules(), opt::stabilizeRules(), opt::specializeRules()})
    for (const opt::RewriteRule &rule : rules)
      EXPECT_TRUE(covered.count(rule.name)) << "no case for '" << rule.name << "'";
}

TEST(RewriteTest, RuleSetsHaveAtLeastTheirShare) {
  EXPECT_GE(opt::canonicalizeRules().size(), 20u);
  EXPECT_GE(opt::stabilizeRules().size(), 8u);
  EXPECT_GE(opt::specializeRules().size(), 8u);
}

// ---- near misses: rules that must not fire ----

TEST(RewriteTest, NearMissesAreLeftAlone) {
  // Each would change a result (NaN or inf for floats), a dtype or a shape.
  const char *bodies[] = {"r1 = x * 0.0",
                          "r1 = x - x",
                          "r1 = not (x < y)",
                          "r1 = i32(f32(j))",
                          "r1 = reshape(z, [4, 3])",
                          "r1 = z[1:, :]",
                          "r1 = log(x + 2.0)",
                          "r1 = exp(x) - 2.0",
                          "r1 = x ** 2.5",
                          "r1 = x / 0.0",
                          "r1 = x / 1e-40",
                          "r1 = mean(x, axis=0)",
                          "r1 = nn.log_softmax(x, 1)",
                          "r1 = i32(sum(i32(s), axis=1, keepdims=true))"};
  std::set<std::string> allowed = {"merge nodes", "merge constants", "op(constants) -> constant"};
  for (const char *body : bodies) {
    std::unique_ptr<ir::Program> program = compile(caseScript(body));
    ASSERT_TRUE(program);
    opt::OptimizerProfile profile = optimize(*program);
    for (const opt::PassProfile &pass : profile.passes)
      for (const auto &[rule, count] : pass.rewrites)
        EXPECT_TRUE(allowed.count(rule)) << "'" << rule << "' fired on " << body;
  }
}

// ---- fixed points, ping-pong, determinism ----

TEST(RewriteTest, EachRuleSetIsAtAFixedPointAfterItsPass) {
  struct Stage {
    const char *pass;
    std::vector<opt::RewriteRule> rules;
  };
  std::vector<Stage> stages = {{"canonicalize", opt::canonicalizeRules()},
                               {"stabilize", opt::stabilizeRules()},
                               {"specialize", opt::specializeRules()}};
  for (const RuleCase &c : kCases) {
    for (Stage &stage : stages) {
      std::unique_ptr<ir::Program> program = compile(caseScript(c.body));
      ASSERT_TRUE(program);
      optimize(*program, stage.pass);
      opt::ConstantEvaluator evaluate = runtime::evaluateConstant;
      opt::RewriteContext context(program->graph, &evaluate, 1 << 16);
      opt::PassProfile again;
      std::vector<opt::RewriteRule> rules = stage.rules;
      rules.push_back(opt::constantFoldRule());
      opt::rewriteToFixedPoint(context, rules, again);
      EXPECT_TRUE(again.rewrites.empty()) << stage.pass << " rewrote again after its pass on " << c.body
                                          << ": " << again.rewrites.begin()->first;
    }
  }
}

TEST(RewriteTest, APingPongingRulePairIsStoppedWithAWarning) {
  // add(x, c) -> add(c, x) and back: never a fixed point.
  std::vector<opt::RewriteRule> rules = {
      {"add(x, c) -> add(c, x)",
       {OpKind::Add},
       [](opt::RewriteContext &c, ir::Node *n) -> Value * {
         return n->input(1)->isConstant() ? c.make(OpKind::Add, {n->input(1), n->input(0)}) : nullptr;
       }},
      {"add(c, x) -> add(x, c)",
       {OpKind::Add},
       [](opt::RewriteContext &c, ir::Node *n) -> Value * {
         return n->input(0)->isConstant() ? c.make(OpKind::Add, {n->input(1), n->input(0)}) : nullptr;
       }},
  };
  ir::Graph graph;
  Value *x = graph.addInput({DType::F32, {Dim::of(3)}}, "x");
  Value *one = graph.addConstant(ir::TensorData::scalar(DType::F32, 1));
  graph.addOutput(graph.addNode(ir::Op(OpKind::Add), {x, one})->output());
  opt::RewriteContext context(graph, nullptr, 1 << 16);
  opt::PassProfile profile;
  opt::rewriteToFixedPoint(context, rules, profile);
  ASSERT_EQ(profile.warnings.size(), 1u);
  EXPECT_NE(profile.warnings[0].find("did not reach a fixed point"), std::string::npos)
      << profile.warnings[0];
  graph.removeDeadNodes();
  EXPECT_TRUE(graph.verify().empty());
  EXPECT_EQ(graph.toposort().size(), 1u);
}

TEST(RewriteTest, OptimizingIsDeterministic) {
  std::string script =
      caseScript("r1 = log(1.0 + exp(-(-x))) + log(sum(exp(x), axis=1, keepdims=true)); "
                 "r2 = mean(broadcast_to(v, [3, 4]), axis=0) / 3.0; r3 = (2.0 + x) ** 3.0 - "
                 "(x + 2.0) ** -0.5; r4 = log(nn.softmax(y, 1)); r5 = where(not p, i * 0, -(-i))");
  std::string first, second;
  for (std::string *text : {&first, &second}) {
    std::unique_ptr<ir::Program> program = compile(script);
    ASSERT_TRUE(program);
    optimize(*program);
    *text = ir::printIr(*program);
  }
  EXPECT_EQ(first, second);
  EXPECT_NE(first.find("softplus"), std::string::npos) << first;
}

// ---- the helpers rules build with ----

TEST(RewriteTest, MakeSameTypeAddsNothingWhenTheTypeWouldChange) {
  ir::Graph graph;
  Value *x = graph.addInput({DType::F32, {Dim::of(1)}}, "x");
  Value *y = graph.addInput({DType::F32, {Dim::of(3)}}, "y");
  ir::Node *sum = graph.addNode(ir::Op(OpKind::Add), {x, y});
  graph.addOutput(sum->output());
  opt::RewriteContext context(graph, nullptr, 1 << 16);
  size_t nodes = graph.nodes().size();
  EXPECT_EQ(context.makeSameType(sum, OpKind::Neg, {x}), nullptr); // f32[1], not f32[3]
  EXPECT_EQ(graph.nodes().size(), nodes);
  Value *broadcast = context.broadcastLike(sum, x);
  ASSERT_NE(broadcast, nullptr);
  EXPECT_EQ(broadcast->owner()->op().str(), "broadcast_to{shape=[3]}");
  Value *zeros = context.fill(sum, 0, nullptr);
  ASSERT_NE(zeros, nullptr);
  EXPECT_EQ(zeros->owner()->op().str(), "zeros{shape=[3], dtype=f32}");
}

TEST(RewriteTest, FillOfASymbolicShapeUsesALikeValue) {
  ir::Graph graph;
  Value *x = graph.addInput({DType::I32, {Dim::named("n")}}, "x");
  ir::Node *product = graph.addNode(ir::Op(OpKind::Mul), {x, x});
  graph.addOutput(product->output());
  opt::RewriteContext context(graph, nullptr, 1 << 16);
  EXPECT_EQ(context.fill(product, 0, nullptr), nullptr);
  EXPECT_EQ(context.fill(product, 2, x), nullptr);
  Value *ones = context.fill(product, 1, x);
  ASSERT_NE(ones, nullptr);
  EXPECT_EQ(ones->owner()->op().kind(), OpKind::OnesLike);
}

TEST(RewriteTest, CastToItsOwnDtypeIsRemoved) {
  // The front end makes no such cast (f32(x) of an f32 x is x), but rewrites and gradients may.
  ir::Program program;
  Value *x = program.graph.addInput({DType::F32, {Dim::named("n")}}, "x");
  program.inputs.push_back({"x", x, {}});
  ir::OpAttrs toF32;
  toF32.dtype = DType::F32;
  Value *cast = program.graph.addNode(ir::Op(OpKind::Cast, toF32), {x})->output();
  program.graph.addOutput(cast);
  program.outputs.push_back({"y", cast});
  opt::OptimizerProfile profile = optimize(program);
  EXPECT_EQ(applications(profile, "cast(x, dtype of x) -> x"), 1u);
  EXPECT_EQ(program.graph.outputs()[0], x);
}

// ---- the log-sum-exp at infinities ----

TEST(RewriteTest, LogSumExpKeepsInfiniteRows) {
  // Rows: finite; holding +inf; all -inf; holding NaN; large (exp overflows unshifted).
  std::unique_ptr<ir::Program> program =
      compile("input x : f64[5, 3]\nlet r = log(sum(exp(x), axis=1))\noutput r\n");
  ASSERT_TRUE(program);
  opt::OptimizerProfile profile = optimize(*program);
  ASSERT_EQ(applications(profile, "log(sum(exp(x))) -> m + log(sum(exp(x - m))), m = max(x)"), 1u);
  double nan = std::numeric_limits<double>::quiet_NaN();
  ir::TensorData data(DType::F64, {5, 3});
  double values[] = {0,         1,   2, INFINITY, 1,    -INFINITY, -INFINITY, -INFINITY,
                     -INFINITY, nan, 1, 2,        1000, 999,       998};
  for (int k = 0; k < 15; ++k)
    data.set(k, values[k]);
  runtime::Executor executor(program->graph);
  ir::TensorData result = executor.run({runtime::Tensor::fromData(data)})[0].toData();
  EXPECT_NEAR(result.get(0), std::log(1 + std::exp(1.0) + std::exp(2.0)), 1e-12);
  EXPECT_EQ(result.get(1), INFINITY);
  EXPECT_EQ(result.get(2), -INFINITY);
  EXPECT_TRUE(std::isnan(result.get(3)));
  EXPECT_NEAR(result.get(4), 1000 + std::log(1 + std::exp(-1.0) + std::exp(-2.0)), 1e-9); // unshifted: inf
}

// ---- scaling ----

TEST(RewriteTest, ATenThousandNodeChainOptimizes) {
  // x -> add 0 -> mul 1 -> neg -> neg -> add 1, 2,000 times: 10,000 nodes, of which the 2,000 adds of 1
  // remain.
  ir::Program program;
  ir::Graph &graph = program.graph;
  Value *x = graph.addInput({DType::F32, {Dim::named("n")}}, "x");
  program.inputs.push_back({"x", x, {}});
  Value *zero = graph.addConstant(ir::TensorData::scalar(DType::F32, 0));
  Value *one = graph.addConstant(ir::TensorData::scalar(DType::F32, 1));
  Value *chain = x;
  auto apply = [&](OpKind kind, std::vector<Value *> inputs) {
    return graph.addNode(ir::Op(kind), std::move(inputs))->output();
  };
  for (int k = 0; k < 2000; ++k) {
    chain = apply(OpKind::Add, {chain, zero});
    chain = apply(OpKind::Mul, {one, chain});
    chain = apply(OpKind::Neg, {chain});
    chain = apply(OpKind::Neg, {chain});
    chain = apply(OpKind::Add, {chain, one});
  }
  graph.addOutput(chain);
  program.outputs.push_back({"y", chain});
  ASSERT_EQ(graph.toposort().size(), 10000u);

  opt::OptimizerProfile profile = optimize(program);
  for (const opt::PassProfile &pass : profile.passes)
    EXPECT_TRUE(pass.warnings.empty()) << pass.name << ": " << pass.warnings.front();
  EXPECT_EQ(applications(profile, "add(x, 0) -> x"), 2000u);
  EXPECT_EQ(applications(profile, "neg(neg(x)) -> x"), 2000u);
  EXPECT_EQ(graph.toposort().size(), 2000u);
  ir::TensorData data(DType::F32, {3});
  for (int k = 0; k < 3; ++k)
    data.set(k, 0.5 * k);
  runtime::Executor executor(graph);
  ir::TensorData result = executor.run({runtime::Tensor::fromData(data)})[0].toData();
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(result.get(k), 2000 + 0.5 * k);
}

/// Every constant a node of `graph` reads.
std::vector<const Value *> constantsRead(ir::Graph &graph) {
  std::vector<const Value *> constants;
  for (const ir::Node *node : graph.toposort())
    for (const Value *input : node->inputs())
      if (input->isConstant()) constants.push_back(input);
  return constants;
}

TEST(RewriteTest, ConstantsOfOneRepeatedValueFoldAsScalars) {
  // The gradient of the chain a(k) = a(k-1) * c + x over 65,536 elements: broadcast ones times c, 2,000
  // times over, summed. Folded element by element, that was 2,000 constants of 256 KB (3 s, 1 GB).
  const int lets = 2000;
  const double c = 1.0001;
  std::string script = "input x : f32[65536]\nlet a0 = x\n";
  for (int k = 1; k <= lets; ++k)
    script += "let a" + std::to_string(k) + " = a" + std::to_string(k - 1) + " * 1.0001 + x\n";
  script += "let g = grad(sum(a" + std::to_string(lets) + "), x)\noutput g\n";
  std::unique_ptr<ir::Program> program = compile(script);
  ASSERT_TRUE(program);
  optimize(*program);
  ir::Graph &graph = program->graph;
  const ir::Node *broadcast = graph.outputs()[0]->owner();
  ASSERT_TRUE(broadcast && broadcast->op().kind() == OpKind::BroadcastTo) << ir::printIr(graph);
  ASSERT_TRUE(broadcast->input(0)->isConstant());
  const ir::TensorData &value = broadcast->input(0)->constant();
  ASSERT_EQ(value.numElements(), 1);
  double expected = (std::pow(c, lets + 1) - 1) / (c - 1); // 1 + c + ... + c^lets, summed in f32 above
  EXPECT_NEAR(value.get(0), expected, expected * 1e-4);
  for (const Value *constant : constantsRead(graph))
    EXPECT_LE(constant->constant().numElements(), 1);
}

TEST(RewriteTest, ConstantsOfOneRepeatedValueStayBroadcast) {
  std::unique_ptr<ir::Program> program = compile("let r = reshape(ones([3, 4]) * 2.0, [12])\n"
                                                 "let t = arange(4) * 2\n"
                                                 "let u = transpose(full([2, 3], 5.0)) + 1.0\n"
                                                 "output r, t, u\n");
  ASSERT_TRUE(program);
  optimize(*program);
  ir::Graph &graph = program->graph;
  // A shape op on a broadcast constant folds (spelled out, then found to be one value), an elementwise op
  // computes on the scalar; a constant of several values stays as it is.
  for (auto [index, value, shape] : {std::tuple<size_t, double, std::vector<int64_t>>{0, 2.0, {12}},
                                     std::tuple<size_t, double, std::vector<int64_t>>{2, 6.0, {3, 2}}}) {
    const ir::Node *broadcast = graph.outputs()[index]->owner();
    ASSERT_TRUE(broadcast && broadcast->op().kind() == OpKind::BroadcastTo) << ir::printIr(graph);
    EXPECT_EQ(broadcast->op().attrs().shape, shape);
    ASSERT_TRUE(broadcast->input(0)->isConstant());
    EXPECT_EQ(broadcast->input(0)->constant().numElements(), 1);
    EXPECT_EQ(broadcast->input(0)->constant().get(0), value);
  }
  const Value *t = graph.outputs()[1];
  ASSERT_TRUE(t->isConstant()) << ir::printIr(graph);
  EXPECT_EQ(t->constant().shape, std::vector<int64_t>{4});
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(t->constant().get(k), 2 * k);
}

} // namespace
} // namespace tg
