// The CPU kernels against hand-computed NumPy results. Output types come from ir::inferType, so these tests
// also check that kernels and type inference agree on dtypes and static shapes.
#include "runtime/Kernels.h"

#include "ir/SourceLoc.h"
#include "runtime/Random.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <optional>

namespace {

using tg::ir::DType;
using tg::ir::Number;
using tg::ir::Op;
using tg::ir::OpAttrs;
using tg::ir::OpKind;
using tg::ir::SliceSpec;
using tg::ir::TensorType;
using tg::ir::UserError;
using tg::runtime::Tensor;
using Values = std::vector<double>;
using Shape = std::vector<int64_t>;

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Tensor tensor(DType dtype, Shape shape, const Values &values) {
  tg::ir::TensorData data(dtype, std::move(shape));
  EXPECT_EQ(data.numElements(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i)
    data.set(static_cast<int64_t>(i), values[i]);
  return Tensor::fromData(data);
}
Tensor f64(Shape shape, const Values &values) {
  return tensor(DType::F64, std::move(shape), values);
}
Tensor f32(Shape shape, const Values &values) {
  return tensor(DType::F32, std::move(shape), values);
}
Tensor i64(Shape shape, const Values &values) {
  return tensor(DType::I64, std::move(shape), values);
}
Tensor i32(Shape shape, const Values &values) {
  return tensor(DType::I32, std::move(shape), values);
}
Tensor boolean(Shape shape, const Values &values) {
  return tensor(DType::Bool, std::move(shape), values);
}

Values values(const Tensor &t) {
  tg::ir::TensorData data = t.toData();
  Values result;
  for (int64_t i = 0; i < data.numElements(); ++i)
    result.push_back(data.get(i));
  return result;
}

/// Runs `op` with the output type that inferType gives for static input types, and checks the result's shape
/// against it.
Tensor run(const Op &op, const std::vector<Tensor> &inputs) {
  std::vector<TensorType> types;
  for (const Tensor &input : inputs) {
    TensorType type{input.dtype(), {}};
    for (int64_t size : input.shape())
      type.shape.push_back(tg::ir::Dim::of(size));
    types.push_back(type);
  }
  TensorType output = tg::ir::inferType(op, types);
  Tensor result = tg::runtime::runOp(op, inputs, {output})[0];
  EXPECT_EQ(result.rank(), output.rank()) << op.str();
  for (size_t i = 0; i < output.rank() && i < result.rank(); ++i)
    if (output.shape[i].isStatic()) {
      EXPECT_EQ(result.shape()[i], output.shape[i].size()) << op.str() << " axis " << i;
    }
  return result;
}
Tensor run(OpKind kind, const std::vector<Tensor> &inputs, OpAttrs attrs = {}) {
  return run(Op(kind, std::move(attrs)), inputs);
}

/// Runs `op` as on inputs of symbolic shapes, whose problems only show at run time; returns the error
/// message.
std::string runError(OpKind kind, const std::vector<Tensor> &inputs, OpAttrs attrs = {}) {
  try {
    tg::runtime::runOp(Op(kind, std::move(attrs)), inputs, {TensorType{inputs[0].dtype(), {}}});
  } catch (const UserError &error) {
    return error.message;
  }
  return "(no error)";
}

OpAttrs axes(std::vector<int64_t> list, bool keepdims = false) {
  OpAttrs attrs;
  attrs.axes = std::move(list);
  attrs.keepdims = keepdims;
  return attrs;
}
OpAttrs withShape(Shape shape, DType dtype = DType::F32) {
  OpAttrs attrs;
  attrs.shape = std::move(shape);
  attrs.dtype = dtype;
  return attrs;
}

/// Values equal elementwise, NaN matching NaN.
void expectValues(const Tensor &t, const Values &expected, double tolerance = 0) {
  Values actual = values(t);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(actual[i])) << "element " << i << " is " << actual[i];
    else
      EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
  }
}

// ---- elementwise ----

