// grad: every differentiable op against central finite differences in f64, a few closed forms, the user
// errors, and determinism. Each check builds cost = sum(op(inputs) * fixed random weights) and runs both the
// gradient and the perturbed costs with the CPU executor.
#include "autodiff/Gradient.h"

#include "ir/Loop.h"
#include "ir/Printers.h"
#include "runtime/Executor.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <gtest/gtest.h>
#include <optional>

namespace tg::ir {
namespace {

using autodiff::Disconnected;
using autodiff::grad;
using runtime::Tensor;

/// splitmix64: the same numbers on every platform.
class Random {
public:
  explicit Random(uint64_t seed) : state_(seed) {}
  double uniform(double lo, double hi) {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return lo + (hi - lo) * static_cast<double>(z >> 11) * 0x1.0p-53;
  }

private:
  uint64_t state_;
};

Random rng(1);

class GradientTest : public ::testing::Test {
protected:
  void SetUp() override { rng = Random(1); }
};

/// A graph input: its declared type and the tensor it gets.
struct Arg {
  TensorType type;
  Tensor value;
};

TensorData randomData(DType dtype, const std::vector<int64_t> &shape, double lo, double hi) {
  TensorData data(dtype, shape);
  for (int64_t i = 0; i < data.numElements(); ++i)
    data.set(i, rng.uniform(lo, hi));
  return data;
}

/// An input with random values in [lo, hi]; a non-empty entry of `symbols` makes that dimension symbolic.
Arg arg(std::vector<int64_t> shape, double lo = -2, double hi = 2, std::vector<std::string> symbols = {},
        DType dtype = DType::F64) {
  Shape declared;
  for (size_t i = 0; i < shape.size(); ++i)
    declared.push_back(i < symbols.size() && !symbols[i].empty() ? Dim::named(symbols[i])
                                                                 : Dim::of(shape[i]));
  return {{dtype, declared, Place::Host}, Tensor::fromData(randomData(dtype, shape, lo, hi))};
}

Arg given(std::vector<int64_t> shape, const std::vector<double> &values) {
  TensorData data(DType::F64, shape);
  for (size_t i = 0; i < values.size(); ++i)
    data.set(static_cast<int64_t>(i), values[i]);
  Shape declared;
  for (int64_t size : shape)
    declared.push_back(Dim::of(size));
  return {{DType::F64, declared, Place::Host}, Tensor::fromData(data)};
}

std::vector<double> valuesOf(const Tensor &tensor) {
  TensorData data = tensor.toData();
  std::vector<double> values;
  for (int64_t i = 0; i < data.numElements(); ++i)
    values.push_back(data.get(i));
  return values;
}

Value *op(Graph &graph, OpKind kind, std::vector<Value *> inputs, OpAttrs attrs = {}) {
  return graph.addNode(Op(kind, std::move(attrs)), std::move(inputs))->output();
}

OpAttrs axes(std::vector<int64_t> list, bool keepdims = false) {
  OpAttrs attrs;
  attrs.axes = std::move(list);
  attrs.keepdims = keepdims;
  return attrs;
}

OpAttrs shape(std::vector<int64_t> sizes) {
  OpAttrs attrs;
  attrs.shape = std::move(sizes);
  return attrs;
}

OpAttrs dtype(DType to) {
  OpAttrs attrs;
  attrs.dtype = to;
  return attrs;
}

SliceSpec index(int64_t i) {
  SliceSpec spec;
  spec.isIndex = true;
  spec.start = i;
  return spec;
}

SliceSpec span(std::optional<int64_t> start = {}, std::optional<int64_t> stop = {}, int64_t step = 1) {
  SliceSpec spec;
  spec.hasStart = start.has_value();
  spec.start = start.value_or(0);
  spec.hasStop = stop.has_value();
  spec.stop = stop.value_or(0);
  spec.step = step;
  return spec;
}

OpAttrs slices(std::vector<SliceSpec> specs) {
  OpAttrs attrs;
  attrs.slices = std::move(specs);
  return attrs;
}

Value *constant(Graph &graph, double value, DType type = DType::F64) {
  return graph.addConstant(TensorData::scalar(type, value));
}

Value *sumAll(Graph &graph, Value *x) {
  std::vector<int64_t> all(x->type().rank());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<int64_t>(i);
  return op(graph, OpKind::Sum, {x}, axes(all));
}

SourceLoc at(int line, int column) {
  return {std::make_shared<const std::string>("g.tg"), line, column};
}

using Build = std::function<Value *(Graph &, const std::vector<Value *> &)>;

std::vector<Value *> addInputs(Graph &graph, const std::vector<Arg> &args) {
  std::vector<Value *> inputs;
  for (size_t i = 0; i < args.size(); ++i)
    inputs.push_back(graph.addInput(args[i].type, std::string("x").append(std::to_string(i))));
  return inputs;
}

/// cost = sum(build(inputs) * weights), the weights random with the result's run-time shape; outputs: the
/// cost, then the gradient with respect to each float input.
struct CostGraph {
  Graph graph;
  std::vector<size_t> wrtInputs;

