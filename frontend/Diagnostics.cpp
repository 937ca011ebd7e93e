#include "frontend/Diagnostics.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>
#include <vector>

namespace tg::frontend {

std::string hexDigits(unsigned char byte) {
  char buffer[4];
  std::snprintf(buffer, sizeof buffer, "%02X", byte);
  return buffer;
}

namespace {

/// The optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours.
size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

} // namespace

std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates) {
  auto lower = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
  };
  // Scores are doubled distances, less one for a name that differs only in case: it wins a tie.
  size_t limit = std::max<size_t>(1, name.size() / 3), best = 2 * limit + 1;
  const std::string *closest = nullptr;
  for (const std::string &candidate : candidates) {
    if (candidate == name || candidate.size() > name.size() + limit || name.size() > candidate.size() + limit)
      continue;
    size_t score = 2 * editDistance(name, candidate) - (lower(candidate) == lower(name) ? 1 : 0);
    if (score < best) best = score, closest = &candidate;
  }
  return closest ? "; did you mean '" + *closest + "'?" : "";
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
