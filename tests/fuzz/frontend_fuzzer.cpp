// Fuzzes the front end and the optimizer: any bytes as a script, parsed, built into a graph and optimized,
// for the CPU and for a device (the global and the cost-aware lifts, transfers, fusion). A script may only
// ever be refused with diagnostics (a UserError); anything else the sanitizers or an escaping exception
// report is a finding.
#include "frontend/Diagnostics.h"
#include "frontend/GraphBuilder.h"
#include "frontend/ModuleLoader.h"
#include "ir/SourceLoc.h"
#include "tools/Stages.h"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

namespace {

/// Builds the script and optimizes it, for a device or not; user errors are the script's, and fine.
void compile(const std::string &source, bool onDevice, const char *lift = "global") {
  std::ostringstream diagnostics;
  tg::frontend::DiagnosticEngine diags(diagnostics);
  tg::frontend::ModuleLoader loader(diags, {});
  const tg::frontend::Module *module = loader.loadSource("fuzz.tg", source);
  if (!module || diags.hasErrors()) return;
  try {
    std::unique_ptr<tg::ir::Program> program = tg::frontend::buildProgram(*module, loader, diags);
    if (!program || diags.hasErrors()) return;
    tg::opt::OptimizerOptions options;
    options.device = onDevice;
    options.lift = lift;
    options.pricePlacement = onDevice;
    options.verifyEach = true;
    tg::tools::optimizeProgram(*program, options);
  } catch (const tg::ir::UserError &) {
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
