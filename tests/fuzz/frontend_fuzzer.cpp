// Fuzzes the front end and the optimizer: any bytes as a script, parsed, built into a graph and optimized,
// for the CPU and for a device (the global and the cost-aware lifts, transfers, fusion), through the library
// (api/Api.h). A script may only ever be refused with diagnostics (an api::Error); anything else the
// sanitizers or an escaping exception report is a finding.
#include "api/Api.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

/// Compiles the script through the library, for a device or not; errors in the script are fine.
void compile(const std::string &source, bool onDevice, const char *lift = "global") {
  tg::api::Options options;
  options.placeForDevice = onDevice;
  options.optimizer.lift = lift;
  options.optimizer.verifyEach = true;
  options.warnings = nullptr;
  try {
    tg::api::Program::compile(tg::api::Source::string(source, "fuzz.tg"), options);
  } catch (const tg::api::Error &) {
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string source(reinterpret_cast<const char *>(data), size);
  compile(source, false);
  compile(source, true);
  compile(source, true, "cost");
  return 0;
}
