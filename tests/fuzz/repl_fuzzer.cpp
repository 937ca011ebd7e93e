// Fuzzes the REPL: any bytes as a piped session (lines, multi-line inputs, commands, statements), each input
// compiled and run on the CPU. A session may only print errors; a crash, a sanitizer report or an escaping
// exception is a finding.
//
// So that a million sessions run in hours: kernels run on the CPU runtime's own kernels (fusion off, so no
// kernel is JIT-compiled; :llvm and :ptx still generate code), buffers above 16 MiB are refused as out of
// memory, and :save, the one command that writes files, is not run. Every other command is.
#include "runtime/HostAllocator.h"
#include "tools/Repl.h"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  tg::runtime::setHostBufferLimit(size_t(16) << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string session(reinterpret_cast<const char *>(data), size);
  if (session.find(":save") != std::string::npos) return -1; // never added to the corpus
  std::istringstream in(session);
  std::ostringstream out, err;
  tg::tools::ReplOptions options;
  options.device = "cpu";
  options.optimizer.exclude = {"fusion"};
  tg::tools::runRepl(options, in, out, err);
  return 0;
}
