#include "ir/TensorData.h"

#include <functional>

namespace tg::ir {

TensorData::TensorData(DType dtype, std::vector<int64_t> shape) : dtype(dtype), shape(std::move(shape)) {
  bytes.assign(static_cast<size_t>(numElements()) * dtypeSize(dtype), 0);
}

TensorData TensorData::scalar(DType dtype, double value) {
  TensorData data(dtype, {});
  data.set(0, value);
  return data;
}

int64_t TensorData::numElements() const {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  return count;
}

double TensorData::get(int64_t index) const {
  switch (dtype) {
  case DType::Bool:
    return data<uint8_t>()[index] ? 1.0 : 0.0;
  case DType::I32:
    return data<int32_t>()[index];
  case DType::I64:
    return static_cast<double>(data<int64_t>()[index]);
  case DType::F32:
    return data<float>()[index];
  case DType::F64:
    return data<double>()[index];
  }
  return 0;
}

void TensorData::set(int64_t index, double value) {
  switch (dtype) {
  case DType::Bool:
    data<uint8_t>()[index] = value != 0;
    break;
  case DType::I32:
    data<int32_t>()[index] = static_cast<int32_t>(value);
    break;
  case DType::I64:
    data<int64_t>()[index] = static_cast<int64_t>(value);
    break;
  case DType::F32:
    data<float>()[index] = static_cast<float>(value);
    break;
  case DType::F64:
    data<double>()[index] = value;
    break;
  }
}

size_t hashTensorData(const TensorData &data) {
  size_t h = std::hash<int>()(static_cast<int>(data.dtype));
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (int64_t d : data.shape)
    mix(std::hash<int64_t>()(d));
  mix(std::hash<std::string_view>()(
      std::string_view(reinterpret_cast<const char *>(data.bytes.data()), data.bytes.size())));
  return h;
}

} // namespace tg::ir