  CostGraph(const std::vector<Arg> &args, const std::vector<Tensor> &values, const Build &build) {
    std::vector<int64_t> resultShape;
    {
      Graph probe;
      probe.addOutput(build(probe, addInputs(probe, args)));
      resultShape = runtime::Executor(probe).run(values)[0].shape();
    }
    std::vector<Value *> inputs = addInputs(graph, args);
    Value *result = build(graph, inputs);
    Value *weights = graph.addConstant(randomData(result->type().dtype, resultShape, -1, 1));
    Value *cost = sumAll(graph, op(graph, OpKind::Mul, {result, weights}));
    std::vector<Value *> wrt;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!isFloat(inputs[i]->type().dtype)) continue;
      wrtInputs.push_back(i);
      wrt.push_back(inputs[i]);
    }
    graph.addOutput(cost);
    for (Value *gradient : grad(graph, cost, wrt, {}))
      graph.addOutput(gradient);
    EXPECT_TRUE(graph.verify().empty());
  }
};

/// Checks every gradient element against (cost(x + h) - cost(x - h)) / 2h, h = 1e-6 relative (1e-3 for f32
/// inputs, whose rounding the divisor takes into account): the error must stay below 1e-6 relative to the
/// larger of the two values, or absolute below 1.
void expectGradientsMatch(const std::vector<Arg> &args, const Build &build) {
  std::vector<Tensor> values;
  for (const Arg &a : args)
    values.push_back(a.value);
  CostGraph costGraph(args, values, build);
  runtime::Executor executor(costGraph.graph);
  std::vector<Tensor> outputs = executor.run(values);
  auto costAt = [&](size_t input, const TensorData &data) {
    std::vector<Tensor> perturbed = values;
    perturbed[input] = Tensor::fromData(data);
    return valuesOf(executor.run(perturbed)[0])[0];
  };
  for (size_t k = 0; k < costGraph.wrtInputs.size(); ++k) {
    size_t input = costGraph.wrtInputs[k];
    const Tensor &gradient = outputs[1 + k];
    ASSERT_EQ(gradient.shape(), values[input].shape()) << "gradient of input " << input;
    std::vector<double> analytic = valuesOf(gradient);
    TensorData data = values[input].toData();
    for (int64_t j = 0; j < data.numElements(); ++j) {
      double x = data.get(j), h = (data.dtype == DType::F32 ? 1e-3 : 1e-6) * std::max(1.0, std::abs(x));
      TensorData plus = data, minus = data;
      plus.set(j, x + h);
      minus.set(j, x - h);
      double numeric = (costAt(input, plus) - costAt(input, minus)) / (plus.get(j) - minus.get(j));
      double scale = std::max({1.0, std::abs(numeric), std::abs(analytic[j])});
      EXPECT_LT(std::abs(analytic[j] - numeric) / scale, 1e-6)
          << "input " << input << ", element " << j << ": grad " << analytic[j] << ", finite difference "
          << numeric;
    }
  }
}

Build unaryBuild(OpKind kind, OpAttrs attrs = {}) {
  return
      [kind, attrs](Graph &graph, const std::vector<Value *> &x) { return op(graph, kind, {x[0]}, attrs); };
}

Build binaryBuild(OpKind kind) {
  return [kind](Graph &graph, const std::vector<Value *> &x) { return op(graph, kind, {x[0], x[1]}); };
}

/// The UserError that `body` throws (a failure if none).
UserError errorOf(const std::function<void()> &body) {
  try {
    body();
  } catch (const UserError &error) {
    return error;
  }
  ADD_FAILURE() << "no UserError";
  return UserError("");
}

// ---- Elementwise
// ---------------------------------------------------------------------------------------------

TEST_F(GradientTest, UnaryOps) {
  struct Case {
    OpKind kind;
    double lo, hi; // inside the domain; kinks (abs, relu, sign at 0) are hit with probability ~1e-6
  };
  const Case cases[] = {
      {OpKind::Neg, -2, 2},     {OpKind::Abs, -2, 2},      {OpKind::Exp, -2, 2},   {OpKind::Log, 0.5, 2},
      {OpKind::Log1p, -0.5, 2}, {OpKind::Expm1, -2, 2},    {OpKind::Sqrt, 0.5, 2}, {OpKind::Rsqrt, 0.5, 2},
      {OpKind::Sin, -2, 2},     {OpKind::Cos, -2, 2},      {OpKind::Tanh, -2, 2},  {OpKind::Sigmoid, -3, 3},
      {OpKind::Relu, -2, 2},    {OpKind::Softplus, -3, 3}, {OpKind::Erf, -2, 2},   {OpKind::Floor, -2, 2},
      {OpKind::Ceil, -2, 2},    {OpKind::Round, -2, 2},    {OpKind::Sign, -2, 2},  {OpKind::Tan, -1.2, 1.2},
      {OpKind::Atan, -3, 3},    {OpKind::Sinh, -2, 2},     {OpKind::Cosh, -2, 2},  {OpKind::Log2, 0.5, 4},
      {OpKind::Exp2, -2, 2},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(opName(c.kind));
    expectGradientsMatch({arg({3, 4}, c.lo, c.hi)}, unaryBuild(c.kind));
  }
  // Every unary op of floats has its case (not and casts are not differentiated).
  const OpKind kinds[] = {
#define OP(Enum, ...) OpKind::Enum,
#include "ir/Ops.def"
  };
  for (OpKind kind : kinds)
    if (tg::ir::isUnaryElementwise(kind) && tg::ir::takes(kind, DType::F64) && kind != OpKind::Cast) {
      EXPECT_TRUE(
          std::any_of(std::begin(cases), std::end(cases), [&](const Case &c) { return c.kind == kind; }))
          << opName(kind) << " has no gradient case";
    }
}

