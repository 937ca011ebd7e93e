#include "ir/SourceLoc.h"

#include <algorithm>

namespace tg::ir {

std::string SourceLoc::str() const {
  if (!known()) return file ? *file : "";
  return *file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const LineOrigin *originOf(const SourceLoc &loc, const std::vector<LineOrigin> &origins) {
  const LineOrigin *found = nullptr;
  if (loc.known())
    for (const LineOrigin &origin : origins)
      if (origin.first <= loc.line && (!found || origin.first >= found->first)) found = &origin;
  return found;
}

SourceLoc shownAs(const SourceLoc &loc, const std::vector<LineOrigin> &origins) {
  const LineOrigin *origin = originOf(loc, origins);
  if (!origin) return loc;
  int column = loc.line == origin->first ? std::max(loc.column - origin->skip, 1) : loc.column;
  return {std::make_shared<const std::string>(origin->file), origin->line + (loc.line - origin->first),
          column};
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
