#include "ir/Type.h"

#include <algorithm>
#include <mutex>
#include <unordered_set>

namespace tg::ir {

Dim Dim::named(const std::string &symbol) {
  static std::mutex mutex;
  static std::unordered_set<std::string> symbols; // node-based: an element's address never changes
  std::lock_guard<std::mutex> lock(mutex);
  auto address = reinterpret_cast<uintptr_t>(&*symbols.insert(symbol).first); // aligned: the low bit is free
  return Dim(static_cast<int64_t>(address | 1));
}

const std::string &Dim::symbol() const {
  static const std::string none;
  return isStatic() ? none
                    : *reinterpret_cast<const std::string *>(static_cast<uintptr_t>(word_) & ~uintptr_t(1));
}

std::vector<bool> TensorType::broadcastable() const {
  std::vector<bool> flags;
  for (const Dim &d : shape)
    flags.push_back(d.isOne());
  return flags;
}

std::optional<int64_t> TensorType::staticNumElements() const {
  int64_t count = 1;
  for (const Dim &d : shape) {
    if (!d.isStatic()) return std::nullopt;
    count *= d.size();
  }
  return count;
}

bool fitsTensorLimit(DType dtype, const std::vector<int64_t> &sizes) {
  int64_t bytes = static_cast<int64_t>(dtypeSize(dtype));
  for (int64_t size : sizes)
    if (size != 0 && (__builtin_mul_overflow(bytes, size, &bytes) || bytes > kMaxTensorBytes)) return false;
  return true;
}

bool fitsTensorLimit(const TensorType &type) {
  std::vector<int64_t> sizes;
  for (const Dim &d : type.shape)
    if (d.isStatic()) sizes.push_back(d.size());
  return fitsTensorLimit(type.dtype, sizes);
}

bool TensorType::operator==(const TensorType &other) const {
  return dtype == other.dtype && shape == other.shape && place == other.place;
}

std::string shapeString(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + shape[i].str();
  return text + "]";
}

std::string TensorType::str() const {
  std::string text = dtypeName(dtype);
  if (!shape.empty()) text += shapeString(shape);
  if (place == Place::Device) text += "@device";
  return text;
}

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right, padding the shorter shape with ones.
    const Dim one = Dim::of(1);
    const Dim &x = i < rank - a.size() ? one : a[i - (rank - a.size())];
    const Dim &y = i < rank - b.size() ? one : b[i - (rank - b.size())];
    if (x.isOne())
      result[i] = y;
    else if (y.isOne() || x == y)
      result[i] = x;
    else if (x.isStatic() && y.isStatic())
      return std::nullopt;
    else
      result[i] = x.isStatic() ? x : y; // a symbol meeting another size: checked at run time
  }
  return result;
}

} // namespace tg::ir
