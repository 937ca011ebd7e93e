// A position in a .tg source file, carried by AST nodes and graph nodes so that errors found late
// (type inference, run time) still point at the user's code.
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace tg::ir {

struct SourceLoc {
  std::shared_ptr<const std::string> file; // shared: every node of one file points at one string
  int line = 0;                            // 1-based; 0 means unknown
  int column = 0;                          // 1-based

  bool known() const { return file && line > 0; }
  /// "file.tg:3:14", or "" when unknown.
  std::string str() const;
};

/// Where lines of a compiled text come from when they are not its own: the REPL compiles what the session
/// keeps (definitions typed or loaded earlier), then a statement typed or read from a script. From line
/// `first` of the text on, line `first + i` is shown as line `line + i` of `file`; on line `first` itself the
/// first `skip` columns (text the REPL wrapped it in) are not shown.
struct LineOrigin {
  int first = 1;
  std::string file;
  int line = 1;
  int skip = 0;
};

/// The origin of `loc`'s line (the last of `origins` starting at or before it), or null.
const LineOrigin *originOf(const SourceLoc &loc, const std::vector<LineOrigin> &origins);
/// `loc` as its origin shows it (itself when it has none).
SourceLoc shownAs(const SourceLoc &loc, const std::vector<LineOrigin> &origins);

/// The location of a byte offset into UTF-8 text: 1-based line, and column in code points (as ANTLR counts).
SourceLoc locationOfOffset(const std::string &text, size_t offset, std::shared_ptr<const std::string> file);

/// An error a user can cause (a bad script, a wrong shape, a bad input file), thrown where it is found and
/// reported with its location and exit code 1. Never used for compiler bugs (those are TG_ASSERTs).
class UserError : public std::exception {
public:
  explicit UserError(std::string message, SourceLoc loc = {})
      : message(std::move(message)), loc(std::move(loc)) {}
  const char *what() const noexcept override { return message.c_str(); }

  std::string message;
  SourceLoc loc;
};

} // namespace tg::ir
