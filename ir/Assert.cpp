#include "ir/Assert.h"

#include <cstdio>
#include <cstdlib>

namespace tg::ir {

AssertFailure::AssertFailure(const char *condition, const char *file, int line) {
  stream << file << ":" << line << ": internal compiler error: assertion `" << condition << "' failed: ";
}

AssertFailure::~AssertFailure() {
  std::fprintf(stderr, "%s\n", stream.str().c_str());
  std::fflush(stderr);
  std::_Exit(3); // exit code 3: an internal error
}

} // namespace tg::ir
