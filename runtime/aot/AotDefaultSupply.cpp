// The AOT runtime's kernel supply (codegen/KernelSupply.h): the tables of the libraries opened, never the
// JIT. In a file of its own, so that tgc's unit tests (which link the JIT's) can test AotKernelSupply.
#include "runtime/aot/AotKernelSupply.h"

namespace tg::codegen {

KernelSupply &defaultKernelSupply() {
  return runtime::aot::aotKernelSupply();
}

} // namespace tg::codegen
