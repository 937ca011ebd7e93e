#include "frontend/Diagnostics.h"

#include <algorithm>
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

SourceLoc DiagnosticEngine::shown(const SourceLoc &loc) const {
  auto origins = loc.known() ? lineOrigins_.find(*loc.file) : lineOrigins_.end();
  return origins == lineOrigins_.end() ? loc : ir::shownAs(loc, origins->second);
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
  const ir::LineOrigin *origin = nullptr;
  if (auto origins = loc.known() ? lineOrigins_.find(*loc.file) : lineOrigins_.end();
      origins != lineOrigins_.end())
    origin = ir::originOf(loc, origins->second);
  std::string where = shown(loc).str();
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
  int column = 1;
  if (origin && origin->first == loc.line) { // the REPL's wrapper (ASCII) is not shown
    line.erase(0, std::min(line.size(), static_cast<size_t>(origin->skip)));
    column = 1 + origin->skip;
  }
  out << line << "\n";
  std::string caret;
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
