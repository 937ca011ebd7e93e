// Element types of tgc tensors and NumPy's promotion rules between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tg::ir {

enum class DType : uint8_t { Bool, I32, I64, F32, F64 };

/// The language's spelling: "bool", "i32", "i64", "f32", "f64".
const char *dtypeName(DType dtype);
std::optional<DType> parseDType(std::string_view name);
size_t dtypeSize(DType dtype);
inline bool isFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64;
}
inline bool isInteger(DType dtype) {
  return dtype == DType::I32 || dtype == DType::I64;
}

/// NumPy's result type for two strong operands: bool < i32 < i64, and an integer meeting f32 gives f64.
DType promote(DType a, DType b);

} // namespace tg::ir
