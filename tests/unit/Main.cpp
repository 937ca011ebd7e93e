// The unit tests' main: GoogleTest's, after choosing the CPU host kernels are compiled for from $TGC_HOST_CPU
// (as tgc does), so that the suite also runs under each x86-64 level (tests/CMakeLists.txt).
#include "codegen/Kernel.h"
#include "ir/SourceLoc.h"

#include <cstdio>
#include <cstdlib>
#include <gtest/gtest.h>

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (const char *cpu = std::getenv("TGC_HOST_CPU"); cpu && *cpu) {
    try {
      tg::codegen::setHostCpu(cpu);
    } catch (const tg::ir::UserError &error) {
      std::fprintf(stderr, "$TGC_HOST_CPU: %s\n", error.message.c_str());
      return 2;
    }
  }
  return RUN_ALL_TESTS();
}
