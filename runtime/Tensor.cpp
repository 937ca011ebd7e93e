#include "runtime/Tensor.h"

#include "ir/Assert.h"
#include "ir/SourceLoc.h"
#include "runtime/HostAllocator.h"
#include "runtime/StridedLoop.h"

#include <cstdlib>
#include <cstring>

namespace tg::runtime {

using ir::DType;

namespace {

template <typename T>
void copyElements(const Tensor &target, const Tensor &source) {
  T *out = target.data<T>();
  const T *in = source.data<T>();
  forEachRow<2>(target.shape(), {target.strides(), source.strides()},
                [&](const auto &offsets, const auto &steps, int64_t length) {
                  for (int64_t i = 0; i < length; ++i)
                    out[offsets[0] + i * steps[0]] = in[offsets[1] + i * steps[1]];
                });
}

} // namespace

std::vector<int64_t> Tensor::contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Tensor Tensor::empty(DType dtype, std::vector<int64_t> shape) {
  int64_t bytes = static_cast<int64_t>(ir::dtypeSize(dtype));
  for (int64_t size : shape) {
    TG_ASSERT(size >= 0) << "negative dimension " << size;
    if (__builtin_mul_overflow(bytes, size, &bytes))
      throw ir::UserError("out of memory: a tensor of this shape does not fit in memory");
  }
  std::shared_ptr<std::byte> buffer = allocateHostBuffer(static_cast<size_t>(bytes));
  if (!buffer)
    throw ir::UserError("out of memory: cannot allocate a tensor of " + std::to_string(bytes) + " bytes");
  Tensor tensor;
  tensor.buffer_ = std::move(buffer);
  tensor.dtype_ = dtype;
  tensor.strides_ = contiguousStrides(shape);
  tensor.shape_ = std::move(shape);
  return tensor;
}

Tensor Tensor::fromData(const ir::TensorData &data) {
  Tensor tensor = empty(data.dtype, data.shape);
  if (!data.bytes.empty()) std::memcpy(tensor.rawData(), data.bytes.data(), data.bytes.size());
  return tensor;
}

Tensor Tensor::onHost(std::shared_ptr<std::byte> buffer, DType dtype, std::vector<int64_t> shape,
                      std::vector<int64_t> strides) {
  TG_ASSERT(shape.size() == strides.size()) << "a tensor needs one stride per dimension";
  Tensor tensor;
  tensor.buffer_ = std::move(buffer);
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  tensor.strides_ = std::move(strides);
  return tensor;
}

Tensor Tensor::onDevice(std::shared_ptr<std::byte> buffer, DType dtype, std::vector<int64_t> shape) {
  Tensor tensor;
  tensor.buffer_ = std::move(buffer);
  tensor.dtype_ = dtype;
  tensor.strides_ = contiguousStrides(shape);
  tensor.shape_ = std::move(shape);
  tensor.memory_ = Memory::Device;
  return tensor;
}

ir::TensorData Tensor::toData() const {
  TG_ASSERT(memory_ == Memory::Host) << "reading the elements of a tensor in device memory";
  ir::TensorData data(dtype_, shape_);
  if (!data.bytes.empty()) std::memcpy(data.bytes.data(), contiguous().rawData(), data.bytes.size());
  return data;
}

int64_t Tensor::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape_)
    count *= size;
  return count;
}

bool Tensor::isContiguous() const {
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 0) return true;
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

Tensor Tensor::contiguous() const {
  if (isContiguous()) return *this;
  TG_ASSERT(memory_ == Memory::Host) << "copying a tensor in device memory on the host";
  Tensor copy = empty(dtype_, shape_);
  copy.copyFrom(*this);
  return copy;
}

Tensor Tensor::view(std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t offset) const {
  TG_ASSERT(shape.size() == strides.size()) << "a view needs one stride per dimension";
  Tensor result = *this;
  result.shape_ = std::move(shape);
  result.strides_ = std::move(strides);
  result.offset_ = offset;
  return result;
}

Tensor Tensor::permuted(const std::vector<int64_t> &perm) const {
  TG_ASSERT(perm.size() == rank()) << "permutation of " << perm.size() << " axes for a rank-" << rank()
                                   << " tensor";
  std::vector<int64_t> shape, strides;
  for (int64_t axis : perm) {
    shape.push_back(shape_[axis]);
    strides.push_back(strides_[axis]);
  }
  return view(std::move(shape), std::move(strides), offset_);
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  Tensor base = contiguous();
  std::vector<int64_t> strides = contiguousStrides(shape);
  Tensor result = base.view(std::move(shape), std::move(strides), base.offset_);
  TG_ASSERT(result.numElements() == numElements()) << "reshape changes the element count";
  return result;
}

void Tensor::copyFrom(const Tensor &source) const {
  TG_ASSERT(source.dtype_ == dtype_ && source.shape_ == shape_) << "copy between tensors of different types";
  TG_ASSERT(memory_ == Memory::Host && source.memory_ == Memory::Host) << "copying device memory on the host";
  size_t size = ir::dtypeSize(dtype_);
  if (isContiguous() && source.isContiguous()) {
    std::memcpy(rawData(), source.rawData(), static_cast<size_t>(numElements()) * size);
    return;
  }
  switch (size) {
  case 1:
    return copyElements<uint8_t>(*this, source);
  case 4:
    return copyElements<uint32_t>(*this, source);
  case 8:
    return copyElements<uint64_t>(*this, source);
  }
  TG_ASSERT(false) << "no element type of " << size << " bytes";
}

std::string shapeTuple(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

} // namespace tg::runtime
