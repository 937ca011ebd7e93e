// Element types of tgc tensors (ir/DTypes.def) and NumPy's promotion rules between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace tg::ir {

enum class DType : uint8_t {
#define DTYPE(Enum, name, CType, kind, npy, numpy) Enum,
#include "ir/DTypes.def"
};

enum class DTypeKind : uint8_t { Bool, Int, Float };

struct DTypeInfo {
  const char *name; // the language's spelling: "f32"
  size_t size;      // bytes per element
  DTypeKind kind;
  const char *npy;   // the .npy descriptor, little-endian: "<f4"
  const char *numpy; // NumPy's name: "float32"
};

const DTypeInfo &dtypeInfo(DType dtype);
/// Every dtype, in the order of ir/DTypes.def.
inline constexpr DType kAllDTypes[] = {
#define DTYPE(Enum, name, CType, kind, npy, numpy) DType::Enum,
#include "ir/DTypes.def"
};
/// The spellings of every dtype, as messages list them: "f32, f64, i32, i64, bool".
std::string dtypeNames();

inline const char *dtypeName(DType dtype) {
  return dtypeInfo(dtype).name;
}
std::optional<DType> parseDType(std::string_view name);
inline size_t dtypeSize(DType dtype) {
  return dtypeInfo(dtype).size;
}
inline bool isFloat(DType dtype) {
  return dtypeInfo(dtype).kind == DTypeKind::Float;
}
inline bool isInteger(DType dtype) {
  return dtypeInfo(dtype).kind == DTypeKind::Int;
}

/// Calls f with a value of the C++ element type of `dtype` (bool, int32_t, int64_t, float, double):
/// visitDType(t.dtype(), [&](auto zero) { using T = decltype(zero); ... }).
template <typename F>
decltype(auto) visitDType(DType dtype, F &&f) {
  switch (dtype) {
#define DTYPE(Enum, name, CType, kind, npy, numpy)                                                           \
  case DType::Enum:                                                                                          \
    return f(CType{});
#include "ir/DTypes.def"
  }
  return f(double{}); // not reached: every dtype has its case
}

/// The dtype of a C++ element type.
template <typename T>
constexpr DType dtypeOf() {
#define DTYPE(Enum, name, CType, kind, npy, numpy)                                                           \
  if constexpr (std::is_same_v<T, CType>)                                                                    \
    return DType::Enum;                                                                                      \
  else
#include "ir/DTypes.def"
  {
    static_assert(sizeof(T) == 0, "not the C++ type of a dtype");
    return DType::F32;
  }
}

/// NumPy's result type for two strong operands: bool < i32 < i64, and an integer meeting f32 gives f64.
DType promote(DType a, DType b);

} // namespace tg::ir
