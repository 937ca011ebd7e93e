// Creation kernels: zeros, ones, full, eye, arange, rand, randn (shapes from the op's attributes) and
// zeros_like, ones_like (shape from the input).
#include "ir/SourceLoc.h"
#include "runtime/KernelSupport.h"
#include "runtime/Random.h"

#include <algorithm>

namespace tg::runtime {

using ir::OpKind;

namespace {

/// The element count of arange(start, stop, step), as NumPy: ceil((stop - start) / step), at least 0.
int64_t arangeLength(const std::vector<double> &scalars) {
  TG_ASSERT(scalars.size() == 3 && scalars[2] != 0) << "arange needs start, stop and a nonzero step";
  double length = std::ceil((scalars[1] - scalars[0]) / scalars[2]);
  if (!(length < 0x1p62)) throw ir::UserError("arange: too many elements");
  return length > 0 ? static_cast<int64_t>(length) : 0;
}

std::vector<int64_t> creationShape(const ir::Op &op, const std::vector<Tensor> &inputs) {
  switch (op.kind()) {
  case OpKind::ZerosLike:
  case OpKind::OnesLike:
    return inputs[0].shape();
  case OpKind::Arange:
    return {arangeLength(op.attrs().scalars)};
  default:
    return op.attrs().shape;
  }
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
    std::fill_n(data, count, castScalar<T>(attrs.scalars.at(0)));
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
    // NumPy's fill, for the same last bits: the first two values from double, then first + i * delta in T.
    T first = castScalar<T>(attrs.scalars[0]);
    T delta = castScalar<T>(attrs.scalars[0] + attrs.scalars[2]) - first;
    for (int64_t i = 0; i < count; ++i)
      data[i] = static_cast<T>(first + static_cast<T>(i) * delta);
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

Tensor creationKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype) {
  Tensor out = Tensor::empty(dtype, creationShape(op, inputs));
  visitDType(dtype, [&](auto zero) { fill<decltype(zero)>(op.kind(), op.attrs(), out); });
  return out;
}

} // namespace tg::runtime
