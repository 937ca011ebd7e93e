#include "ir/SourceLoc.h"

namespace tg::ir {

std::string SourceLoc::str() const {
  if (!known()) return file ? *file : "";
  return *file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

} // namespace tg::ir
