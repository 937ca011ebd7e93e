// Reductions: the input is viewed with the kept axes first and the reduced axes last, made contiguous, and
// each output element reduces one contiguous row. Float sums accumulate in double, pairwise; integer and bool
// sums and products in wrapping i64; max/min propagate NaN and argmax/argmin take the first extreme (a NaN
// counts as one).
#include "ir/SourceLoc.h"
#include "runtime/KernelSupport.h"

namespace tg::runtime {

using ir::OpKind;

namespace {

template <typename T>
double pairwiseSum(const T *x, int64_t count) {
  if (count <= 128) {
    double sum = 0;
    for (int64_t i = 0; i < count; ++i)
      sum += static_cast<double>(x[i]);
    return sum;
  }
  int64_t half = count / 2;
  return pairwiseSum(x, half) + pairwiseSum(x + half, count - half);
}

/// Index of the first element that no other beats, where a NaN beats everything.
template <typename T, typename Better>
int64_t extremeIndex(const T *x, int64_t count, Better better) {
  int64_t best = 0;
  for (int64_t i = 1; i < count; ++i) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(x[best])) break;
    if (better(x[i], x[best])) best = i;
  }
  return best;
}

template <typename T>
bool isNan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  return false;
}

/// out[r] = rowValue(row r, length), converted to the output's dtype.
template <typename T, typename RowValue>
void reduceRows(const Tensor &rows, int64_t length, const Tensor &out, RowValue rowValue) {
  const T *in = rows.data<T>();
  int64_t count = out.numElements();
  visitDType(out.dtype(), [&](auto zero) {
    using R = decltype(zero);
    R *result = out.data<R>();
    for (int64_t r = 0; r < count; ++r)
      result[r] = scalar::Cast::evaluate<R>(rowValue(in + r * length, length));
  });
}

template <typename T>
void reduce(OpKind kind, const Tensor &rows, int64_t length, const Tensor &out) {
  auto run = [&](auto rowValue) { reduceRows<T>(rows, length, out, rowValue); };
  switch (kind) {
  case OpKind::Sum:
    if constexpr (std::is_floating_point_v<T>)
      return run([](const T *x, int64_t n) { return pairwiseSum(x, n); });
    else
      return run([](const T *x, int64_t n) {
        uint64_t sum = 0; // wraps around like NumPy's int64
        for (int64_t i = 0; i < n; ++i)
          sum += static_cast<uint64_t>(static_cast<int64_t>(x[i]));
        return static_cast<int64_t>(sum);
      });
  case OpKind::Prod:
    if constexpr (std::is_floating_point_v<T>)
      return run([](const T *x, int64_t n) {
        double product = 1;
        for (int64_t i = 0; i < n; ++i)
          product *= x[i];
        return product;
      });
    else
      return run([](const T *x, int64_t n) {
        uint64_t product = 1;
        for (int64_t i = 0; i < n; ++i)
          product *= static_cast<uint64_t>(static_cast<int64_t>(x[i]));
        return static_cast<int64_t>(product);
      });
  case OpKind::Mean:
    return run([](const T *x, int64_t n) { return pairwiseSum(x, n) / static_cast<double>(n); });
  case OpKind::Max:
    return run([](const T *x, int64_t n) {
      T best = x[0];
      for (int64_t i = 1; i < n; ++i)
        best = scalar::Maximum::evaluate(best, x[i]);
      return best;
    });
  case OpKind::Min:
    return run([](const T *x, int64_t n) {
      T best = x[0];
      for (int64_t i = 1; i < n; ++i)
        best = scalar::Minimum::evaluate(best, x[i]);
      return best;
    });
  case OpKind::Argmax:
    return run(
        [](const T *x, int64_t n) { return extremeIndex(x, n, [](T a, T b) { return a > b || isNan(a); }); });
  case OpKind::Argmin:
    return run(
        [](const T *x, int64_t n) { return extremeIndex(x, n, [](T a, T b) { return a < b || isNan(a); }); });
  case OpKind::Any:
    return run([](const T *x, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        if (x[i] != T(0)) return true;
      return false;
    });
  case OpKind::All:
    return run([](const T *x, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        if (x[i] == T(0)) return false;
      return true;
    });
  default:
    TG_ASSERT(false) << ir::opName(kind) << " is not a reduction";
  }
}

} // namespace

Tensor reductionKernel(const ir::Op &op, const Tensor &input, ir::DType dtype) {
  OpKind kind = op.kind();
  const ir::OpAttrs &attrs = op.attrs();
  bool isArg = ir::isPositionalReduction(kind);
  // argmax/argmin without axes reduce the flattened array; keepdims then keeps every axis as 1.
  bool flatten = isArg && attrs.axes.empty();
  Tensor x = flatten ? input.reshaped({input.numElements()}) : input;
  std::vector<bool> reduced(x.rank(), flatten);
  for (int64_t axis : attrs.axes)
    reduced[normalizeAxis(axis, x.rank())] = true;

  std::vector<int64_t> perm, outShape;
  int64_t length = 1;
  for (size_t i = 0; i < x.rank(); ++i)
    if (!reduced[i]) {
      perm.push_back(static_cast<int64_t>(i));
      outShape.push_back(x.shape()[i]);
    }
  for (size_t i = 0; i < x.rank(); ++i)
    if (reduced[i]) {
      perm.push_back(static_cast<int64_t>(i));
      length *= x.shape()[i];
    }
  if (attrs.keepdims) {
    outShape.assign(input.rank(), 1);
    if (!flatten)
      for (size_t i = 0; i < x.rank(); ++i)
        if (!reduced[i]) outShape[i] = x.shape()[i];
  }
  ir::checkReductionOfElements(kind, length);

  Tensor rows = x.permuted(perm).contiguous();
  Tensor out = Tensor::empty(dtype, outShape);
  visitDType(x.dtype(), [&](auto zero) { reduce<decltype(zero)>(kind, rows, length, out); });
  return out;
}

} // namespace tg::runtime
