// Elementwise kernels: one broadcasting loop (mapElementwise) applying each op's scalar function, which
// codegen/ScalarOps.h states (and a MATH_OP's libm function, its Ops.def column).
#include "codegen/ScalarOps.h"
#include "ir/SourceLoc.h"
#include "runtime/KernelSupport.h"
#include "runtime/StridedLoop.h"

#include <array>
#include <cstdlib>
#include <tuple>
#include <utility>

namespace tg::runtime {

using ir::OpKind;

namespace {

template <typename... In, typename F, size_t... I>
Tensor mapElementwiseImpl(F f, const std::array<const Tensor *, sizeof...(In)> &inputs,
                          std::index_sequence<I...>) {
  using Out = std::invoke_result_t<F, In...>;
  std::vector<int64_t> shape = inputs[0]->shape();
  for (const Tensor *input : inputs)
    shape = broadcastShapes(shape, input->shape());
  Tensor result = Tensor::empty(dtypeOf<Out>(), shape);
  Out *out = result.data<Out>();
  std::tuple<const In *...> in{inputs[I]->template data<In>()...};

  // Fast path: a plain loop the compiler can vectorize.
  if (((inputs[I]->shape() == shape && inputs[I]->isContiguous()) && ...)) {
    int64_t count = result.numElements();
    for (int64_t i = 0; i < count; ++i)
      out[i] = f(std::get<I>(in)[i]...);
    return result;
  }
  std::array<std::vector<int64_t>, sizeof...(In) + 1> strides{result.strides(),
                                                              broadcastStrides(*inputs[I], shape)...};
  forEachRow(shape, strides, [&](const auto &offsets, const auto &steps, int64_t length) {
    for (int64_t i = 0; i < length; ++i)
      out[offsets[0] + i] = f(std::get<I>(in)[offsets[I + 1] + i * steps[I + 1]]...);
  });
  return result;
}

/// result[i] = f(inputs[i]...) over the broadcast shape of the inputs, whose C++ element types are In...; the
/// result's dtype is that of f's return type.
template <typename... In, typename F, typename... Tensors>
Tensor mapElementwise(F f, const Tensors &...inputs) {
  return mapElementwiseImpl<In...>(f, {&inputs...}, std::index_sequence_for<In...>());
}

[[noreturn]] void noKernel(OpKind kind, ir::DType dtype) {
  TG_ASSERT(false) << "no " << ir::opName(kind) << " kernel for " << ir::dtypeName(dtype);
  std::abort(); // not reached: a failed TG_ASSERT exits
}

/// Applies op S's scalar function (codegen/ScalarOps.h) to inputs of element type T.
template <typename S, typename T>
Tensor apply(OpKind kind, const std::vector<Tensor> &inputs) {
  if constexpr (!scalar::kTakes<S, T>) {
    noKernel(kind, inputs[0].dtype()); // not reached: type inference checked the dtypes
  } else if (inputs.size() == 1) {
    if constexpr (requires(T x) { S::evaluate(x); })
      return mapElementwise<T>([](T x) { return S::evaluate(x); }, inputs[0]);
  } else if (inputs.size() == 2) {
    if constexpr (requires(T x) { S::evaluate(x, x); })
      return mapElementwise<T, T>([](T x, T y) { return S::evaluate(x, y); }, inputs[0], inputs[1]);
  } else if constexpr (requires(T x) { S::evaluate(x, x, x); }) {
    return mapElementwise<T, T, T>([](T x, T y, T z) { return S::evaluate(x, y, z); }, inputs[0], inputs[1],
                                   inputs[2]);
  }
  noKernel(kind, inputs[0].dtype());
}

/// A MATH_OP: libm's function `F` (std::exp...) of each element.
template <typename T, typename F>
Tensor applyLibm(OpKind kind, const Tensor &x, F f) {
  if constexpr (scalar::kIsFloat<T>) return mapElementwise<T>(f, x);
  noKernel(kind, x.dtype());
}

} // namespace

Tensor elementwiseKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype) {
  OpKind kind = op.kind();
  if (kind == OpKind::Cast)
    return visitDType(inputs[0].dtype(), [&](auto from) {
      return visitDType(dtype, [&](auto to) {
        using In = decltype(from);
        return mapElementwise<In>([](In v) { return scalar::Cast::evaluate<decltype(to)>(v); }, inputs[0]);
      });
    });
  if (kind == OpKind::Where)
    return visitDType(inputs[1].dtype(), [&](auto zero) {
      using T = decltype(zero);
      return mapElementwise<bool, T, T>([](bool c, T x, T y) { return scalar::Where::evaluate(c, x, y); },
                                        inputs[0], inputs[1], inputs[2]);
    });
  for (const Tensor &input : inputs)
    TG_ASSERT(input.dtype() == inputs[0].dtype()) << op.name() << " of mixed dtypes";
  return visitDType(inputs[0].dtype(), [&](auto zero) -> Tensor {
    using T = decltype(zero);
    switch (kind) {
#define MATH_OP(Enum, name, libm)                                                                            \
  case OpKind::Enum:                                                                                         \
    return applyLibm<T>(kind, inputs[0], [](T v) { return std::libm(v); });
#define ELEMENTWISE_OP(Enum, ...)                                                                            \
  case OpKind::Enum:                                                                                         \
    return apply<scalar::Enum, T>(kind, inputs);
#include "ir/Ops.def"
    default:
      noKernel(kind, inputs[0].dtype());
    }
  });
}

} // namespace tg::runtime
