#include "ir/DType.h"

#include <type_traits>

namespace tg::ir {

namespace {

const DTypeInfo kDTypeInfos[] = {
#define DTYPE(Enum, name, CType, kind, npy, numpy) {name, sizeof(CType), DTypeKind::kind, npy, numpy},
#include "ir/DTypes.def"
};

} // namespace

const DTypeInfo &dtypeInfo(DType dtype) {
  return kDTypeInfos[static_cast<size_t>(dtype)];
}

std::string dtypeNames() {
  std::string text;
  for (DType dtype : kAllDTypes)
    text += (text.empty() ? "" : ", ") + std::string(dtypeName(dtype));
  return text;
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType d : kAllDTypes)
    if (name == dtypeName(d)) return d;
  return std::nullopt;
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
