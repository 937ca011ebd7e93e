// What the kernel families (runtime/*Kernels.cpp) share: dtype dispatch, NumPy's scalar conversions and NaN
// rules, shape helpers, and each family's entry point, called by runOp (Kernels.cpp).
#pragma once

#include "ir/Assert.h"
#include "ir/Op.h"
#include "runtime/Tensor.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace tg::runtime {

class HostLaunchMemo; // FusedLaunch.h

/// Calls f with a value of the C++ element type of `dtype` (bool, int32_t, int64_t, float, double):
/// visitDType(t.dtype(), [&](auto zero) { using T = decltype(zero); ... }).
template <typename F>
decltype(auto) visitDType(ir::DType dtype, F &&f) {
  switch (dtype) {
  case ir::DType::Bool:
    return f(bool{});
  case ir::DType::I32:
    return f(int32_t{});
  case ir::DType::I64:
    return f(int64_t{});
  case ir::DType::F32:
    return f(float{});
  case ir::DType::F64:
    break;
  }
  return f(double{});
}

/// The dtype of a C++ element type.
template <typename T>
constexpr ir::DType dtypeOf() {
  if constexpr (std::is_same_v<T, bool>)
    return ir::DType::Bool;
  else if constexpr (std::is_same_v<T, int32_t>)
    return ir::DType::I32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return ir::DType::I64;
  else if constexpr (std::is_same_v<T, float>)
    return ir::DType::F32;
  else
    return ir::DType::F64;
}

/// The type integer arithmetic runs in so that it wraps around like NumPy's (signed overflow is undefined in
/// C++).
template <typename T>
using WrappingType = typename std::conditional_t<std::is_same_v<T, bool>, std::type_identity<bool>,
                                                 std::make_unsigned<T>>::type;

/// NumPy's cast: floats to integers truncate toward zero, anything to bool is `!= 0`. Out-of-range floats and
/// NaN (undefined in C++) give the minimum integer, as x86 and so NumPy there do.
template <typename Out, typename In>
Out castScalar(In value) {
  if constexpr (std::is_same_v<Out, bool>) {
    return value != In(0);
  } else if constexpr (std::is_integral_v<Out> && std::is_floating_point_v<In>) {
    constexpr double lowest = static_cast<double>(std::numeric_limits<Out>::min()); // -2^31 or -2^63, exact
    if (!(value >= lowest && value < -lowest)) return std::numeric_limits<Out>::min();
    return static_cast<Out>(value);
  } else {
    return static_cast<Out>(value);
  }
}

/// NumPy's maximum and minimum: a NaN operand wins.
template <typename T>
T maximum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a)) return a;
  return a >= b ? a : b;
}
template <typename T>
T minimum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a)) return a;
  return a <= b ? a : b;
}

/// NumPy broadcasting of two run-time shapes; throws UserError("cannot broadcast shapes (3, 4) and (5,)").
std::vector<int64_t> broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b);

/// The strides that read `tensor` as if broadcast to `shape` (0 along broadcast axes). The shapes must
/// broadcast.
std::vector<int64_t> broadcastStrides(const Tensor &tensor, const std::vector<int64_t> &shape);

/// The shapes of concat's (or stack's) inputs must agree on every axis but `skipAxis` (stack: on every axis,
/// with skipAxis = rank); throws UserError naming the input that does not.
void checkJoinShapes(const std::vector<Tensor> &inputs, const char *opName, size_t skipAxis);

/// `axis` counted from the end when negative; a compiler bug when out of range (type inference checked it).
size_t normalizeAxis(int64_t axis, size_t rank);

// The kernel families. `dtype` is the output dtype.
Tensor elementwiseKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype);
Tensor reductionKernel(const ir::Op &op, const Tensor &input, ir::DType dtype);
Tensor matmulKernel(const Tensor &a, const Tensor &b, ir::DType dtype);

/// matmul's operands as NumPy reads them, for every device: a 1-D left operand as a row (1 x k), a 1-D right
/// one as a column (k x 1), each matrix the last two axes; the leading batch axes broadcast. UserError when
/// the inner dimensions differ.
struct MatmulPlan {
  Tensor a, b;                      // the operands as matrices (views)
  int64_t n = 0, k = 0, m = 0;      // a is n x k, b is k x m
  std::vector<int64_t> batch;       // the batch shape of the result
  std::vector<int64_t> resultShape; // batch, n, m, without the axes a 1-D operand added
};
MatmulPlan planMatmul(const Tensor &left, const Tensor &right);
/// The strides of `matrices`' batch axes (all but its last two) broadcast over `batch`.
std::vector<int64_t> batchStrides(const Tensor &matrices, const std::vector<int64_t> &batch);
Tensor shapeKernel(const ir::Op &op, const std::vector<Tensor> &inputs);
Tensor creationKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype);

/// arange's element i is first + i * step: for integer dtypes `first` and `step` as 64-bit integers (the sum
/// computed in 64 bits, wrapping, then narrowed), for float dtypes as values of the dtype (the sum computed
/// in the dtype): NumPy's fill, exact for integer bounds. For bool, as NumPy's fill: element 0 is first != 0,
/// every other one first + step != 0 (the start, then start + step, converted to bool).
struct ArangeTerms {
  int64_t first = 0, step = 0;
  double floatFirst = 0, floatStep = 0;
};
ArangeTerms arangeTerms(const ir::OpAttrs &attrs, ir::DType dtype);
Tensor sortKernel(const ir::Op &op, const Tensor &input, ir::DType dtype);
/// A fused node's program over whole tensors; `reuseInputs` as runOp's (Kernels.h). Returns the first output
/// and puts the body's extra outputs in `extraOutputs` (one place each). With a `memo`, a launch over
/// operands of the shapes and strides it recorded reuses what it holds, and any other records itself.
Tensor fusedKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype, bool reuseInputs,
                   HostLaunchMemo *memo = nullptr, std::span<Tensor> extraOutputs = {});

} // namespace tg::runtime
