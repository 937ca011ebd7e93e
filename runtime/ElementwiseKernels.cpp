// Elementwise kernels: one broadcasting loop (mapElementwise) and, per op, the scalar function it applies.
// Scalar semantics follow NumPy: `%` takes the divisor's sign, integer arithmetic wraps around, round is half
// to even, maximum/minimum/clip propagate NaN.
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

template <typename T>
T sigmoid(T x) {
  // exp of a large positive argument overflows; use the form whose exp argument is never positive.
  if (x >= 0) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

template <typename T>
T softplus(T x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

template <typename T>
T sign(T x) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(x)) return x;
  return x > 0 ? T(1) : x < 0 ? T(-1) : T(0);
}

/// Python's modulo for floats, as NumPy's npy_divmod: the result has the divisor's sign.
template <typename T>
T floatMod(T a, T b) {
  T mod = std::fmod(a, b);
  if (b == 0) return mod;
  if (mod == 0) return std::copysign(T(0), b);
  return (b < 0) != (mod < 0) ? mod + b : mod;
}

/// Python's modulo for integers; modulo zero is 0, as NumPy gives (with a warning).
template <typename T>
T intMod(T a, T b) {
  if (b == 0 || b == -1) // -1: the remainder is 0, and INT_MIN % -1 would overflow
    return 0;
  T mod = a % b;
  return mod != 0 && (mod < 0) != (b < 0) ? mod + b : mod;
}

template <typename T>
T intPow(T base, T exponent) {
  if (exponent < 0) throw ir::UserError("integers to negative integer powers are not allowed");
  using U = WrappingType<T>;
  U result = 1, factor = static_cast<U>(base);
  for (U e = static_cast<U>(exponent); e != 0; e >>= 1) {
    if (e & 1) result *= factor;
    factor *= factor;
  }
  return static_cast<T>(result);
}

[[noreturn]] void noKernel(OpKind kind, ir::DType dtype) {
  TG_ASSERT(false) << "no " << ir::opName(kind) << " kernel for " << ir::dtypeName(dtype);
  std::abort(); // not reached: a failed TG_ASSERT exits
}