TEST(KernelsTest, BroadcastsLikeNumpy) {
  Tensor column = f64({3, 1}, {1, 2, 3});
  Tensor row = f64({1, 4}, {10, 20, 30, 40});
  Tensor sum = run(OpKind::Add, {column, row});
  EXPECT_EQ(sum.shape(), (Shape{3, 4}));
  expectValues(sum, {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  expectValues(run(OpKind::Mul, {f64({}, {2}), f64({2, 2}, {1, 2, 3, 4})}), {2, 4, 6, 8});
  expectValues(run(OpKind::Sub, {f64({2, 1, 2}, {1, 2, 3, 4}), f64({2}, {1, 1})}), {0, 1, 2, 3});
  EXPECT_EQ(runError(OpKind::Add, {f64({3, 4}, Values(12)), f64({5}, Values(5))}),
            "cannot broadcast shapes (3, 4) and (5,)");
}

TEST(KernelsTest, ElementwiseReadsStridedViews) {
  Tensor matrix = f64({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor transposed = matrix.permuted({1, 0}); // [[1, 4], [2, 5], [3, 6]]
  expectValues(run(OpKind::Add, {transposed, f64({3, 2}, {0, 0, 0, 0, 0, 10})}), {1, 4, 2, 5, 3, 16});
  expectValues(run(OpKind::Neg, {transposed}), {-1, -4, -2, -5, -3, -6});
}

TEST(KernelsTest, ModTakesTheDivisorsSign) {
  expectValues(run(OpKind::Mod, {i64({4}, {-7, 7, -7, 7}), i64({4}, {3, 3, -3, -3})}), {2, 1, -1, -2});
  expectValues(
      run(OpKind::Mod, {i32({3}, {5, -5, std::numeric_limits<int32_t>::min()}), i32({3}, {0, 0, -1})}),
      {0, 0, 0});
  expectValues(run(OpKind::Mod, {f64({4}, {-7.5, 7.5, 0, 1}), f64({4}, {2, -2, -2, 0})}),
               {0.5, -0.5, 0, kNan});
  EXPECT_TRUE(std::signbit(values(run(OpKind::Mod, {f64({1}, {0}), f64({1}, {-2})}))[0]));
}

TEST(KernelsTest, IntegerPowAndWrapAround) {
  expectValues(run(OpKind::Pow, {i64({4}, {2, -3, 0, 7}), i64({4}, {10, 3, 0, 1})}), {1024, -27, 1, 7});
  EXPECT_EQ(runError(OpKind::Pow, {i64({2}, {2, 2}), i64({2}, {1, -1})}),
            "integers to negative integer powers are not allowed");
  expectValues(run(OpKind::Pow, {f32({2}, {4, 2}), f32({2}, {0.5, -1})}), {2, 0.5});
  double max32 = std::numeric_limits<int32_t>::max(), min32 = std::numeric_limits<int32_t>::min();
  expectValues(run(OpKind::Add, {i32({1}, {max32}), i32({1}, {1})}), {min32});
  expectValues(run(OpKind::Neg, {i32({2}, {min32, 5})}), {min32, -5});
  expectValues(run(OpKind::Abs, {i32({2}, {min32, -5})}), {min32, 5});
}

TEST(KernelsTest, UnaryFunctions) {
  expectValues(run(OpKind::Round, {f64({6}, {0.5, 1.5, 2.5, -0.5, -2.5, 2.6})}), {0, 2, 2, -0.0, -2, 3});
  expectValues(run(OpKind::Sign, {f64({4}, {-2, 0, 3, kNan})}), {-1, 0, 1, kNan});
  expectValues(run(OpKind::Sign, {i64({3}, {-5, 0, 9})}), {-1, 0, 1});
  expectValues(run(OpKind::Sigmoid, {f32({5}, {-1000, -1, 0, 1, 1000})}),
               {0, 1 / (1 + std::exp(1.0)), 0.5, 1 / (1 + std::exp(-1.0)), 1}, 1e-7);
  expectValues(run(OpKind::Softplus, {f64({4}, {-1000, 0, 1, 1000})}),
               {0, std::log(2.0), std::log1p(std::exp(1.0)), 1000}, 1e-12);
  expectValues(run(OpKind::Relu, {f64({3}, {-1, 2, kNan})}), {0, 2, kNan});
  expectValues(run(OpKind::Relu, {i32({2}, {-1, 2})}), {0, 2});
  expectValues(run(OpKind::Rsqrt, {f64({2}, {4, 0.25})}), {0.5, 2});
  expectValues(run(OpKind::Floor, {f64({3}, {-3.5, 4, 0.5})}), {-4, 4, 0});
  expectValues(run(OpKind::Ceil, {f32({2}, {-1.5, 1.2})}), {-1, 2});
  expectValues(run(OpKind::Erf, {f64({2}, {0, 1})}), {0, std::erf(1.0)});
  Values x = {0.1, 0.5, 2};
  struct {
    OpKind kind;
    double (*reference)(double);
  } functions[] = {{OpKind::Exp, std::exp},     {OpKind::Log, std::log},   {OpKind::Log1p, std::log1p},
                   {OpKind::Expm1, std::expm1}, {OpKind::Sqrt, std::sqrt}, {OpKind::Sin, std::sin},
                   {OpKind::Cos, std::cos},     {OpKind::Tanh, std::tanh}, {OpKind::Abs, std::fabs},
                   {OpKind::Tan, std::tan},     {OpKind::Atan, std::atan}, {OpKind::Sinh, std::sinh},
                   {OpKind::Cosh, std::cosh},   {OpKind::Log2, std::log2}, {OpKind::Exp2, std::exp2}};
  for (const auto &function : functions) {
    Values expected;
    for (double v : x)
      expected.push_back(function.reference(v));
    expectValues(run(function.kind, {f64({3}, x)}), expected, 1e-15);
    expectValues(run(function.kind, {f32({3}, x)}), expected, 1e-6);
  }
}

TEST(KernelsTest, MaximumMinimumAndClipPropagateNan) {
  Tensor a = f64({3}, {1, kNan, 5}), b = f64({3}, {kNan, 2, 3});
  expectValues(run(OpKind::Maximum, {a, b}), {kNan, kNan, 5});
  expectValues(run(OpKind::Minimum, {a, b}), {kNan, kNan, 3});
  expectValues(run(OpKind::Clip, {f64({4}, {-5, 0.5, 9, kNan}), f64({}, {0}), f64({}, {1})}),
               {0, 0.5, 1, kNan});
  expectValues(run(OpKind::Maximum, {i64({2}, {1, 7}), i64({2}, {3, 2})}), {3, 7});
}

TEST(KernelsTest, ComparisonsLogicAndWhere) {
  Tensor a = f64({4}, {1, 2, 3, kNan}), b = f64({4}, {2, 2, 2, kNan});
  Tensor less = run(OpKind::Lt, {a, b});
  EXPECT_EQ(less.dtype(), DType::Bool);
  expectValues(less, {1, 0, 0, 0});
  expectValues(run(OpKind::Ge, {a, b}), {0, 1, 1, 0});
  expectValues(run(OpKind::Ne, {a, b}), {1, 0, 1, 1});
  Tensor p = boolean({4}, {1, 1, 0, 0}), q = boolean({4}, {1, 0, 1, 0});
  expectValues(run(OpKind::And, {p, q}), {1, 0, 0, 0});
  expectValues(run(OpKind::Or, {p, q}), {1, 1, 1, 0});
  expectValues(run(OpKind::Not, {p}), {0, 0, 1, 1});
  expectValues(run(OpKind::Where, {boolean({2, 1}, {1, 0}), i64({2}, {1, 2}), i64({}, {-1})}),
               {1, 2, -1, -1});
}

TEST(KernelsTest, CastsLikeNumpy) {
  OpAttrs toI32;
  toI32.dtype = DType::I32;
  expectValues(run(OpKind::Cast, {f32({4}, {-2.7, 2.7, 1e10, kNan})}, toI32),
               {-2, 2, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::min()});
  OpAttrs toBool;
  toBool.dtype = DType::Bool;
  expectValues(run(OpKind::Cast, {f64({4}, {0, -0.0, 0.1, kNan})}, toBool), {0, 0, 1, 1});
  OpAttrs toF32;
  toF32.dtype = DType::F32;
  Tensor converted = run(OpKind::Cast, {boolean({2}, {1, 0})}, toF32);
  EXPECT_EQ(converted.dtype(), DType::F32);
  expectValues(converted, {1, 0});
  expectValues(run(OpKind::Cast, {f64({2}, {-2.7, 2.7})}, toI32), {-2, 2});
}

// ---- reductions ----

TEST(KernelsTest, SumsOverAxes) {
  Tensor x = f64({2, 3}, {1, 2, 3, 4, 5, 6});
  expectValues(run(OpKind::Sum, {x}, axes({0})), {5, 7, 9});
  expectValues(run(OpKind::Sum, {x}, axes({1})), {6, 15});
  Tensor all = run(OpKind::Sum, {x}, axes({0, 1}));
  EXPECT_EQ(all.rank(), 0u);
  expectValues(all, {21});
  EXPECT_EQ(run(OpKind::Sum, {x}, axes({1}, true)).shape(), (Shape{2, 1}));
  expectValues(run(OpKind::Sum, {x.permuted({1, 0})}, axes({1})), {5, 7, 9});
  Tensor ints = run(OpKind::Sum, {i32({3}, {2147483647, 1, 1})}, axes({0}));
  EXPECT_EQ(ints.dtype(), DType::I64);
  expectValues(ints, {2147483649.0});
  Tensor count = run(OpKind::Sum, {boolean({3}, {1, 0, 1})}, axes({0}));
  EXPECT_EQ(count.dtype(), DType::I64);
  expectValues(count, {2});
  Tensor mean = run(OpKind::Mean, {i32({2, 2}, {1, 2, 3, 5})}, axes({1}));
  EXPECT_EQ(mean.dtype(), DType::F64);
  expectValues(mean, {1.5, 4});
  expectValues(run(OpKind::Prod, {i64({2, 2}, {1, 2, 3, 5})}, axes({0})), {3, 10});
}

TEST(KernelsTest, FloatSumsAreAccurate) {
  // A million copies of 0.1f: an f32 accumulator would drift by about 1%.
  Tensor x = Tensor::empty(DType::F32, {1000000});
  std::fill_n(x.data<float>(), 1000000, 0.1f);
  double exact = 1000000 * static_cast<double>(0.1f);
  expectValues(run(OpKind::Sum, {x}, axes({0})), {exact}, exact * 1e-7);
  expectValues(run(OpKind::Mean, {x}, axes({0})), {0.1}, 1e-7);
}

TEST(KernelsTest, MaxMinArgmaxFollowNumpy) {
  Tensor x = f64({2, 3}, {3, 1, 3, kNan, 0, kNan});
  expectValues(run(OpKind::Max, {x}, axes({1})), {3, kNan});
  expectValues(run(OpKind::Min, {x}, axes({0})), {kNan, 0, kNan});
  expectValues(run(OpKind::Argmax, {x}, axes({1})), {0, 0});
  expectValues(run(OpKind::Argmin, {x}, axes({1})), {1, 0});
  expectValues(run(OpKind::Argmin, {x}, axes({0})), {1, 1, 1});
  Tensor flat = run(OpKind::Argmax, {i64({2, 3}, {1, 9, 2, 9, 0, 0})});
  EXPECT_EQ(flat.rank(), 0u);
  expectValues(flat, {1});
  Tensor kept = run(OpKind::Argmin, {i64({2, 3}, {1, 9, 2, 9, 0, 0})}, axes({}, true));
  EXPECT_EQ(kept.shape(), (Shape{1, 1}));
  expectValues(kept, {4});
  expectValues(run(OpKind::Any, {f64({2, 2}, {0, kNan, 0, 0})}, axes({1})), {1, 0});
  expectValues(run(OpKind::All, {i32({2, 2}, {1, 2, 0, 3})}, axes({1})), {1, 0});
}

TEST(KernelsTest, EmptyReductions) {
  Tensor empty = f64({0, 3}, {});
  expectValues(run(OpKind::Sum, {empty}, axes({0})), {0, 0, 0});
  expectValues(run(OpKind::Prod, {empty}, axes({0})), {1, 1, 1});
  expectValues(run(OpKind::Mean, {empty}, axes({0})), {kNan, kNan, kNan});
  expectValues(run(OpKind::Max, {empty}, axes({1})), {});
  EXPECT_EQ(runError(OpKind::Max, {empty}, axes({0})),
            "zero-size array to reduction operation max which has no identity");
  EXPECT_EQ(runError(OpKind::Argmin, {empty}),
            "zero-size array to reduction operation argmin which has no identity");
}

// ---- matmul ----

/// The product by definition, for checking BLAS.
Values naiveMatmul(const Values &a, const Values &b, int64_t n, int64_t k, int64_t m) {
  Values c(n * m, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t p = 0; p < k; ++p)
        c[i * m + j] += a[i * k + p] * b[p * m + j];
  return c;
}

TEST(KernelsTest, MatmulShapes) {
  Values a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    Tensor product = run(OpKind::Matmul, {tensor(dtype, {2, 3}, a), tensor(dtype, {3, 2}, b)});
    EXPECT_EQ(product.dtype(), dtype);
    expectValues(product, naiveMatmul(a, b, 2, 3, 2));
  }
  Tensor dot = run(OpKind::Matmul, {f64({3}, {1, 2, 3}), f64({3}, {4, 5, 6})});
  EXPECT_EQ(dot.rank(), 0u);
  expectValues(dot, {32});
  expectValues(run(OpKind::Matmul, {f64({2, 3}, a), f64({3}, {1, 0, -1})}), {-2, -2});
  expectValues(run(OpKind::Matmul, {f32({2}, {1, -1}), f32({2, 3}, a)}), {-3, -3, -3});
  expectValues(run(OpKind::Matmul, {boolean({2, 2}, {1, 0, 0, 0}), boolean({2, 2}, {1, 1, 1, 1})}),
               {1, 1, 0, 0});
  expectValues(run(OpKind::Matmul, {f64({2, 0}, {}), f64({0, 2}, {})}), {0, 0, 0, 0});
  EXPECT_EQ(runError(OpKind::Matmul, {f64({2, 3}, Values(6)), f64({4, 5}, Values(20))}),
            "matmul: inner dimensions do not match: (2, 3) @ (4, 5)");
}

TEST(KernelsTest, MatmulTransposedAndBatched) {
  Values a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  // (3, 2)^T read in place (column-major) and a strided column slice.
  Tensor aT = f64({3, 2}, {1, 4, 2, 5, 3, 6}).permuted({1, 0});
  expectValues(run(OpKind::Matmul, {aT, f64({3, 2}, b)}), naiveMatmul(a, b, 2, 3, 2));
  Tensor bT = f32({2, 3}, {7, 9, 11, 8, 10, 12}).permuted({1, 0});
  expectValues(run(OpKind::Matmul, {f32({2, 3}, a), bT}), naiveMatmul(a, b, 2, 3, 2));

  // (2, 1, 2, 3) @ (3, 3, 2): batch dims (2, 1) and (3,) broadcast to (2, 3).
  Values left(12), right(18);
  for (size_t i = 0; i < left.size(); ++i)
    left[i] = double(i) - 4;
  for (size_t i = 0; i < right.size(); ++i)
    right[i] = double(i % 7) * 0.5;
  for (DType dtype : {DType::F64, DType::I64}) {
    Values r = right;
    if (dtype == DType::I64)
      for (double &v : r)
        v = std::floor(v);
    Tensor product = run(OpKind::Matmul, {tensor(dtype, {2, 1, 2, 3}, left), tensor(dtype, {3, 3, 2}, r)});
    EXPECT_EQ(product.shape(), (Shape{2, 3, 2, 2}));
    Values expected;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) {
        Values block = naiveMatmul(Values(left.begin() + 6 * i, left.begin() + 6 * i + 6),
                                   Values(r.begin() + 6 * j, r.begin() + 6 * j + 6), 2, 3, 2);
        expected.insert(expected.end(), block.begin(), block.end());
      }
    expectValues(product, expected);
  }
}

// ---- shapes ----

TEST(KernelsTest, TransposeReshapeBroadcast) {
  Tensor x = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor t = run(OpKind::Transpose, {x}, axes({1, 0}));
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  expectValues(t, {1, 4, 2, 5, 3, 6});
  Tensor r = run(OpKind::Reshape, {t}, withShape({-1, 3}));
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  expectValues(r, {1, 4, 2, 5, 3, 6});
  EXPECT_EQ(runError(OpKind::Reshape, {i64({12}, Values(12))}, withShape({5, -1})),
            "cannot reshape array of size 12 into shape (5, -1)");
  EXPECT_EQ(runError(OpKind::Reshape, {i64({12}, Values(12))}, withShape({5, 2})),
            "cannot reshape array of size 12 into shape (5, 2)");
  Tensor b = run(OpKind::BroadcastTo, {i64({3}, {1, 2, 3})}, withShape({2, 3}));
  expectValues(b, {1, 2, 3, 1, 2, 3});
  EXPECT_EQ(runError(OpKind::BroadcastTo, {i64({3}, Values(3))}, withShape({3, 2})),
            "cannot broadcast shape (3,) to (3, 2)");
}

SliceSpec range(std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step = 1) {
  SliceSpec spec;
  spec.hasStart = start.has_value();
  spec.hasStop = stop.has_value();
  spec.start = start.value_or(0);
  spec.stop = stop.value_or(0);
  spec.step = step;
  return spec;
}
SliceSpec index(int64_t i) {
  SliceSpec spec;
  spec.isIndex = true;
  spec.start = i;
  return spec;
}
OpAttrs slices(std::vector<SliceSpec> list) {
  OpAttrs attrs;
  attrs.slices = std::move(list);
  return attrs;
}

TEST(KernelsTest, SlicesLikePython) {
  Values ten;
  for (int i = 0; i < 10; ++i)
    ten.push_back(i);
  Tensor v = i64({10}, ten);
  expectValues(run(OpKind::Slice, {v}, slices({range(2, 8, 2)})), {2, 4, 6});
  expectValues(run(OpKind::Slice, {v}, slices({range({}, {}, -3)})), {9, 6, 3, 0});
  expectValues(run(OpKind::Slice, {v}, slices({range(-3, {})})), {7, 8, 9});
  expectValues(run(OpKind::Slice, {v}, slices({range(8, 2, -2)})), {8, 6, 4});
  expectValues(run(OpKind::Slice, {v}, slices({range(100, -100, -4)})), {9, 5, 1});
  expectValues(run(OpKind::Slice, {v}, slices({range(5, 2)})), {});
  expectValues(run(OpKind::Slice, {v}, slices({index(-1)})), {9});
  Tensor m = i64({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  Tensor column = run(OpKind::Slice, {m}, slices({range({}, {}), index(1)}));
  EXPECT_EQ(column.shape(), (Shape{3}));
  expectValues(column, {1, 11, 21});
  expectValues(run(OpKind::Slice, {m}, slices({range({}, {}, -1), range(1, 3)})), {21, 22, 11, 12, 1, 2});
  expectValues(run(OpKind::Slice, {m}, slices({index(2)})), {20, 21, 22, 23});
  EXPECT_EQ(runError(OpKind::Slice, {i64({3}, Values(3))}, slices({index(5)})),
            "index 5 is out of bounds for axis 0 with size 3");
  EXPECT_EQ(runError(OpKind::Slice, {i64({2, 3}, Values(6))}, slices({index(0), index(-4)})),
            "index -4 is out of bounds for axis 1 with size 3");
}

TEST(KernelsTest, ConcatAndStack) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 1}, {5, 6});
  Tensor joined = run(OpKind::Concat, {a, b}, axes({1}));
  EXPECT_EQ(joined.shape(), (Shape{2, 3}));
  expectValues(joined, {1, 2, 5, 3, 4, 6});
  expectValues(run(OpKind::Concat, {a, a.permuted({1, 0})}, axes({0})), {1, 2, 3, 4, 1, 3, 2, 4});
  EXPECT_EQ(runError(OpKind::Concat, {a, b}, axes({0})),
            "concat: input 1 has shape (2, 1), but input 0 has shape (2, 2); shapes must match except along "
            "axis 0");
  Tensor stacked = run(OpKind::Stack, {f32({2}, {1, 2}), f32({2}, {3, 4}), f32({2}, {5, 6})}, axes({-1}));
  EXPECT_EQ(stacked.shape(), (Shape{2, 3}));
  expectValues(stacked, {1, 3, 5, 2, 4, 6});
  expectValues(run(OpKind::Stack, {f32({2}, {1, 2}), f32({2}, {3, 4})}, axes({0})), {1, 2, 3, 4});
  EXPECT_EQ(runError(OpKind::Stack, {f32({2}, {1, 2}), f32({3}, {3, 4, 5})}, axes({0})),
            "stack: input 1 has shape (3,), but input 0 has shape (2,); all shapes must match");
}

// ---- creation ----

/// arange's attributes as the front end makes them: exact numbers, and the length as its shape.
OpAttrs arange(Number start, Number stop, Number step, DType dtype) {
  OpAttrs attrs = withShape({}, dtype);
  attrs.scalars = {start, stop, step};
  attrs.shape = {tg::ir::arangeLength(start, stop, step, dtype)};
  return attrs;
}
OpAttrs floatArange(double start, double stop, double step, DType dtype) {
  return arange(Number::ofFloat(start), Number::ofFloat(stop), Number::ofFloat(step), dtype);
}
OpAttrs intArange(int64_t start, int64_t stop, int64_t step, DType dtype) {
  return arange(Number::ofInt(start), Number::ofInt(stop), Number::ofInt(step), dtype);
}

TEST(KernelsTest, Creation) {
  expectValues(run(OpKind::Zeros, {}, withShape({2, 2})), {0, 0, 0, 0});
  expectValues(run(OpKind::Ones, {}, withShape({3}, DType::I32)), {1, 1, 1});
  OpAttrs full = withShape({2}, DType::F64);
  full.scalars = {Number::ofFloat(2.5)};
  expectValues(run(Op(OpKind::Full, full), {}), {2.5, 2.5});
  full.dtype = DType::I64;
  full.scalars = {Number::ofInt(9007199254740993)}; // 2**53 + 1: exact, not through a double
  Tensor big = run(Op(OpKind::Full, full), {});
  EXPECT_EQ(big.data<int64_t>()[1], 9007199254740993);
  expectValues(run(OpKind::Eye, {}, withShape({2, 3})), {1, 0, 0, 0, 1, 0});
  expectValues(run(Op(OpKind::Arange, floatArange(0, 1, 0.25, DType::F32)), {}), {0, 0.25, 0.5, 0.75});
  expectValues(run(Op(OpKind::Arange, floatArange(5, 0, -1.5, DType::F32)), {}), {5, 3.5, 2, 0.5});
  expectValues(run(Op(OpKind::Arange, intArange(0, 10, 3, DType::I64)), {}), {0, 3, 6, 9});
  expectValues(run(Op(OpKind::Arange, intArange(3, 1, 1, DType::I64)), {}), {});
  // NumPy fills f32 in f32 from the first two values: np.arange(0.3, 7.1, 0.37, dtype=np.float32)[14] is
  // 5.4800005, where float32(0.3 + 14 * 0.37) would be 5.48.
  Tensor steps = run(Op(OpKind::Arange, floatArange(0.3, 7.1, 0.37, DType::F32)), {});
  ASSERT_EQ(steps.numElements(), 19);
  EXPECT_EQ(steps.data<float>()[14], 5.4800005f);
  Tensor like = run(OpKind::OnesLike, {i32({2, 1}, {7, 8})});
  EXPECT_EQ(like.dtype(), DType::I32);
  expectValues(like, {1, 1});
  expectValues(run(OpKind::ZerosLike, {f64({3}, {1, 2, 3})}), {0, 0, 0});
}

TEST(KernelsTest, IntegerArangeIsExactOverAllOfI64) {
  Tensor near53 = run(Op(OpKind::Arange, intArange(9007199254740993, 9007199254740997, 1, DType::I64)), {});
  ASSERT_EQ(near53.numElements(), 4);
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(near53.data<int64_t>()[i], 9007199254740993 + i);
  // Near the top of i64, and a step whose products i * step overflow while the values do not.
  const int64_t top = std::numeric_limits<int64_t>::max();
  Tensor high = run(Op(OpKind::Arange, intArange(top - 7, top, 2, DType::I64)), {});
  EXPECT_EQ(std::vector<int64_t>(high.data<int64_t>(), high.data<int64_t>() + 4),
            (std::vector<int64_t>{top - 7, top - 5, top - 3, top - 1}));
  Tensor wide = run(Op(OpKind::Arange, intArange(-top, top, top / 2, DType::I64)), {});
  std::vector<int64_t> expected{-top};
  while (expected.size() < 5)
    expected.push_back(expected.back() + top / 2);
  EXPECT_EQ(std::vector<int64_t>(wide.data<int64_t>(), wide.data<int64_t>() + wide.numElements()), expected);
}

TEST(KernelsTest, ArangeLengthsAreExactOrRefused) {
  auto error = [](Number start, Number stop, Number step, DType dtype) -> std::string {
    try {
      tg::ir::arangeLength(start, stop, step, dtype);
    } catch (const tg::ir::UserError &e) {
      return e.message;
    }
    return "(no error)";
  };
  const int64_t top = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(
      error(Number::ofInt(-top), Number::ofInt(top), Number::ofInt(3), DType::I64),
      "arange(-9223372036854775807, 9223372036854775807, 3) would have 6148914691236517205 elements, more "
      "than an array of i64 may hold (2**62 bytes)");
  EXPECT_EQ(
      error(Number::ofInt(0), Number::ofInt(top), Number::ofInt(1), DType::I64),
      "arange(0, 9223372036854775807, 1) would have 9223372036854775807 elements, more than an array of "
      "i64 may hold (2**62 bytes)");
  EXPECT_EQ(
      error(Number::ofFloat(0), Number::ofFloat(1), Number::ofFloat(1e-30), DType::F32),
      "arange(0, 1, 1e-30) would have 1e+30 elements, more than an array of f32 may hold (2**62 bytes)");
  EXPECT_EQ(error(Number::ofInt(0), Number::ofInt(3000000000), Number::ofInt(2500000000), DType::I32),
            "arange(0, 3000000000, 2500000000): its values do not fit i32");
  EXPECT_EQ(error(Number::ofInt(0), Number::ofInt(3000000000), Number::ofInt(1000000000), DType::I32),
            "(no error)"); // 0, 1e9 and 2e9 fit
  EXPECT_EQ(error(Number::ofFloat(0), Number::ofFloat(std::nan("")), Number::ofInt(1), DType::F32),
            "arange(0, nan, 1): the bounds and the step must be finite");
  EXPECT_EQ(tg::ir::arangeLength(Number::ofInt(-top), Number::ofInt(top), Number::ofInt(top / 4), DType::I64),
            9);
  EXPECT_EQ(tg::ir::arangeLength(Number::ofInt(5), Number::ofInt(-top), Number::ofInt(-top), DType::I64), 2);
}

TEST(KernelsTest, RandomIsCounterBased) {
  OpAttrs attrs = withShape({100, 1000});
  attrs.seed = 42;
  Tensor uniform = run(Op(OpKind::Rand, attrs), {});
  const float *u = uniform.data<float>();
  double sum = 0;
  for (int64_t i = 0; i < uniform.numElements(); ++i) {
    ASSERT_TRUE(u[i] >= 0 && u[i] < 1);
    sum += u[i];
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
  EXPECT_EQ(u[12345], tg::runtime::uniformF32(42, 12345));
  expectValues(run(Op(OpKind::Rand, attrs), {}), values(uniform)); // the same seed, the same numbers

  attrs.dtype = DType::F64;
  Tensor normal = run(Op(OpKind::Randn, attrs), {});
  const double *z = normal.data<double>();
  double mean = 0, square = 0;
  for (int64_t i = 0; i < normal.numElements(); ++i) {
    mean += z[i];
    square += z[i] * z[i];
  }
  mean /= 100000;
  EXPECT_NEAR(mean, 0, 0.02);
  EXPECT_NEAR(square / 100000 - mean * mean, 1, 0.02);
  EXPECT_EQ(z[99999], tg::runtime::normalF64(42, 99999));
}

// ---- sort, argsort, cumsum ----

TEST(KernelsTest, SortPutsNanLast) {
  Tensor x = f64({2, 3}, {3, kNan, 1, 2, 0, -1});
  expectValues(run(OpKind::Sort, {x}, axes({1})), {1, 3, kNan, -1, 0, 2});
  expectValues(run(OpKind::Sort, {x}, axes({0})), {2, 0, -1, 3, kNan, 1});
  expectValues(run(OpKind::Argsort, {x}, axes({-1})), {2, 0, 1, 2, 1, 0});
  Tensor ties = run(OpKind::Argsort, {i32({6}, {2, 1, 2, 1, 0, 2})}, axes({0}));
  EXPECT_EQ(ties.dtype(), DType::I64);
  expectValues(ties, {4, 1, 3, 0, 2, 5}); // stable: equal keys keep their order
}

TEST(KernelsTest, Cumsum) {
  Tensor x = i32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor rows = run(OpKind::Cumsum, {x}, axes({1}));
  EXPECT_EQ(rows.dtype(), DType::I64);
  expectValues(rows, {1, 3, 6, 4, 9, 15});
  expectValues(run(OpKind::Cumsum, {x}, axes({0})), {1, 2, 3, 5, 7, 9});
  Tensor flat = run(OpKind::Cumsum, {x});
  EXPECT_EQ(flat.shape(), (Shape{6}));
  expectValues(flat, {1, 3, 6, 10, 15, 21});
  expectValues(run(OpKind::Cumsum, {boolean({3}, {1, 1, 0})}, axes({0})), {1, 2, 2});
  expectValues(run(OpKind::Cumsum, {f32({3}, {0.5, 0.25, kNan})}, axes({0})), {0.5, 0.75, kNan});
}

} // namespace

// ---- indexing ----

/// scatter_add and scatter_set over enough elements to be split between threads (by rows of x, or by columns
/// of each block when x has fewer rows than threads), against a plain loop: repeated indices accumulate (or
/// the last store stays), negative ones count from the end.
TEST(KernelsTest, ScattersSplitBetweenThreadsAsASerialLoopWould) {
  struct Layout {
    int64_t outer, rows, width, positions;
  };
  for (Layout layout : {Layout{1, 50, 4000, 300}, Layout{6, 7, 3, 40000}}) {
    Shape xShape{layout.outer, layout.rows, layout.width};
    Values x(static_cast<size_t>(layout.outer * layout.rows * layout.width)), update, index;
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<double>(i % 13);
    for (int64_t j = 0; j < layout.positions; ++j)
      index.push_back(static_cast<double>((j * 7) % layout.rows - (j % 3 == 0 ? layout.rows : 0)));
    for (int64_t i = 0; i < layout.outer * layout.positions * layout.width; ++i)
      update.push_back(static_cast<double>(i % 5) - 2);
    for (bool add : {true, false}) {
      Values want = x;
      for (int64_t row = 0; row < layout.outer; ++row)
        for (int64_t j = 0; j < layout.positions; ++j) {
          auto at = static_cast<int64_t>(index[static_cast<size_t>(j)]);
          at = at < 0 ? at + layout.rows : at;
          for (int64_t e = 0; e < layout.width; ++e) {
            double &target = want[static_cast<size_t>((row * layout.rows + at) * layout.width + e)];
            double value = update[static_cast<size_t>((row * layout.positions + j) * layout.width + e)];
            target = add ? target + value : value;
          }
        }
      Tensor got = run(add ? OpKind::ScatterAdd : OpKind::ScatterSet,
                       {f64(xShape, x), f64({layout.outer, layout.positions, layout.width}, update),
                        i64({layout.positions}, index)},
                       axes({1}));
      expectValues(got, want);
      Tensor gathered = run(OpKind::Gather, {f64(xShape, x), i64({layout.positions}, index)}, axes({1}));
      EXPECT_EQ(gathered.shape(), (Shape{layout.outer, layout.positions, layout.width}));
    }
  }
}

TEST(KernelsTest, AnIndexOutOfRangeNamesItsAxis) {
  EXPECT_EQ(runError(OpKind::Gather, {f32({2, 3}, {0, 1, 2, 3, 4, 5}), i64({2}, {1, -4})}, axes({1})),
            "index -4 is out of bounds for axis 1 with size 3");
  EXPECT_EQ(runError(OpKind::ScatterAdd, {f32({2}, {0, 1}), f32({1}, {1}), i64({1}, {2})}, axes({0})),
            "index 2 is out of bounds for axis 0 with size 2");
}
