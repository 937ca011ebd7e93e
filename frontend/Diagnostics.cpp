#include "frontend/Diagnostics.h"

#include <cstdio>
#include <sstream>

namespace tg::frontend {

std::string hexDigits(unsigned char byte) {
  char buffer[4];
  std::snprintf(buffer, sizeof buffer, "%02X", byte);
  return buffer;
}

const std::string &DiagnosticEngine::addSource(const std::string &file, std::string text) {
  return sources_[file] = std::move(text);
}

void DiagnosticEngine::error(const SourceLoc &loc, const std::string &message) {
  if (++errors_ == 1) first_ = ir::UserError(message, loc);
  if (errors_ <= kMaxPrinted)
    out_ << render(loc, "error", message);
  else if (errors_ == kMaxPrinted + 1)
    out_ << "note: too many errors; stopping here\n";
}

void DiagnosticEngine::note(const SourceLoc &loc, const std::string &message) {
  if (errors_ <= kMaxPrinted) out_ << render(loc, "note", message);
}

std::string DiagnosticEngine::render(const SourceLoc &loc, const char *severity,
                                     const std::string &message) const {
  std::ostringstream out;
  std::string where = loc.str();
  if (auto offset = loc.known() ? lineOffsets_.find(*loc.file) : lineOffsets_.end();
      offset != lineOffsets_.end() && loc.line > offset->second)
    where = *loc.file + ":" + std::to_string(loc.line - offset->second) + ":" + std::to_string(loc.column);
  out << (where.empty() ? "tgc" : where) << ": " << severity << ": " << message << "\n";
  if (!loc.known()) return out.str();
  auto source = sources_.find(*loc.file);
  if (source == sources_.end()) return out.str();
  // Find the line, then put the caret under the column (columns count code points, tabs are kept as tabs).
  const std::string &text = source->second;
  size_t begin = 0;
  for (int line = 1; line < loc.line && begin != std::string::npos; ++line) {
    begin = text.find('\n', begin);
    if (begin != std::string::npos) ++begin;
  }
  if (begin == std::string::npos || begin > text.size()) return out.str();
  size_t end = text.find('\n', begin);
  std::string line = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  out << line << "\n";
  std::string caret;
  int column = 1;
  for (size_t i = 0; i < line.size() && column < loc.column; ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if ((c & 0xC0) == 0x80) continue; // a UTF-8 continuation byte is part of the previous code point
    caret += c == '\t' ? '\t' : ' ';
    ++column;
  }
  out << caret << "^\n";
  return out.str();
}

} // namespace tg::frontend
