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
  return visitDType(dtype, [&](auto zero) { return static_cast<double>(data<decltype(zero)>()[index]); });
}

void TensorData::set(int64_t index, double value) {
  visitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    data<T>()[index] = std::is_same_v<T, bool> ? value != 0 : static_cast<T>(value);
  });
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
