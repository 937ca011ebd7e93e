// TG_ASSERT: the channel for compiler bugs. User errors are UserError, never asserts.
#pragma once

#include <sstream>
#include <string>

namespace tg::ir {

/// Collects a message after a failed condition and aborts with it when destroyed: TG_ASSERT(x) << "why".
class AssertFailure {
public:
  AssertFailure(const char *condition, const char *file, int line);
  [[noreturn]] ~AssertFailure();
  template <typename T>
  AssertFailure &operator<<(const T &part) {
    stream << part;
    return *this;
  }

private:
  std::ostringstream stream;
};

} // namespace tg::ir

#define TG_ASSERT(cond)                                                                                      \
  if (cond) {                                                                                                \
  } else                                                                                                     \
    ::tg::ir::AssertFailure(#cond, __FILE__, __LINE__)
