// Integer-array indexing on the host: gather (NumPy's x[i0, i1, ...] over consecutive axes) and scatter_add
// (NumPy's add.at, gather's gradient). Both turn the broadcast index arrays into one source offset per index
// position, checking each index against its axis first (an out-of-range index is the user's error, never a
// read or write outside the tensor), then move whole contiguous blocks: the axes after the indexed ones.
#include "runtime/KernelSupport.h"

#include <cstring>

namespace tg::runtime {

namespace {

int64_t product(std::span<const int64_t> sizes) {
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  return count;
}

/// The layout of an indexing op over a C-order x: `outer` rows before the indexed axes, `positions` index
/// positions (the indices' broadcast shape, in C order), each the element offset `offsets[j]` into a row of
/// `rowElements`, and `inner` contiguous elements after the indexed axes.
struct Indexing {
  std::vector<int64_t> indexShape, offsets;
  int64_t outer = 1, rowElements = 1, inner = 1;
};

Indexing planIndexing(const Tensor &x, size_t axis, std::span<const Tensor> indices) {
  Indexing plan;
  size_t k = indices.size();
  for (const Tensor &index : indices)
    plan.indexShape = broadcastShapes(plan.indexShape, index.shape());
  std::span<const int64_t> shape(x.shape());
  plan.outer = product(shape.subspan(0, axis));
  plan.inner = product(shape.subspan(axis + k));
  plan.rowElements = product(shape.subspan(axis));
  int64_t positions = product(plan.indexShape);
  plan.offsets.assign(static_cast<size_t>(positions), 0);
  int64_t stride = plan.inner; // of the indexed axes in a C-order x, last first
  for (size_t i = k; i-- > 0;) {
    int64_t size = shape[axis + i];
    const Tensor &given = indices[i];
    Tensor index =
        given.view(plan.indexShape, broadcastStrides(given, plan.indexShape), given.offset()).contiguous();
    visitDType(index.dtype(), [&](auto zero) {
      using T = decltype(zero);
      if constexpr (scalar::kIsInteger<T>) {
        const T *values = index.data<T>();
        for (int64_t j = 0; j < positions; ++j) {
          auto value = static_cast<int64_t>(values[j]);
          if (value < -size || value >= size)
            throw ir::UserError("index " + std::to_string(value) + " is out of bounds for axis " +
                                std::to_string(axis + i) + " with size " + std::to_string(size));
          plan.offsets[static_cast<size_t>(j)] += (value < 0 ? value + size : value) * stride;
        }
      } else {
        TG_ASSERT(false) << "an index of " << ir::dtypeName(index.dtype());
      }
    });
    stride *= size;
  }
  return plan;
}

} // namespace

Tensor indexingKernel(const ir::Op &op, const std::vector<Tensor> &inputs) {
  bool scatter = op.kind() == ir::OpKind::ScatterAdd;
  size_t axis = static_cast<size_t>(op.attrs().axes.at(0)), first = scatter ? 2 : 1;
  Tensor x = inputs[0].contiguous();
  Indexing plan = planIndexing(x, axis, std::span<const Tensor>(inputs).subspan(first));
  auto positions = static_cast<int64_t>(plan.offsets.size());
  size_t element = ir::dtypeSize(x.dtype());
  if (!scatter) {
    std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + static_cast<ptrdiff_t>(axis));
    shape.insert(shape.end(), plan.indexShape.begin(), plan.indexShape.end());
    shape.insert(shape.end(), x.shape().begin() + static_cast<ptrdiff_t>(axis + inputs.size() - 1),
                 x.shape().end());
    Tensor out = Tensor::empty(x.dtype(), shape);
    auto *target = static_cast<std::byte *>(out.rawData());
    const auto *source = static_cast<const std::byte *>(x.rawData());
    size_t block = static_cast<size_t>(plan.inner) * element;
    for (int64_t row = 0; row < plan.outer; ++row)
      for (int64_t j = 0; j < positions; ++j, target += block)
        std::memcpy(target,
                    source + (row * plan.rowElements + plan.offsets[static_cast<size_t>(j)]) * element,
                    block);
    return out;
  }
  // scatter_add: a copy of x, then each update block added where gather would read it, in order.
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  out.copyFrom(x);
  Tensor update = inputs[1].contiguous();
  visitDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T *target = out.data<T>();
    const T *values = update.data<T>();
    for (int64_t row = 0; row < plan.outer; ++row)
      for (int64_t j = 0; j < positions; ++j) {
        T *at = target + row * plan.rowElements + plan.offsets[static_cast<size_t>(j)];
        for (int64_t e = 0; e < plan.inner; ++e, ++values) {
          if constexpr (scalar::kIsBool<T>)
            at[e] = at[e] || *values; // NumPy's add of bools
          else
            at[e] = scalar::Add::evaluate(at[e], *values);
        }
      }
  });
  return out;
}

} // namespace tg::runtime
