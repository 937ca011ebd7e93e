// Diagnostics for users: "FILE:LINE:COL: error: message", then the source line and a caret under the column.
#pragma once

#include "ir/SourceLoc.h"

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace tg::frontend {

using ir::SourceLoc;

/// "FF" for the byte 0xff: how messages name a byte.
std::string hexDigits(unsigned char byte);

/// "; did you mean 'sqrt'?" for the candidate closest to `name` (letters inserted, removed, changed or two
/// swapped: one edit at least, and at most a third of the name's letters), or "" when none is that close.
std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates);

class DiagnosticEngine {
public:
  explicit DiagnosticEngine(std::ostream &out) : out_(out) {}

  /// Remembers a file's text so that diagnostics in it can show the offending line; returns the kept text.
  const std::string &addSource(const std::string &file, std::string text);
  /// Shows the lines of `file` as the files and lines they came from (the REPL's compiled text).
  void setLineOrigins(const std::string &file, std::vector<ir::LineOrigin> origins) {
    lineOrigins_[file] = std::move(origins);
  }
  /// `loc` as messages show it: through the line origins of its file.
  SourceLoc shown(const SourceLoc &loc) const;
  /// Prints an error now (message starts lower-case, no trailing period) and counts it.
  void error(const SourceLoc &loc, const std::string &message);
  void note(const SourceLoc &loc, const std::string &message);
  /// Prints a user error thrown from a later stage (type inference, run time, file loading).
  void report(const ir::UserError &error) { this->error(error.loc, error.message); }

  /// A diagnostic as error() prints it: "FILE:LINE:COL: SEVERITY: message", then the source line and a caret
  /// when the text of the file is known.
  std::string render(const SourceLoc &loc, const char *severity, const std::string &message) const;

  /// The first error reported (message and location), for callers that hand errors on as values.
  const ir::UserError &firstError() const { return first_; }
  unsigned errorCount() const { return errors_; }
  bool hasErrors() const { return errors_ > 0; }
  /// Errors after this many are counted but not printed, so that one mistake cannot flood the terminal.
  static constexpr unsigned kMaxPrinted = 20;

private:
  std::ostream &out_;
  std::map<std::string, std::string> sources_;
  std::map<std::string, std::vector<ir::LineOrigin>> lineOrigins_;
  unsigned errors_ = 0;
  ir::UserError first_{""};
};

} // namespace tg::frontend
