// The printers of the compile stages that live outside ir/ (kernels, placement), for the library
// (api/Api.h), and the value printer the command and the REPL share.
#pragma once

#include "ir/Program.h"
#include "opt/Pipeline.h"
#include "runtime/Tensor.h"

#include <ostream>
#include <string>

namespace tg::tools {

/// Prints `name = value`, continuation lines aligned under the first, as NumPy aligns a repr.
void printNamed(std::ostream &out, const std::string &name, const runtime::Tensor &tensor);

/// --explain-placement: each node in order, where it runs, and why.
std::string explainPlacement(const ir::Program &program, const opt::PlacementReasons &reasons);

/// --emit=llvm (ptx false): the LLVM IR of every host kernel; --emit=ptx: the PTX of every device kernel for
/// `gpuArch`, or of every kernel when nothing runs on a device, and of the generated matmul kernel for each
/// device matmul (what a GPU without cuBLAS runs). Each is headed by a comment naming its node and line.
std::string printKernels(const ir::Program &program, bool ptx, const std::string &gpuArch);

} // namespace tg::tools