TEST_F(GradientTest, BinaryOpsWithBroadcasting) {
  struct Case {
    OpKind kind;
    double aLo, aHi, bLo, bHi;
  };
  const Case cases[] = {
      {OpKind::Add, -2, 2, -2, 2},     {OpKind::Sub, -2, 2, -2, 2},  {OpKind::Mul, -2, 2, -2, 2},
      {OpKind::Div, -2, 2, 0.5, 2},    {OpKind::Pow, 0.5, 2, -2, 2}, {OpKind::Maximum, -2, 2, -2, 2},
      {OpKind::Minimum, -2, 2, -2, 2}, {OpKind::Mod, -3, 3, 0.5, 2},
  };
  // f64[3, 1] with f64[4], f64[2, 3, 4] with a scalar, f64[4] with f64[2, 1, 4].
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{3, 1}, {4}}, {{2, 3, 4}, {}}, {{4}, {2, 1, 4}}};
  for (const Case &c : cases) {
    for (const auto &[shapeA, shapeB] : shapes) {
      SCOPED_TRACE(std::string(opName(c.kind)) + " of ranks " + std::to_string(shapeA.size()) + ", " +
                   std::to_string(shapeB.size()));
      expectGradientsMatch({arg(shapeA, c.aLo, c.aHi), arg(shapeB, c.bLo, c.bHi)}, binaryBuild(c.kind));
    }
  }
}

TEST_F(GradientTest, MaximumTieGoesToTheFirstOperand) {
  Graph graph;
  Value *a = graph.addInput({DType::F64, {Dim::of(2)}}, "a");
  Value *b = graph.addInput({DType::F64, {Dim::of(2)}}, "b");
  Value *cost = sumAll(graph, op(graph, OpKind::Maximum, {a, b}));
  for (Value *gradient : grad(graph, cost, {a, b}, {}))
    graph.addOutput(gradient);
  std::vector<Tensor> outputs =
      runtime::Executor(graph).run({given({2}, {1, 5}).value, given({2}, {1, 3}).value});
  EXPECT_EQ(valuesOf(outputs[0]), (std::vector<double>{1, 1}));
  EXPECT_EQ(valuesOf(outputs[1]), (std::vector<double>{0, 0}));
}

TEST_F(GradientTest, WhereRoutesByTheConditionAndGivesTheConditionNothing) {
  // where(c > 0, a, b): c is a float input too; its gradient is zeros.
  expectGradientsMatch({arg({3, 4}), arg({3, 1}), arg({4})}, [](Graph &graph, const std::vector<Value *> &x) {
    Value *condition = op(graph, OpKind::Gt, {x[0], constant(graph, 0)});
    return op(graph, OpKind::Where, {condition, x[1], x[2]});
  });
}

TEST_F(GradientTest, ClipGivesTheBoundsWhatFallsOutside) {
  expectGradientsMatch({arg({3, 4}), arg({3, 1}, -1, -0.2), arg({}, 0.2, 1)},
                       [](Graph &graph, const std::vector<Value *> &x) {
                         return op(graph, OpKind::Clip, {x[0], x[1], x[2]});
                       });
  expectGradientsMatch({arg({3, 4})}, [](Graph &graph, const std::vector<Value *> &x) {
    return op(graph, OpKind::Clip, {x[0], constant(graph, -0.5), constant(graph, 0.5)});
  });
}

TEST_F(GradientTest, CastsPassTheGradientBetweenFloats) {
  // f32 -> f64: the gradient is cast back to f32.
  expectGradientsMatch({arg({3, 4}, -2, 2, {}, DType::F32)}, [](Graph &graph, const std::vector<Value *> &x) {
    return op(graph, OpKind::Exp, {op(graph, OpKind::Cast, {x[0]}, dtype(DType::F64))});
  });
  // f64 -> f32: d/dx sum(f32(x) * 3) = 3, in f64.
  Graph graph;
  Value *x = graph.addInput({DType::F64, {Dim::of(2)}}, "x");
  Value *narrow = op(graph, OpKind::Cast, {x}, dtype(DType::F32));
  Value *cost = sumAll(graph, op(graph, OpKind::Mul, {narrow, constant(graph, 3, DType::F32)}));
  Value *gradient = grad(graph, cost, {x}, {})[0];
  EXPECT_EQ(gradient->type().str(), "f64[2]");
  graph.addOutput(gradient);
  EXPECT_EQ(valuesOf(runtime::Executor(graph).run({given({2}, {0.1, 0.2}).value})[0]),
            (std::vector<double>{3, 3}));
}

