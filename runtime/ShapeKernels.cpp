// Shape kernels. transpose, broadcast_to, slice (and reshape of a contiguous input) return views of their
// input; concat and stack copy their inputs into views of one new tensor.
#include "ir/SourceLoc.h"
#include "runtime/KernelSupport.h"

#include <algorithm>

namespace tg::runtime {

using ir::OpKind;

namespace {

/// Type inference has checked the requested shape; with a symbolic input, the element count is checked here.
Tensor reshape(const Tensor &x, const std::vector<int64_t> &requested) {
  std::vector<int64_t> shape = requested;
  auto inferred = std::find(shape.begin(), shape.end(), -1);
  int64_t known = 1;
  for (int64_t size : shape)
    known *= size == -1 ? 1 : size;
  int64_t count = x.numElements();
  if (inferred != shape.end() && known != 0 && count % known == 0)
    *inferred = count / known;
  else if (inferred != shape.end() || known != count)
    throw ir::UserError("cannot reshape array of size " + std::to_string(count) + " into shape " +
                        shapeTuple(requested));
  return x.reshaped(shape);
}

Tensor broadcastTo(const Tensor &x, const std::vector<int64_t> &shape) {
  bool fits = x.rank() <= shape.size();
  for (size_t i = 0; fits && i < x.rank(); ++i) {
    int64_t size = x.shape()[i], target = shape[shape.size() - x.rank() + i];
    fits = size == target || size == 1;
  }
  if (!fits)
    throw ir::UserError("cannot broadcast shape " + shapeTuple(x.shape()) + " to " + shapeTuple(shape));
  return x.view(shape, broadcastStrides(x, shape), x.offset());
}

Tensor concat(const std::vector<Tensor> &inputs, size_t axis) {
  checkJoinShapes(inputs, "concat", axis);
  std::vector<int64_t> shape = inputs[0].shape();
  shape[axis] = 0;
  for (const Tensor &input : inputs)
    shape[axis] += input.shape()[axis];
  Tensor out = Tensor::empty(inputs[0].dtype(), shape);
  int64_t position = 0;
  for (const Tensor &input : inputs) {
    out.view(input.shape(), out.strides(), out.offset() + position * out.strides()[axis]).copyFrom(input);
    position += input.shape()[axis];
  }
  return out;
}

Tensor stack(const std::vector<Tensor> &inputs, size_t axis) {
  checkJoinShapes(inputs, "stack", inputs[0].rank());
  std::vector<int64_t> shape = inputs[0].shape();
  shape.insert(shape.begin() + static_cast<ptrdiff_t>(axis), static_cast<int64_t>(inputs.size()));
  Tensor out = Tensor::empty(inputs[0].dtype(), shape);
  std::vector<int64_t> strides = out.strides();
  strides.erase(strides.begin() + static_cast<ptrdiff_t>(axis));
  for (size_t i = 0; i < inputs.size(); ++i)
    out.view(inputs[i].shape(), strides, static_cast<int64_t>(i) * out.strides()[axis]).copyFrom(inputs[i]);
  return out;
}

} // namespace

Tensor sliceView(const Tensor &x, const std::vector<ir::SliceSpec> &slices) {
  TG_ASSERT(slices.size() <= x.rank()) << slices.size() << " slices of a rank-" << x.rank() << " tensor";
  std::vector<int64_t> shape, strides;
  int64_t offset = x.offset();
  for (size_t axis = 0; axis < x.rank(); ++axis) {
    int64_t size = x.shape()[axis], stride = x.strides()[axis];
    if (axis >= slices.size()) {
      shape.push_back(size);
      strides.push_back(stride);
      continue;
    }
    const ir::SliceSpec &spec = slices[axis];
    if (spec.isIndex) {
      int64_t index = spec.start < 0 ? spec.start + size : spec.start;
      if (index < 0 || index >= size)
        throw ir::UserError("index " + std::to_string(spec.start) + " is out of bounds for axis " +
                            std::to_string(axis) + " with size " + std::to_string(size));
      offset += index * stride;
      continue;
    }
    int64_t step = spec.step;
    TG_ASSERT(step != 0) << "slice step 0 passed type inference";
    // As CPython's PySlice_AdjustIndices: clamp to [0, size] going forward, to [-1, size - 1] going backward.
    auto clamp = [&](int64_t position) {
      if (position < 0) position += size;
      if (step > 0) return std::clamp<int64_t>(position, 0, size);
      return std::clamp<int64_t>(position, -1, size - 1);
    };
    int64_t start = spec.hasStart ? clamp(spec.start) : (step > 0 ? 0 : size - 1);
    int64_t stop = spec.hasStop ? clamp(spec.stop) : (step > 0 ? size : -1);
    int64_t length = step > 0 ? (stop - start + step - 1) / step : (start - stop - step - 1) / -step;
    shape.push_back(std::max<int64_t>(length, 0));
    strides.push_back(stride * step);
    if (length > 0) offset += start * stride;
  }
  return x.view(std::move(shape), std::move(strides), offset);
}

void checkJoinShapes(const std::vector<Tensor> &inputs, const char *opName, size_t skipAxis) {
  const std::vector<int64_t> &first = inputs[0].shape();
  for (size_t i = 1; i < inputs.size(); ++i) {
    const std::vector<int64_t> &shape = inputs[i].shape();
    bool same = shape.size() == first.size();
    for (size_t d = 0; same && d < shape.size(); ++d)
      same = d == skipAxis || shape[d] == first[d];
    if (!same)
      throw ir::UserError(std::string(opName) + ": input " + std::to_string(i) + " has shape " +
                          shapeTuple(shape) + ", but input 0 has shape " + shapeTuple(first) +
                          (skipAxis < first.size()
                               ? "; shapes must match except along axis " + std::to_string(skipAxis)
                               : "; all shapes must match"));
  }
}

Tensor shapeKernel(const ir::Op &op, const std::vector<Tensor> &inputs) {
  const ir::OpAttrs &attrs = op.attrs();
  for (const Tensor &input : inputs)
    TG_ASSERT(input.dtype() == inputs[0].dtype()) << op.name() << " of mixed dtypes";
  switch (op.kind()) {
  case OpKind::Transpose:
    return inputs[0].permuted(attrs.axes);
  case OpKind::Reshape:
    return reshape(inputs[0], attrs.shape);
  case OpKind::BroadcastTo:
    return broadcastTo(inputs[0], attrs.shape);
  case OpKind::Slice:
    return sliceView(inputs[0], attrs.slices);
  case OpKind::ExpandDims: { // a size-1 axis (stride 0) at each new position
    std::vector<int64_t> shape = inputs[0].shape(), strides = inputs[0].strides();
    for (int64_t axis : attrs.axes) {
      shape.insert(shape.begin() + axis, 1);
      strides.insert(strides.begin() + axis, 0);
    }
    return inputs[0].view(shape, strides, inputs[0].offset());
  }
  case OpKind::Concat:
    return concat(inputs, normalizeAxis(attrs.axes.at(0), inputs[0].rank()));
  case OpKind::Stack:
    return stack(inputs, normalizeAxis(attrs.axes.at(0), inputs[0].rank() + 1));
  default:
    TG_ASSERT(false) << op.name() << " is not a shape op";
  }
  return {};
}

} // namespace tg::runtime
