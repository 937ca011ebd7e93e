#include "ir/DType.h"

namespace tg::ir {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::Bool:
    return "bool";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType d : {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64})
    if (name == dtypeName(d)) return d;
  return std::nullopt;
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::Bool:
    return 1;
  case DType::I32:
  case DType::F32:
    return 4;
  case DType::I64:
  case DType::F64:
    return 8;
  }
  return 0;
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (isInteger(a) && isInteger(b)) return DType::I64;
  if (isFloat(a) && isFloat(b)) return DType::F64;
  // An integer with a float: f32 cannot hold every i32 or i64 exactly, so NumPy widens to f64.
  return DType::F64;
}

} // namespace tg::ir
