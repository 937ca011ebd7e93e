// Indexing on the host: gather (NumPy's x[i0, i1, ...] over consecutive axes, or take_along_axis),
// scatter_add (NumPy's add.at, gather's gradient), scatter_set, and set_slice. The gathers and scatters turn
// the index arrays into one offset per index position (IndexLayout, which the device layer shares), checking
// each index against its axis first (an index out of range is the user's error, never a read or write outside
// the tensor), then move whole contiguous blocks: the axes after the indexed ones. The scatters write into
// their first input when the caller gives it up and nothing else reads it (a gradient's zeros, an update's
// old value), else into a copy.
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
        if (value < -size || value >= size) throw indexOutOfRange(value, axis, size);
        offsets[j] += (value < 0 ? value + size : value) * stride;
      }
    } else {
      TG_ASSERT(false) << "an index of " << ir::dtypeName(index.dtype());
    }
  });
}

/// The offset of each position of `shape` (C order) in a tensor of `strides` (stride 0 where it broadcasts).
std::vector<int64_t> positionOffsets(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
                                     int64_t start) {
  std::vector<int64_t> offsets(static_cast<size_t>(product(shape)));
  std::vector<int64_t> position(shape.size(), 0);
  int64_t offset = start;
  for (int64_t &target : offsets) {
    target = offset;
    for (size_t d = shape.size(); d-- > 0;) {
      if (++position[d] < shape[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (position[d] - 1);
      position[d] = 0;
    }
  }
  return offsets;
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

Tensor gather(const Tensor &x, const IndexLayout &layout, const std::vector<int64_t> &offsets) {
  Tensor out = Tensor::empty(x.dtype(), layout.shape);
  auto *target = static_cast<std::byte *>(out.rawData());
  const auto *source = static_cast<const std::byte *>(x.rawData());
  size_t element = ir::dtypeSize(x.dtype()), block = static_cast<size_t>(layout.inner) * element;
  int64_t positions = layout.positions, total = layout.outer * positions;
  // Split over threads by whole blocks, about kElementsPerThread elements each.
  int64_t parts = std::clamp<int64_t>(total * layout.inner / kElementsPerThread, 1, hostThreads());
  parallelFor(parts, [&](int64_t part) {
    for (int64_t n = total * part / parts; n < total * (part + 1) / parts; ++n) {
      int64_t row = n / positions, j = n % positions;
      std::memcpy(target + static_cast<size_t>(n) * block,
                  source + static_cast<size_t>(row * layout.rowElements + offsets[static_cast<size_t>(j)]) *
                               element,
                  block);
    }
  });
  return out;
}

/// Adds (or stores) each block of `update` where gather would read it, in order: repeated positions
/// accumulate (or the last stays). Threads take whole rows (disjoint in x) or, with fewer rows, ranges of
/// columns of every block (disjoint too), so that each element is written by one thread in the order of the
/// positions.
void scatter(const Tensor &out, const Tensor &update, const IndexLayout &layout,
             const std::vector<int64_t> &offsets, bool add) {
  int64_t positions = layout.positions, inner = layout.inner;
  int64_t parts =
      std::clamp<int64_t>(layout.outer * positions * inner / kElementsPerThread, 1, hostThreads());
  bool byRows = layout.outer >= parts;
  if (!byRows) parts = std::min(parts, inner);
  visitDType(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T *target = out.data<T>();
    const T *values = update.data<T>();
    parallelFor(parts, [&](int64_t part) {
      int64_t rows[2] = {0, layout.outer}, columns[2] = {0, inner};
      int64_t *split = byRows ? rows : columns, size = split[1];
      split[0] = size * part / parts, split[1] = size * (part + 1) / parts;
      for (int64_t row = rows[0]; row < rows[1]; ++row)
        for (int64_t j = 0; j < positions; ++j) {
          T *at = target + row * layout.rowElements + offsets[static_cast<size_t>(j)];
          const T *from = values + (row * positions + j) * inner;
          for (int64_t e = columns[0]; e < columns[1]; ++e) {
            if (!add)
              at[e] = from[e];
            else if constexpr (scalar::kIsBool<T>)
              at[e] = at[e] || from[e]; // NumPy's add of bools
            else
              at[e] = scalar::Add::evaluate(at[e], from[e]);
          }
        }
    });
  });
}

} // namespace

Tensor broadcastUpdate(const ir::Op &op, const Tensor &update, const std::vector<int64_t> &shape) {
  bool fits = update.rank() <= shape.size();
  for (size_t d = 0; fits && d < update.rank(); ++d) {
    int64_t size = update.shape()[d], target = shape[shape.size() - update.rank() + d];
    fits = size == target || size == 1;
  }
  if (!fits) // the types agree; symbolic sizes are bound now
    throw ir::UserError(std::string(op.name()) + ": an update of shape " + shapeTuple(update.shape()) +
                        " does not broadcast to the selected shape " + shapeTuple(shape));
  return update.view(shape, broadcastStrides(update, shape), update.offset());
}

ir::UserError indexOutOfRange(int64_t index, size_t axis, int64_t size) {
  return ir::UserError("index " + std::to_string(index) + " is out of bounds for axis " +
                       std::to_string(axis) + " with size " + std::to_string(size));
}

IndexLayout indexLayout(const ir::Op &op, const std::vector<int64_t> &shape,
                        const std::vector<std::vector<int64_t>> &indexShapes) {
  IndexLayout layout;
  size_t axis = static_cast<size_t>(op.attrs().axes.at(0)), k = indexShapes.size();
  std::vector<int64_t> strides = Tensor::contiguousStrides(shape);
  if (op.attrs().keepdims) { // along an axis: every element a position of its own, x broadcast on the others
    std::vector<int64_t> others = shape;
    others[axis] = indexShapes[0][axis];
    layout.shape = layout.indexShape = broadcastShapes(others, indexShapes[0]);
    std::vector<int64_t> steps(shape.size(), 0);
    for (size_t d = 0; d < shape.size(); ++d)
      if (d != axis && shape[d] != 1) steps[d] = strides[d];
    layout.baseOffsets = positionOffsets(layout.shape, steps, 0);
    layout.rowElements = product(shape);
    layout.positions = product(layout.shape);
    layout.indices = {{axis, shape[axis], strides[axis]}};
    return layout;
  }
  for (const std::vector<int64_t> &indexShape : indexShapes)
    layout.indexShape = broadcastShapes(layout.indexShape, indexShape);
  std::span<const int64_t> sizes(shape);
  layout.outer = product(sizes.subspan(0, axis));
  layout.inner = product(sizes.subspan(axis + k));
  layout.rowElements = product(sizes.subspan(axis));
  layout.positions = product(layout.indexShape);
  for (size_t i = 0; i < k; ++i)
    layout.indices.push_back({axis + i, shape[axis + i], strides[axis + i]});
  layout.shape.assign(shape.begin(), shape.begin() + static_cast<ptrdiff_t>(axis));
  layout.shape.insert(layout.shape.end(), layout.indexShape.begin(), layout.indexShape.end());
  layout.shape.insert(layout.shape.end(), shape.begin() + static_cast<ptrdiff_t>(axis + k), shape.end());
  return layout;
}

IndexLayout regionLayout(const Tensor &region, int64_t base) {
  IndexLayout layout;
  layout.shape = region.shape();
  std::vector<int64_t> outerShape = region.shape(), strides = region.strides();
  if (!outerShape.empty() && strides.back() == 1) { // the last axis, contiguous, moves as a block
    layout.inner = outerShape.back();
    outerShape.back() = 1;
  }
  layout.indexShape = outerShape;
  layout.positions = product(outerShape);
  layout.baseOffsets = positionOffsets(outerShape, strides, region.offset() - base);
  return layout;
}

Tensor indexingKernel(const ir::Op &op, const std::vector<Tensor> &inputs, bool reuseInputs) {
  const ir::OpAttrs &attrs = op.attrs();
  if (op.kind() == ir::OpKind::SetSlice) {
    Tensor out = scatterTarget(inputs[0], reuseInputs), region = sliceView(out, attrs.slices);
    region.copyFrom(broadcastUpdate(op, inputs[1], region.shape()));
    return out;
  }
  bool isGather = op.kind() == ir::OpKind::Gather;
  std::span<const Tensor> indices = std::span<const Tensor>(inputs).subspan(isGather ? 1 : 2);
  std::vector<std::vector<int64_t>> indexShapes;
  for (const Tensor &index : indices)
    indexShapes.push_back(index.shape());
  IndexLayout layout = indexLayout(op, inputs[0].shape(), indexShapes);
  std::vector<int64_t> offsets = layout.baseOffsets;
  offsets.resize(static_cast<size_t>(layout.positions), 0);
  for (size_t i = 0; i < indices.size(); ++i)
    addIndexOffsets(indices[i], layout.indexShape, layout.indices[i].size, layout.indices[i].axis,
                    layout.indices[i].stride, offsets);
  if (isGather) return gather(inputs[0].contiguous(), layout, offsets);
  Tensor update = broadcastUpdate(op, inputs[1], layout.shape).contiguous();
  Tensor out = scatterTarget(inputs[0], reuseInputs);
  scatter(out, update, layout, offsets, op.kind() == ir::OpKind::ScatterAdd);
  return out;
}

} // namespace tg::runtime
