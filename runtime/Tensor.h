// Tensor: a host array. A handle to a shared, 64-byte aligned buffer plus a strided view of it (dtype, shape,
// strides in elements, offset), so that transpose, slicing and broadcasting are views without copies.
// Copies of a Tensor share the buffer; kernels never write into their inputs. A tensor in a device's
// memory (runtime/DeviceLayer.h) is the same handle over a device address: its views are made on the host,
// and only kernels read its elements.
#pragma once

#include "ir/TensorData.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tg::runtime {

/// Where a tensor's elements are: host memory, or a device's (CUDA's, or the simulated device's own).
enum class Memory : uint8_t { Host, Device };

class Tensor {
public:
  /// An empty handle with no buffer (a placeholder, not a zero-size array).
  Tensor() = default;

  /// A C-contiguous tensor with uninitialized elements.
  static Tensor empty(ir::DType dtype, std::vector<int64_t> shape);
  /// A C-contiguous copy of `data`.
  static Tensor fromData(const ir::TensorData &data);
  /// A C-contiguous tensor over `buffer`, which holds device memory (its pointer is the device address) and
  /// returns it to its allocator when the last handle goes.
  static Tensor onDevice(std::shared_ptr<std::byte> buffer, ir::DType dtype, std::vector<int64_t> shape);
  /// A host tensor over memory another owner keeps (a NumPy array's): `buffer` points at the element of
  /// offset 0 and its deleter lets the owner go when the last handle does. Strides are in elements and not
  /// negative; the elements must stay unchanged while a run reads them.
  static Tensor onHost(std::shared_ptr<std::byte> buffer, ir::DType dtype, std::vector<int64_t> shape,
                       std::vector<int64_t> strides);
  /// A C-ordered copy of the elements (host memory only).
  ir::TensorData toData() const;
  Memory memory() const { return memory_; }

  ir::DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  const std::vector<int64_t> &strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  size_t rank() const { return shape_.size(); }
  int64_t numElements() const;
  bool defined() const { return buffer_ != nullptr; }
  /// Whether no other handle shares this one's buffer: nothing else (a param, a cached constant) reads it, so
  /// writing to it changes only this value.
  bool ownsBufferAlone() const { return buffer_.use_count() == 1; }
  /// Whether `other` is a view of the same buffer.
  bool sharesBuffer(const Tensor &other) const { return buffer_ == other.buffer_; }

  /// True when the elements lie in C order without gaps.
  bool isContiguous() const;
  /// This tensor when contiguous, else a contiguous copy (host memory only).
  Tensor contiguous() const;
  /// Another view of the same buffer (strides in elements, offset from the buffer start).
  Tensor view(std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t offset) const;
  /// The view with axes reordered: axis i of the result is axis perm[i] of this tensor.
  Tensor permuted(const std::vector<int64_t> &perm) const;
  /// The same elements in C order with another shape (of the same element count): a view when contiguous.
  Tensor reshaped(std::vector<int64_t> shape) const;
  /// Copies the elements of `source` (same dtype and shape, any strides) into this view (host memory only).
  void copyFrom(const Tensor &source) const;

  /// The address of the element at offset(); index it with strides. A handle: constness does not protect the
  /// elements.
  void *rawData() const { return buffer_.get() + offset_ * static_cast<int64_t>(ir::dtypeSize(dtype_)); }
  template <typename T>
  T *data() const {
    return static_cast<T *>(rawData());
  }

  /// C-order strides (in elements) of a contiguous tensor of `shape`.
  static std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);

private:
  std::shared_ptr<std::byte> buffer_;
  ir::DType dtype_ = ir::DType::F32;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
  Memory memory_ = Memory::Host;
};

/// A shape as Python prints a tuple, for messages in NumPy's words: "(3, 4)", "(5,)", "()".
std::string shapeTuple(const std::vector<int64_t> &shape);

} // namespace tg::runtime
