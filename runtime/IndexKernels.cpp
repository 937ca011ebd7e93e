// Indexing on the host: gather (NumPy's x[i0, i1, ...] over consecutive axes, or take_along_axis),
// scatter_add (NumPy's add.at, gather's gradient), scatter_set, and set_slice. The gathers and scatters turn
// the index arrays into one source offset per index position, checking each index against its axis first (an
// index out of range is the user's error, never a read or write outside the tensor), then move whole
// contiguous blocks: the axes after the indexed ones. The scatters write into their first input when the
// caller gives it up and nothing else reads it (a gradient's zeros, an update's old value), else into a copy.
#include "runtime/KernelSupport.h"
#include "runtime/WorkerPool.h"

#include <cstring>

namespace tg::runtime {

namespace {

int64_t product(std::span<const int64_t> sizes) {
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  return count;
}

/// Where an indexing op reads or writes in a C-order x: `outer` rows before the indexed axes, each of
/// `rowElements`; per row, `offsets.size()` index positions (C order), each the element offset `offsets[j]`
/// into the row of a block of `inner` contiguous elements (the axes after the indexed ones). `shape`: the
/// gathered shape. Along an axis, every element is a position of its own (one row, blocks of one).
struct Indexing {
  std::vector<int64_t> shape, offsets;
  int64_t outer = 1, rowElements = 1, inner = 1;
};

/// Adds index * stride to offsets[j] for each position j of `index` (read broadcast to `shape`), checking
/// each against `size`.
void addIndexOffsets(const Tensor &given, const std::vector<int64_t> &shape, int64_t size, size_t axis,
                     int64_t stride, std::vector<int64_t> &offsets) {
  Tensor index = given.view(shape, broadcastStrides(given, shape), given.offset()).contiguous();
  visitDType(index.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (scalar::kIsInteger<T>) {
      const T *values = index.data<T>();
      for (size_t j = 0; j < offsets.size(); ++j) {
        auto value = static_cast<int64_t>(values[j]);
        if (value < -size || value >= size)
          throw ir::UserError("index " + std::to_string(value) + " is out of bounds for axis " +
                              std::to_string(axis) + " with size " + std::to_string(size));
        offsets[j] += (value < 0 ? value + size : value) * stride;
      }
    } else {
      TG_ASSERT(false) << "an index of " << ir::dtypeName(index.dtype());
    }
  });
}

Indexing planIndexing(const std::vector<int64_t> &shape, size_t axis, std::span<const Tensor> indices) {
  Indexing plan;
  size_t k = indices.size();
  std::vector<int64_t> indexShape;
  for (const Tensor &index : indices)
    indexShape = broadcastShapes(indexShape, index.shape());
  std::span<const int64_t> sizes(shape);
  plan.outer = product(sizes.subspan(0, axis));
  plan.inner = product(sizes.subspan(axis + k));
  plan.rowElements = product(sizes.subspan(axis));
  plan.offsets.assign(static_cast<size_t>(product(indexShape)), 0);
  int64_t stride = plan.inner; // of the indexed axes in a C-order x, last first
  for (size_t i = k; i-- > 0;) {
    addIndexOffsets(indices[i], indexShape, shape[axis + i], axis + i, stride, plan.offsets);
    stride *= shape[axis + i];
  }
  plan.shape.assign(shape.begin(), shape.begin() + static_cast<ptrdiff_t>(axis));
  plan.shape.insert(plan.shape.end(), indexShape.begin(), indexShape.end());
  plan.shape.insert(plan.shape.end(), shape.begin() + static_cast<ptrdiff_t>(axis + k), shape.end());
  return plan;
}

/// Along an axis: each element p of the broadcast shape reads x at p with p[axis] = index[p], x's other axes
/// broadcast (stride 0 where x has size 1).
Indexing planAlongAxis(const std::vector<int64_t> &shape, size_t axis, const Tensor &index) {
  Indexing plan;
  std::vector<int64_t> others = shape;
  others[axis] = index.shape()[axis];
  plan.shape = broadcastShapes(others, index.shape());
  plan.rowElements = product(shape);
  plan.offsets.assign(static_cast<size_t>(product(plan.shape)), 0);
  std::vector<int64_t> strides = Tensor::contiguousStrides(shape);
  // The offset of each position from the axes other than `axis`: a counter over the broadcast shape.
  std::vector<int64_t> position(plan.shape.size(), 0);
  int64_t offset = 0;
  for (int64_t &target : plan.offsets) {
    target = offset;
    for (size_t d = plan.shape.size(); d-- > 0;) {
      int64_t step = d == axis || shape[d] == 1 ? 0 : strides[d];
      if (++position[d] < plan.shape[d]) {
        offset += step;
        break;
      }
      offset -= step * (position[d] - 1);
      position[d] = 0;
    }
  }
  addIndexOffsets(index, plan.shape, shape[axis], axis, strides[axis], plan.offsets);
  return plan;
}

/// The output of a scatter: its first input itself when the caller gave it up and no other handle reads it,
/// else a copy.
Tensor scatterTarget(const Tensor &x, bool reuse) {
  if (reuse && x.ownsBufferAlone() && x.memory() == Memory::Host && x.offset() == 0 && x.isContiguous())
    return x;
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  out.copyFrom(x);
  return out;
}

Tensor gather(const Tensor &x, const Indexing &plan) {
  Tensor out = Tensor::empty(x.dtype(), plan.shape);
  auto *target = static_cast<std::byte *>(out.rawData());
  const auto *source = static_cast<const std::byte *>(x.rawData());
  size_t element = ir::dtypeSize(x.dtype()), block = static_cast<size_t>(plan.inner) * element;
  auto positions = static_cast<int64_t>(plan.offsets.size());
  int64_t total = plan.outer * positions;
  // Split over threads by whole blocks, about kElementsPerThread elements each.
  int64_t parts = std::clamp<int64_t>(total * plan.inner / kElementsPerThread, 1, hostThreads());
  parallelFor(parts, [&](int64_t part) {
    for (int64_t n = total * part / parts; n < total * (part + 1) / parts; ++n) {
      int64_t row = n / positions, j = n % positions;
      std::memcpy(target + static_cast<size_t>(n) * block,
                  source +
                      static_cast<size_t>(row * plan.rowElements + plan.offsets[static_cast<size_t>(j)]) *
                          element,
                  block);
    }
  });
  return out;
}

/// Adds (or stores) each block of `update` where gather would read it, in order: repeated positions
/// accumulate (or the last stays).
void scatter(const Tensor &out, const Tensor &given, const Indexing &plan, bool add) {
  Tensor update = given.contiguous();
  visitDType(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T *target = out.data<T>();
    const T *values = update.data<T>();
    for (int64_t row = 0; row < plan.outer; ++row)
      for (int64_t offset : plan.offsets) {
        T *at = target + row * plan.rowElements + offset;
        if (!add)
          std::memcpy(at, values, static_cast<size_t>(plan.inner) * sizeof(T));
        else if constexpr (scalar::kIsBool<T>)
          for (int64_t e = 0; e < plan.inner; ++e)
            at[e] = at[e] || values[e]; // NumPy's add of bools
        else
          for (int64_t e = 0; e < plan.inner; ++e)
            at[e] = scalar::Add::evaluate(at[e], values[e]);
        values += plan.inner;
      }
  });
}

} // namespace