TEST_F(GradientTest, ShapeOnlyAndIntegerPathsCarryNoGradient) {
  // x * ones_like(x) + zeros_like(x) + f64(argmax(x)): only the product differentiates.
  expectGradientsMatch({arg({3, 4})}, [](Graph &graph, const std::vector<Value *> &x) {
    Value *product = op(graph, OpKind::Mul, {x[0], op(graph, OpKind::OnesLike, {x[0]})});
    Value *shifted = op(graph, OpKind::Add, {product, op(graph, OpKind::ZerosLike, {x[0]})});
    Value *position = op(graph, OpKind::Argmax, {x[0]}, axes({1}, true));
    return op(graph, OpKind::Add, {shifted, op(graph, OpKind::Cast, {position}, dtype(DType::F64))});
  });
}

// ---- Reductions
// ----------------------------------------------------------------------------------------------

TEST_F(GradientTest, Reductions) {
  struct Config {
    std::vector<int64_t> shape;
    std::vector<std::string> symbols;
    std::vector<int64_t> axes;
    bool keepdims;
  };
  const Config configs[] = {
      {{2, 3, 4}, {}, {0, 1, 2}, false},
      {{2, 3, 4}, {}, {1}, false},
      {{2, 3, 4}, {}, {0, 2}, true},
      {{5, 3}, {"n"}, {0}, false},
      {{5, 3}, {"n"}, {0, 1}, false},
      {{5, 3}, {"n"}, {1}, true},
      {{5, 3, 2}, {"n", "m"}, {2}, false}, // two symbolic kept dimensions
      // Axes that are not adjacent, after a leading one: g's axes come back counted without it.
      {{2, 3, 4}, {}, {0, 2}, false},
      {{2, 3, 1, 4}, {}, {0, 2}, false},
      {{2, 3, 4, 5}, {}, {0, 2, 3}, false},
      {{2, 3, 4, 5}, {}, {1, 3}, false},
      {{2, 3, 1, 5}, {"", "", "", "n"}, {0, 2}, false},
  };
  for (OpKind kind : {OpKind::Sum, OpKind::Mean, OpKind::Max, OpKind::Min, OpKind::Prod}) {
    for (const Config &c : configs) {
      SCOPED_TRACE(std::string(opName(kind)) + " over " + std::to_string(c.axes.size()) + " axes of rank " +
                   std::to_string(c.shape.size()) + (c.keepdims ? ", keepdims" : "") +
                   (c.symbols.empty() ? "" : ", symbolic"));
      double lo = kind == OpKind::Prod ? 0.5 : -2, hi = kind == OpKind::Prod ? 1.5 : 2;
      expectGradientsMatch({arg(c.shape, lo, hi, c.symbols)}, unaryBuild(kind, axes(c.axes, c.keepdims)));
    }
  }
}

TEST_F(GradientTest, ProdIsExactAtZeros) {
  // Rows with no zero, one zero and two zeros; prod is linear in each element, so differences are exact.
  Arg x = given({3, 3}, {2, 3, 4, 0, 3, 5, 0, 0, 7});
  expectGradientsMatch({x}, unaryBuild(OpKind::Prod, axes({1})));
  Graph graph;
  Value *input = graph.addInput(x.type, "x");
  Value *gradient = grad(graph, sumAll(graph, op(graph, OpKind::Prod, {input}, axes({1}))), {input}, {})[0];
  graph.addOutput(gradient);
  EXPECT_EQ(valuesOf(runtime::Executor(graph).run({x.value})[0]),
            (std::vector<double>{12, 8, 6, 15, 0, 0, 0, 0, 0}));
}

TEST_F(GradientTest, MaxGivesEveryTiedPositionTheGradient) {
  Graph graph;
  Value *x = graph.addInput({DType::F64, {Dim::of(4)}}, "x");
  graph.addOutput(grad(graph, op(graph, OpKind::Max, {x}, axes({0})), {x}, {})[0]);
  EXPECT_EQ(valuesOf(runtime::Executor(graph).run({given({4}, {3, 1, 3, 2}).value})[0]),
            (std::vector<double>{1, 0, 1, 0}));
}

// ---- Matmul and shape ops
// ------------------------------------------------------------------------------------

