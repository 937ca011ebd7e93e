// TensorType: what a graph value is (dtype, shape, place), as Theano's TensorType / GpuArrayType.
#pragma once

#include "ir/DType.h"
#include "ir/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tg::ir {

/// One dimension: a static size, or a symbol (`n` in `f32[n, 4]`) whose size is known only at run time.
/// Symbolic dimensions are never broadcastable (Theano's rule): only a static 1 broadcasts at compile time.
/// Symbols are interned, so a Dim is one word (the size shifted left, or the symbol's address with the low
/// bit set): types are copied on every node a pass creates or checks.
class Dim {
public:
  Dim() = default;
  static Dim of(int64_t size) { return Dim(static_cast<int64_t>(static_cast<uint64_t>(size) << 1)); }
  static Dim named(const std::string &symbol);
  bool isStatic() const { return (word_ & 1) == 0; }
  bool isOne() const { return *this == of(1); }
  /// The static size (0 for a symbol).
  int64_t size() const { return isStatic() ? word_ >> 1 : 0; }
  /// The symbol ("" for a static size).
  const std::string &symbol() const;
  bool operator==(const Dim &other) const { return word_ == other.word_; }
  bool operator!=(const Dim &other) const { return !(*this == other); }
  std::string str() const { return isStatic() ? std::to_string(size()) : symbol(); }

private:
  explicit Dim(int64_t word) : word_(word) {}
  int64_t word_ = 0;
};

/// Dimensions, outermost first; up to rank 4 without an allocation.
using Shape = SmallVector<Dim, 4>;

/// Host memory or device memory. A host and a device tensor of one shape are different types.
enum class Place : uint8_t { Host, Device };

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  Place place = Place::Host;

  size_t rank() const { return shape.size(); }
  bool isScalar() const { return shape.empty(); }
  /// Theano's broadcastable pattern: true where the dimension is a static 1.
  std::vector<bool> broadcastable() const;
  /// The static element count, or nullopt when a dimension is symbolic.
  std::optional<int64_t> staticNumElements() const;
  bool operator==(const TensorType &other) const;
  bool operator!=(const TensorType &other) const { return !(*this == other); }
  /// "f32[n, 4]", "f32" for a scalar; device tensors print as "f32[n, 4]@device".
  std::string str() const;
};

std::string shapeString(const Shape &shape);

/// The most bytes one tensor may take: NumPy's limit, 2**63 - 1, halved so that every dimension, even of a
/// bool tensor, also fits a Dim.
constexpr int64_t kMaxTensorBytes = (int64_t(1) << 62) - 1;

/// Whether a tensor of `dtype` and these static sizes (each non-negative) stays within kMaxTensorBytes: its
/// element size times the product of its non-zero sizes, counted as NumPy counts (a zero size does not hide
/// an overflow of the others).
bool fitsTensorLimit(DType dtype, const std::vector<int64_t> &sizes);
/// As above, for a type: its static dimensions (symbolic ones are bound, and checked, when it runs).
bool fitsTensorLimit(const TensorType &type);

/// NumPy broadcasting of two static-or-symbolic shapes; nullopt when they cannot broadcast.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

} // namespace tg::ir