template <typename T>
Tensor unary(OpKind kind, const Tensor &x) {
  auto map = [&](auto f) { return mapElementwise<T>(f, x); };
  if constexpr (std::is_floating_point_v<T>) {
    switch (kind) {
    case OpKind::Neg:
      return map([](T v) { return -v; });
    case OpKind::Abs:
      return map([](T v) { return std::abs(v); });
    case OpKind::Exp:
      return map([](T v) { return std::exp(v); });
    case OpKind::Log:
      return map([](T v) { return std::log(v); });
    case OpKind::Log1p:
      return map([](T v) { return std::log1p(v); });
    case OpKind::Expm1:
      return map([](T v) { return std::expm1(v); });
    case OpKind::Sqrt:
      return map([](T v) { return std::sqrt(v); });
    case OpKind::Rsqrt:
      return map([](T v) { return T(1) / std::sqrt(v); });
    case OpKind::Sin:
      return map([](T v) { return std::sin(v); });
    case OpKind::Cos:
      return map([](T v) { return std::cos(v); });
    case OpKind::Tanh:
      return map([](T v) { return std::tanh(v); });
    case OpKind::Sigmoid:
      return map([](T v) { return sigmoid(v); });
    case OpKind::Relu:
      return map([](T v) { return v < 0 ? T(0) : v; }); // NaN stays NaN
    case OpKind::Softplus:
      return map([](T v) { return softplus(v); });
    case OpKind::Floor:
      return map([](T v) { return std::floor(v); });
    case OpKind::Ceil:
      return map([](T v) { return std::ceil(v); });
    case OpKind::Round:
      return map([](T v) { return std::nearbyint(v); }); // half to even
    case OpKind::Sign:
      return map([](T v) { return sign(v); });
    case OpKind::Erf:
      return map([](T v) { return std::erf(v); });
    default:
      break;
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    if (kind == OpKind::Not) return map([](bool v) { return !v; });
  } else {
    using U = WrappingType<T>;
    switch (kind) {
    case OpKind::Neg:
      return map([](T v) { return static_cast<T>(U(0) - static_cast<U>(v)); });
    case OpKind::Abs:
      return map([](T v) { return v < 0 ? static_cast<T>(U(0) - static_cast<U>(v)) : v; });
    case OpKind::Relu:
      return map([](T v) { return v < 0 ? T(0) : v; });
    case OpKind::Sign:
      return map([](T v) { return sign(v); });
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Round:
      return x; // integers are already whole
    default:
      break;
    }
  }
  noKernel(kind, x.dtype());
}

template <typename T>
Tensor binary(OpKind kind, const Tensor &a, const Tensor &b) {
  auto map = [&](auto f) { return mapElementwise<T, T>(f, a, b); };
  switch (kind) {
  case OpKind::Lt:
    return map([](T x, T y) { return x < y; });
  case OpKind::Le:
    return map([](T x, T y) { return x <= y; });
  case OpKind::Gt:
    return map([](T x, T y) { return x > y; });
  case OpKind::Ge:
    return map([](T x, T y) { return x >= y; });
  case OpKind::Eq:
    return map([](T x, T y) { return x == y; });
  case OpKind::Ne:
    return map([](T x, T y) { return x != y; });
  case OpKind::Maximum:
    return map([](T x, T y) { return maximum(x, y); });
  case OpKind::Minimum:
    return map([](T x, T y) { return minimum(x, y); });
  default:
    break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (kind) {
    case OpKind::Add:
      return map([](T x, T y) { return x + y; });
    case OpKind::Sub:
      return map([](T x, T y) { return x - y; });
    case OpKind::Mul:
      return map([](T x, T y) { return x * y; });
    case OpKind::Div:
      return map([](T x, T y) { return x / y; });
    case OpKind::Mod:
      return map([](T x, T y) { return floatMod(x, y); });
    case OpKind::Pow:
      return map([](T x, T y) { return std::pow(x, y); });
    default:
      break;
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    // NumPy's bool arithmetic: + is or, * is and.
    switch (kind) {
    case OpKind::And:
    case OpKind::Mul:
      return map([](bool x, bool y) { return x && y; });
    case OpKind::Or:
    case OpKind::Add:
      return map([](bool x, bool y) { return x || y; });
    default:
      break;
    }
  } else {
    using U = WrappingType<T>;
    switch (kind) {
    case OpKind::Add:
      return map([](T x, T y) { return static_cast<T>(static_cast<U>(x) + static_cast<U>(y)); });
    case OpKind::Sub:
      return map([](T x, T y) { return static_cast<T>(static_cast<U>(x) - static_cast<U>(y)); });
    case OpKind::Mul:
      return map([](T x, T y) { return static_cast<T>(static_cast<U>(x) * static_cast<U>(y)); });
    case OpKind::Mod:
      return map([](T x, T y) { return intMod(x, y); });
    case OpKind::Pow:
      return map([](T x, T y) { return intPow(x, y); });
    default:
      break;
    }
  }
  noKernel(kind, a.dtype());
}

} // namespace

Tensor elementwiseKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype) {
  OpKind kind = op.kind();
  if (kind == OpKind::Cast)
    return visitDType(inputs[0].dtype(), [&](auto from) {
      return visitDType(dtype, [&](auto to) {
        using In = decltype(from);
        return mapElementwise<In>([](In v) { return castScalar<decltype(to)>(v); }, inputs[0]);
      });
    });
  if (kind == OpKind::Where) {
    TG_ASSERT(inputs[0].dtype() == ir::DType::Bool && inputs[1].dtype() == inputs[2].dtype())
        << "where(" << ir::dtypeName(inputs[0].dtype()) << ", " << ir::dtypeName(inputs[1].dtype()) << ", "
        << ir::dtypeName(inputs[2].dtype()) << ")";
    return visitDType(inputs[1].dtype(), [&](auto zero) {
      using T = decltype(zero);
      return mapElementwise<bool, T, T>([](bool c, T x, T y) { return c ? x : y; }, inputs[0], inputs[1],
                                        inputs[2]);
    });
  }
  for (const Tensor &input : inputs)
    TG_ASSERT(input.dtype() == inputs[0].dtype()) << op.name() << " of mixed dtypes";
  return visitDType(inputs[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (kind == OpKind::Clip)
      return mapElementwise<T, T, T>([](T x, T lo, T hi) { return minimum(maximum(x, lo), hi); }, inputs[0],
                                     inputs[1], inputs[2]);
    return inputs.size() == 1 ? unary<T>(kind, inputs[0]) : binary<T>(kind, inputs[0], inputs[1]);
  });
}

} // namespace tg::runtime
