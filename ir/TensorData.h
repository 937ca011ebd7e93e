// TensorData: a dense, C-ordered array of one dtype held by value. Graph constants and .npy files use it;
// the runtime's strided Tensor converts from and to it.
#pragma once

#include "ir/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tg::ir {

struct TensorData {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes; // numElements() * dtypeSize(dtype), C order, native endianness

  TensorData() = default;
  TensorData(DType dtype, std::vector<int64_t> shape);
  /// A 0-d array holding `value` converted to `dtype` (as a C++ cast would; bool is value != 0).
  static TensorData scalar(DType dtype, double value);

  int64_t numElements() const;
  template <typename T>
  T *data() {
    return reinterpret_cast<T *>(bytes.data());
  }
  template <typename T>
  const T *data() const {
    return reinterpret_cast<const T *>(bytes.data());
  }
  /// Element `index` (in C order) converted to double, for printing and folding.
  double get(int64_t index) const;
  void set(int64_t index, double value);
  bool operator==(const TensorData &other) const {
    return dtype == other.dtype && shape == other.shape && bytes == other.bytes;
  }
};

/// Hash of dtype, shape and bytes (for merging equal constants).
size_t hashTensorData(const TensorData &data);

} // namespace tg::ir
