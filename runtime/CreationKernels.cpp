// Creation kernels: zeros, ones, full, eye, arange, rand, randn (shapes from the op's attributes) and
// zeros_like, ones_like (shape from the input).
#include "ir/SourceLoc.h"
#include "runtime/KernelSupport.h"
#include "runtime/Random.h"

#include <algorithm>

namespace tg::runtime {

using ir::OpKind;

namespace {

std::vector<int64_t> creationShape(const ir::Op &op, const std::vector<Tensor> &inputs) {
  if (op.kind() == OpKind::ZerosLike || op.kind() == OpKind::OnesLike) return inputs[0].shape();
  if (op.kind() == OpKind::Arange && !inputs.empty()) return {inputs[0].shape().at(0)};
  if (!inputs.empty()) return inputs[0].shape(); // rand, randn of a symbolic shape
  return op.attrs().shape;                       // arange's is its length
}

/// A number attribute as a T: integers exactly (wrapping as C++ does, for a T narrower than the number),
/// doubles as a cast converts them.
template <typename T>
T numberAs(const ir::Number &number) {
  if (!number.isInteger) return scalar::Cast::evaluate<T>(number.floatValue);
  if constexpr (std::is_same_v<T, bool>) return number.intValue != 0;
  return static_cast<T>(number.intValue);
}

template <typename T>
void fill(OpKind kind, const ir::OpAttrs &attrs, const Tensor &out) {
  T *data = out.data<T>();
  int64_t count = out.numElements();
  switch (kind) {
  case OpKind::Zeros:
  case OpKind::ZerosLike:
    std::fill_n(data, count, T(0));
    return;
  case OpKind::Ones:
  case OpKind::OnesLike:
    std::fill_n(data, count, T(1));
    return;
  case OpKind::Full:
    std::fill_n(data, count, numberAs<T>(attrs.scalars.at(0)));
    return;
  case OpKind::Eye: {
    TG_ASSERT(out.rank() == 2) << "eye of rank " << out.rank();
    int64_t rows = out.shape()[0], cols = out.shape()[1];
    std::fill_n(data, count, T(0));
    for (int64_t i = 0; i < std::min(rows, cols); ++i)
      data[i * cols + i] = T(1);
    return;
  }
  case OpKind::Arange: {
    ArangeTerms terms = arangeTerms(attrs, out.dtype());
    if constexpr (std::is_floating_point_v<T>) {
      T first = static_cast<T>(terms.floatFirst), delta = static_cast<T>(terms.floatStep);
      for (int64_t i = 0; i < count; ++i)
        data[i] = static_cast<T>(first + static_cast<T>(i) * delta);
    } else if constexpr (std::is_same_v<T, bool>) { // NumPy's fill in bools: the first value, then the second
      for (int64_t i = 0; i < count; ++i)
        data[i] = (i == 0 ? terms.first : terms.first + terms.step) != 0;
    } else {
      auto first = static_cast<uint64_t>(terms.first), delta = static_cast<uint64_t>(terms.step);
      for (int64_t i = 0; i < count; ++i)
        data[i] = static_cast<T>(static_cast<int64_t>(first + static_cast<uint64_t>(i) * delta));
    }
    return;
  }
  case OpKind::Rand:
  case OpKind::Randn:
    if constexpr (std::is_floating_point_v<T>) {
      bool normal = kind == OpKind::Randn;
      for (int64_t i = 0; i < count; ++i) {
        auto index = static_cast<uint64_t>(i);
        if constexpr (std::is_same_v<T, float>)
          data[i] = normal ? normalF32(attrs.seed, index) : uniformF32(attrs.seed, index);
        else
          data[i] = normal ? normalF64(attrs.seed, index) : uniformF64(attrs.seed, index);
      }
      return;
    }
    break;
  default:
    break;
  }
  TG_ASSERT(false) << "no " << ir::opName(kind) << " kernel for " << ir::dtypeName(out.dtype());
}

} // namespace

ArangeTerms arangeTerms(const ir::OpAttrs &attrs, ir::DType dtype) {
  const ir::Number &start = attrs.scalars.at(0), &step = attrs.scalars.at(2);
  ArangeTerms terms;
  visitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (start.isInteger && step.isInteger) { // exact
        terms.first = start.intValue, terms.step = step.intValue;
        return;
      }
    }
    // NumPy's fill, for the same last bits: the first two values from double, their difference in T.
    T first = scalar::Cast::evaluate<T>(start.toDouble());
    T second = scalar::Cast::evaluate<T>(start.toDouble() + step.toDouble());
    if constexpr (std::is_floating_point_v<T>) {
      terms.floatFirst = static_cast<double>(first);
      terms.floatStep = static_cast<double>(static_cast<T>(second - first));
    } else {
      terms.first = static_cast<int64_t>(first);
      terms.step = static_cast<int64_t>(static_cast<uint64_t>(static_cast<int64_t>(second)) -
                                        static_cast<uint64_t>(static_cast<int64_t>(first)));
    }
  });
  return terms;
}

Tensor dimSizeKernel(const ir::Op &op, const Tensor &input) {
  Tensor out = Tensor::empty(ir::DType::I64, {});
  *out.data<int64_t>() = input.shape().at(static_cast<size_t>(op.attrs().axes.at(0)));
  return out;
}

Tensor creationKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype) {
  Tensor out = Tensor::empty(dtype, creationShape(op, inputs));
  visitDType(dtype, [&](auto zero) { fill<decltype(zero)>(op.kind(), op.attrs(), out); });
  return out;
}

} // namespace tg::runtime