TEST_F(GradientTest, MatmulOfEveryRank) {
  struct Case {
    std::vector<int64_t> a, b;
    std::vector<std::string> symbolsA;
  };
  const Case cases[] = {
      {{4}, {4}, {}},       {{3, 4}, {4}, {}},       {{4}, {4, 5}, {}},
      {{3, 4}, {4, 5}, {}}, {{2, 3, 4}, {4, 5}, {}}, {{2, 1, 3, 4}, {3, 4, 2}, {}},
      {{4}, {2, 4, 5}, {}}, {{2, 3, 4}, {4}, {}},    {{3, 4}, {2, 4, 5}, {}},
      {{5, 4}, {4}, {"n"}}, {{5, 4}, {4, 2}, {"n"}}, {{2, 5, 4}, {4}, {"", "n"}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE("ranks " + std::to_string(c.a.size()) + " @ " + std::to_string(c.b.size()) +
                 (c.symbolsA.empty() ? "" : ", symbolic"));
    expectGradientsMatch({arg(c.a, -2, 2, c.symbolsA), arg(c.b)}, binaryBuild(OpKind::Matmul));
  }
}

TEST_F(GradientTest, TransposeReshapeBroadcast) {
  expectGradientsMatch({arg({2, 3, 4})}, unaryBuild(OpKind::Transpose, axes({1, 2, 0})));
  expectGradientsMatch({arg({2, 6})}, unaryBuild(OpKind::Reshape, shape({3, -1, 2})));
  expectGradientsMatch({arg({})}, unaryBuild(OpKind::Reshape, shape({1, 1})));
  expectGradientsMatch({arg({5, 3}, -2, 2, {"n"})}, unaryBuild(OpKind::Reshape, shape({-1})));
  expectGradientsMatch({arg({3, 1})}, unaryBuild(OpKind::BroadcastTo, shape({2, 3, 4})));
  expectGradientsMatch({arg({4})}, unaryBuild(OpKind::BroadcastTo, shape({3, 4})));
}

TEST_F(GradientTest, Slices) {
  const std::vector<std::vector<SliceSpec>> cases = {
      {span(1, 4), index(2)},
      {span({}, {}, -1)},
      {span(-4, -1), index(-2)},
      {span(4, 2)}, // empty: zeros
      {span(-3, 4), span(1, -1)},
      {span(1, -1), span(1, 5)},
      {index(3)},
      {span(), index(-1)},
      {span(2), span({}, -2)},
      {span(-10, 10), span(7)},
  };
  for (const auto &specs : cases) {
    SCOPED_TRACE(Op(OpKind::Slice, slices(specs)).str());
    expectGradientsMatch({arg({5, 6})}, unaryBuild(OpKind::Slice, slices(specs)));
    expectGradientsMatch({arg({5, 6}, -2, 2, {"n"})}, unaryBuild(OpKind::Slice, slices(specs)));
    expectGradientsMatch({arg({5, 6}, -2, 2, {"n", "m"})}, unaryBuild(OpKind::Slice, slices(specs)));
  }
}

TEST_F(GradientTest, ConcatAndStack) {
  Build concat0 = [](Graph &graph, const std::vector<Value *> &x) {
    return op(graph, OpKind::Concat, x, axes({0}));
  };
  expectGradientsMatch({arg({2, 3}), arg({4, 3})}, concat0);
  expectGradientsMatch(
      {arg({2, 3}), arg({2, 1}), arg({2, 2})},
      [](Graph &graph, const std::vector<Value *> &x) { return op(graph, OpKind::Concat, x, axes({1})); });
  expectGradientsMatch({arg({5, 3}, -2, 2, {"n"}), arg({2, 3})}, concat0);
  expectGradientsMatch({arg({2, 3}), arg({5, 3}, -2, 2, {"n"}), arg({1, 3}), arg({2, 3})}, concat0);
  expectGradientsMatch(
      {arg({2, 3}), arg({2, 3}), arg({2, 3})},
      [](Graph &graph, const std::vector<Value *> &x) { return op(graph, OpKind::Stack, x, axes({0})); });
  expectGradientsMatch(
      {arg({2, 3}, -2, 2, {"n"}), arg({2, 3}, -2, 2, {"n"})},
      [](Graph &graph, const std::vector<Value *> &x) { return op(graph, OpKind::Stack, x, axes({2})); });
}

TEST_F(GradientTest, Cumsum) {
  expectGradientsMatch({arg({3, 4})}, unaryBuild(OpKind::Cumsum, axes({1})));
  expectGradientsMatch({arg({3, 4})}, unaryBuild(OpKind::Cumsum, axes({0})));
  expectGradientsMatch({arg({3, 4})}, unaryBuild(OpKind::Cumsum));
  expectGradientsMatch({arg({5, 3}, -2, 2, {"n"})}, unaryBuild(OpKind::Cumsum));
}

/// A scan node reading `carries`, `sequences` and `invariants`, its body made by `step` from the body's
/// inputs (carries, slices, invariants), returning the new carries then any per-step results.
Node *scanOf(Graph &graph, const std::vector<Value *> &carries, const std::vector<Value *> &sequences,
             const std::vector<Value *> &invariants, const std::vector<bool> &stacked, bool reverse,
             const std::function<std::vector<Value *>(Graph &, const std::vector<Value *> &)> &step,
             int64_t length = 0) {
  auto loop = std::make_shared<Loop>();
  loop->carries = carries.size();
  loop->sequences = sequences.size();
  loop->stacked = stacked;
  loop->reverse = reverse;
  loop->length = length;
  Graph &body = loop->body.graph;
  std::vector<Value *> operands, inputs;
  for (Value *carry : carries)
    operands.push_back(carry);
  for (Value *sequence : sequences)
    operands.push_back(sequence);
  for (Value *invariant : invariants)
    operands.push_back(invariant);
  for (size_t i = 0; i < operands.size(); ++i) {
    TensorType type = operands[i]->type();
    if (i >= carries.size() && i < carries.size() + sequences.size()) type.shape.erase(type.shape.begin());
    inputs.push_back(body.addInput(type, "b" + std::to_string(i)));
    loop->body.inputs.push_back({inputs.back()->name(), inputs.back(), {}});
  }
  for (Value *output : step(body, inputs)) {
    body.addOutput(output);
    loop->body.outputs.push_back({"", output});
  }
  OpAttrs attrs;
  attrs.loop = std::move(loop);
  return graph.addNode(Op(OpKind::Scan, std::move(attrs)), std::move(operands));
}

/// tanh(x @ W + h @ U): an Elman step.
std::vector<Value *> elmanStep(Graph &body, const std::vector<Value *> &in) {
  Value *h = in[0], *x = in[1], *W = in[2], *U = in[3];
  return {op(body, OpKind::Tanh,
             {op(body, OpKind::Add, {op(body, OpKind::Matmul, {x, W}), op(body, OpKind::Matmul, {h, U})})})};
}

TEST_F(GradientTest, ScanThroughTime) {
  // An Elman recurrence both ways: gradients in the initial carry, every slice and both weights.
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "reverse" : "forward");
    expectGradientsMatch(
        {arg({3}, -1, 1), arg({4, 2}), arg({2, 3}, -1, 1), arg({3, 3}, -1, 1)},
        [&](Graph &graph, const std::vector<Value *> &x) {
          return scanOf(graph, {x[0]}, {x[1]}, {x[2], x[3]}, {true}, reverse, elmanStep)->output();
        });
  }
  // A carry of which only the last value is kept, a per-step result, a symbolic number of steps.
  expectGradientsMatch(
      {arg({3}, -1, 1), arg({3}, -1, 1), arg({5, 3}, -2, 2, {"t"}), arg({3})},
      [](Graph &graph, const std::vector<Value *> &x) {
        Node *scan = scanOf(
            graph, {x[0], x[1]}, {x[2]}, {x[3]}, {true, false}, false,
            [](Graph &body, const std::vector<Value *> &in) {
              Value *h = in[0], *c = in[1], *s = in[2], *w = in[3];
              Value *next =
                  op(body, OpKind::Tanh,
                     {op(body, OpKind::Add, {op(body, OpKind::Mul, {s, w}), op(body, OpKind::Mul, {h, c})})});
              Value *kept = op(body, OpKind::Mul, {c, op(body, OpKind::Sigmoid, {next})});
              return std::vector<Value *>{next, kept, op(body, OpKind::Sin, {next})};
            });
        Value *both = op(graph, OpKind::Add, {scan->outputs()[0], scan->outputs()[2]});
        return op(graph, OpKind::Add, {both, scan->outputs()[1]});
      });
  // No sequence: a fixed number of steps over an invariant.
  expectGradientsMatch({arg({2}, -1, 1), arg({2, 2}, -1, 1)},
                       [](Graph &graph, const std::vector<Value *> &x) {
                         return scanOf(
                                    graph, {x[0]}, {}, {x[1]}, {true}, false,
                                    [](Graph &body, const std::vector<Value *> &in) {
                                      return std::vector<Value *>{
                                          op(body, OpKind::Tanh, {op(body, OpKind::Matmul, {in[0], in[1]})})};
                                    },
                                    3)
                             ->output();
                       });
}

