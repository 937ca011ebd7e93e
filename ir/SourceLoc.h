// A position in a .tg source file, carried by AST nodes and graph nodes so that errors found late
// (type inference, run time) still point at the user's code.
#pragma once

#include <exception>
#include <memory>
#include <string>

namespace tg::ir {

struct SourceLoc {
  std::shared_ptr<const std::string> file; // shared: every node of one file points at one string
  int line = 0;                            // 1-based; 0 means unknown
  int column = 0;                          // 1-based

  bool known() const { return file && line > 0; }
  /// "file.tg:3:14", or "" when unknown.
  std::string str() const;
};

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
