#include "ir/SourceLoc.h"

namespace tg::ir {

std::string SourceLoc::str() const {
  if (!known()) return file ? *file : "";
  return *file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

SourceLoc locationOfOffset(const std::string &text, size_t offset, std::shared_ptr<const std::string> file) {
  SourceLoc loc{std::move(file), 1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++loc.column; // a UTF-8 continuation byte is part of the previous code point
    }
  }
  return loc;
}

} // namespace tg::ir