Tensor indexingKernel(const ir::Op &op, const std::vector<Tensor> &inputs, bool reuseInputs) {
  const ir::OpAttrs &attrs = op.attrs();
  if (op.kind() == ir::OpKind::SetSlice) {
    Tensor out = scatterTarget(inputs[0], reuseInputs), region = sliceView(out, attrs.slices);
    if (region.shape() != inputs[1].shape()) // the types agree; symbolic sizes are bound now
      throw ir::UserError("set_slice: the update has shape " + shapeTuple(inputs[1].shape()) +
                          ", but the region has shape " + shapeTuple(region.shape()));
    region.copyFrom(inputs[1]);
    return out;
  }
  bool isGather = op.kind() == ir::OpKind::Gather;
  size_t axis = static_cast<size_t>(attrs.axes.at(0));
  std::span<const Tensor> indices = std::span<const Tensor>(inputs).subspan(isGather ? 1 : 2);
  const std::vector<int64_t> &shape = inputs[0].shape();
  Indexing plan =
      attrs.keepdims ? planAlongAxis(shape, axis, indices[0]) : planIndexing(shape, axis, indices);
  if (isGather) return gather(inputs[0].contiguous(), plan);
  if (inputs[1].shape() != plan.shape) // the types agree; symbolic sizes are bound now
    throw ir::UserError(std::string(op.name()) + ": the update has shape " + shapeTuple(inputs[1].shape()) +
                        ", but the indexed positions have shape " + shapeTuple(plan.shape));
  Tensor out = scatterTarget(inputs[0], reuseInputs);
  scatter(out, inputs[1], plan, op.kind() == ir::OpKind::ScatterAdd);
  return out;
}

} // namespace tg::runtime