TEST_F(GradientTest, ScanGradientsDifferentiateAgain) {
  // The gradient of an Elman recurrence in its weights is a backward scan (carries kept last only, per-step
  // results); differentiating that gradient goes through it.
  expectGradientsMatch(
      {arg({3}, -1, 1), arg({4, 2}), arg({2, 3}, -1, 1), arg({3, 3}, -1, 1)},
      [](Graph &graph, const std::vector<Value *> &x) {
        Value *hs = scanOf(graph, {x[0]}, {x[1]}, {x[2], x[3]}, {true}, false, elmanStep)->output();
        Value *cost = sumAll(graph, op(graph, OpKind::Mul, {hs, hs}));
        return grad(graph, cost, {x[3]}, {})[0];
      });
}

TEST_F(GradientTest, SoftmaxCrossEntropyChain) {
  // A chain with reuse, keepdims reductions and broadcasting: -mean(sum(t * log(softmax(X @ W + b)), axis
  // 1)).
  expectGradientsMatch(
      {arg({5, 3}, -2, 2, {"n"}), arg({3, 4}), arg({4}), arg({5, 4}, 0, 1, {"n"})},
      [](Graph &graph, const std::vector<Value *> &x) {
        Value *logits = op(graph, OpKind::Add, {op(graph, OpKind::Matmul, {x[0], x[1]}), x[2]});
        Value *shifted = op(graph, OpKind::Sub, {logits, op(graph, OpKind::Max, {logits}, axes({1}, true))});
        Value *e = op(graph, OpKind::Exp, {shifted});
        Value *p = op(graph, OpKind::Div, {e, op(graph, OpKind::Sum, {e}, axes({1}, true))});
        Value *loss =
            op(graph, OpKind::Sum, {op(graph, OpKind::Mul, {x[3], op(graph, OpKind::Log, {p})})}, axes({1}));
        return op(graph, OpKind::Neg, {op(graph, OpKind::Mean, {loss}, axes({0}))});
      });
}

// ---- Closed forms
// --------------------------------------------------------------------------------------------

TEST_F(GradientTest, SumOfSquaresIsTwiceX) {
  Graph graph;
  Value *x = graph.addInput({DType::F64, {Dim::named("n")}}, "x");
  Value *gradient = grad(graph, sumAll(graph, op(graph, OpKind::Mul, {x, x})), {x}, {})[0];
  EXPECT_EQ(gradient->type().str(), "f64[n]");
  graph.addOutput(gradient);
  EXPECT_EQ(valuesOf(runtime::Executor(graph).run({given({3}, {1.5, -2, 0.25}).value})[0]),
            (std::vector<double>{3, -4, 0.5}));
}

TEST_F(GradientTest, LeastSquaresGradient) {
  // d/dW mean((X @ W - y) ** 2) = 2/N X^T (X W - y).
  Graph graph;
  Value *x = graph.addInput({DType::F64, {Dim::named("n"), Dim::of(3)}}, "X");
  Value *w = graph.addInput({DType::F64, {Dim::of(3)}}, "W");
  Value *y = graph.addInput({DType::F64, {Dim::named("n")}}, "y");
  Value *residual = op(graph, OpKind::Sub, {op(graph, OpKind::Matmul, {x, w}), y});
  Value *cost = op(graph, OpKind::Mean, {op(graph, OpKind::Pow, {residual, constant(graph, 2)})}, axes({0}));
  Value *gradient = grad(graph, cost, {w}, {})[0];
  EXPECT_EQ(gradient->type().str(), "f64[3]");
  graph.addOutput(gradient);
  Arg xs = arg({5, 3}), ws = arg({3}), ys = arg({5});
  std::vector<double> xv = valuesOf(xs.value), wv = valuesOf(ws.value), yv = valuesOf(ys.value);
  std::vector<double> expected(3, 0);
  for (int i = 0; i < 5; ++i) {
    double r = xv[i * 3] * wv[0] + xv[i * 3 + 1] * wv[1] + xv[i * 3 + 2] * wv[2] - yv[i];
    for (int j = 0; j < 3; ++j)
      expected[j] += 2.0 / 5 * xv[i * 3 + j] * r;
  }
  std::vector<double> actual = valuesOf(runtime::Executor(graph).run({xs.value, ws.value, ys.value})[0]);
  for (int j = 0; j < 3; ++j)
    EXPECT_NEAR(actual[j], expected[j], 1e-12 * std::max(1.0, std::abs(expected[j])));
}

// ---- Which values get what
// -----------------------------------------------------------------------------------

TEST_F(GradientTest, DisconnectedWrtIsAnErrorUnlessZerosAreAskedFor) {
  Graph graph;
  Value *x = graph.addInput({DType::F64, {Dim::of(2)}}, "x");
  Value *unused = graph.addInput({DType::F64, {Dim::of(3)}}, "u");
  Value *symbolic = graph.addInput({DType::F64, {Dim::named("n")}}, "s");
  Value *floored = graph.addInput({DType::F64, {Dim::of(2)}}, "f");
  Value *cost = sumAll(graph, op(graph, OpKind::Add, {x, op(graph, OpKind::Floor, {floored})}));
  // By default a value the cost does not depend on is an error naming it; one it reaches only through floor
  // is connected, with zeros for its gradient.
  try {
    grad(graph, cost, {floored, unused}, {});
    FAIL() << "a disconnected wrt was accepted";
  } catch (const ir::UserError &error) {
    EXPECT_NE(error.message.find("does not depend on 'u'"), std::string::npos) << error.message;
  }
  std::vector<Value *> grads = grad(graph, cost, {unused, symbolic, floored}, {}, Disconnected::Zero);
  EXPECT_EQ(grads[0]->owner()->op().str(), "zeros{shape=[3], dtype=f64}");
  EXPECT_EQ(grads[1]->owner()->op().kind(), OpKind::ZerosLike);
  EXPECT_EQ(grads[1]->type().str(), "f64[n]");
  for (Value *gradient : grads)
    graph.addOutput(gradient);
  std::vector<Tensor> outputs =
      runtime::Executor(graph).run({given({2}, {1, 2}).value, given({3}, {1, 2, 3}).value,
                                    given({4}, {1, 2, 3, 4}).value, given({2}, {0.5, 1.5}).value});
  EXPECT_EQ(valuesOf(outputs[0]), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(valuesOf(outputs[1]), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(valuesOf(outputs[2]), (std::vector<double>{0, 0}));
}

TEST_F(GradientTest, WrtCanBeAnIntermediateValueOrTheCost) {
  Graph graph;
  Value *x = graph.addInput({DType::F64, {Dim::of(2)}}, "x");
  Value *e = op(graph, OpKind::Exp, {x});
  Value *cost = sumAll(graph, op(graph, OpKind::Mul, {e, constant(graph, 3)}));
  std::vector<Value *> grads = grad(graph, cost, {e, x, cost}, {});
  for (Value *gradient : grads)
    graph.addOutput(gradient);
  std::vector<Tensor> outputs = runtime::Executor(graph).run({given({2}, {0, 1}).value});
  EXPECT_EQ(valuesOf(outputs[0]), (std::vector<double>{3, 3}));
  EXPECT_EQ(valuesOf(outputs[1]), (std::vector<double>{3, 3 * std::exp(1.0)}));
  EXPECT_EQ(valuesOf(outputs[2]), (std::vector<double>{1}));
}

TEST_F(GradientTest, GradientNodesCarryTheForwardLocation) {
  Graph graph;
  Value *x = graph.addInput({DType::F64, {Dim::of(2)}}, "x");
  Value *e = graph.addNode(Op(OpKind::Exp), {x}, at(4, 9))->output();
  Value *cost = graph.addNode(Op(OpKind::Sum, axes({0})), {e}, at(5, 3))->output();
  Value *gradient = grad(graph, cost, {x}, at(6, 1))[0];
  EXPECT_EQ(gradient->owner()->op().kind(), OpKind::Mul);
  EXPECT_EQ(gradient->owner()->loc().str(), "g.tg:4:9");
}

// ---- User errors
// ---------------------------------------------------------------------------------------------

TEST_F(GradientTest, TheCostMustBeAFloatScalar) {
  Graph graph;
  Value *x = graph.addInput({DType::F32, {Dim::of(3)}}, "x");
  Value *n = graph.addInput({DType::I64, {}}, "n");
  UserError error = errorOf([&] { grad(graph, x, {x}, at(2, 5)); });
  EXPECT_EQ(error.message, "grad: the cost must be a scalar, but it is f32[3]");
  EXPECT_EQ(error.loc.str(), "g.tg:2:5");
  EXPECT_EQ(errorOf([&] { grad(graph, n, {x}, at(2, 5)); }).message,
            "grad: the cost must be a float scalar, but it is i64");
}

TEST_F(GradientTest, WrtMustBeFloat) {
  Graph graph;
  Value *x = graph.addInput({DType::F64, {Dim::of(3)}}, "x");
  Value *n = graph.addInput({DType::I64, {Dim::of(3)}}, "n");
  Value *flag = graph.addInput({DType::Bool, {}}, "flag");
  Value *cost = sumAll(graph, op(graph, OpKind::Mul, {x, op(graph, OpKind::Cast, {n}, dtype(DType::F64))}));
  EXPECT_EQ(errorOf([&] {
              grad(graph, cost, {x, n}, at(3, 1));
            }).message,
            "grad: cannot differentiate with respect to 'n', an integer tensor");
  EXPECT_EQ(errorOf([&] { grad(graph, cost, {flag}, at(3, 1)); }).message,
            "grad: cannot differentiate with respect to 'flag', a bool tensor");
}

TEST_F(GradientTest, NonDifferentiableOpsOnThePathAreReportedAtTheOp) {
  Graph graph;
  Value *x = graph.addInput({DType::F64, {Dim::of(3)}}, "x");
  Value *sorted = graph.addNode(Op(OpKind::Sort, axes({0})), {x}, at(7, 12))->output();
  UserError error = errorOf([&] { grad(graph, sumAll(graph, sorted), {x}, at(8, 1)); });
  EXPECT_EQ(error.message, "grad: 'sort' is not differentiable");
  EXPECT_EQ(error.loc.str(), "g.tg:7:12");

  Value *matrix = graph.addInput({DType::F64, {Dim::named("n"), Dim::named("m")}}, "M");
  Value *flat = op(graph, OpKind::Reshape, {matrix}, shape({-1}));
  EXPECT_EQ(
      errorOf([&] { grad(graph, sumAll(graph, flat), {matrix}, {}); }).message,
      "grad: reshape of a symbolic shape is not differentiable yet: the gradient cannot be reshaped back to "
      "f64[n, m], which has more than one symbolic dimension");

  Value *joined = op(graph, OpKind::Concat, {matrix, matrix}, axes({0}));
  EXPECT_EQ(errorOf([&] { grad(graph, sumAll(graph, joined), {matrix}, {}); }).message,
            "grad: concat of several arrays with symbolic sizes along the axis is not differentiable yet");
}

TEST_F(GradientTest, BuildingTwiceGivesTheSameGraph) {
  auto build = [] {
    Graph graph;
    Value *x = graph.addInput({DType::F32, {Dim::named("n"), Dim::of(4)}}, "X");
    Value *w = graph.addInput({DType::F32, {Dim::of(4)}}, "w");
    Value *b = graph.addInput({DType::F32, {}}, "b");
    Value *p = op(graph, OpKind::Sigmoid, {op(graph, OpKind::Add, {op(graph, OpKind::Matmul, {x, w}), b})});
    Value *cost = op(graph, OpKind::Mean, {op(graph, OpKind::Mul, {p, p})}, axes({0}));
    for (Value *gradient : grad(graph, cost, {w, b, x}, {}))
      graph.addOutput(gradient);
    EXPECT_TRUE(graph.verify().empty());
    return printIr(graph);
  };
  std::string first = build();
  EXPECT_EQ(first, build());
  EXPECT_NE(first.find("matmul"), std::string::npos) << first;
}

} // namespace
} // namespace tg::ir
