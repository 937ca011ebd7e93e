// What the tgc command and its REPL share: the printers of the compile stages that live outside ir/ (kernels,
// placement), the optimizer as the command line runs it, and opening the device a run asks for.
#pragma once

#include "ir/Program.h"
#include "opt/Pipeline.h"
#include "runtime/Device.h"
#include "runtime/Tensor.h"

#include <memory>
#include <ostream>
#include <string>

namespace tg::tools {

/// Prints `name = value`, continuation lines aligned under the first, as NumPy aligns a repr.
void printNamed(std::ostream &out, const std::string &name, const runtime::Tensor &tensor);

/// Runs the optimizer with `options` (constant folding by the CPU runtime, warnings to standard error).
opt::OptimizerProfile optimizeProgram(ir::Program &program, opt::OptimizerOptions options,
                                      opt::PlacementReasons *placement = nullptr);

/// The cost model of placement describes `device` when it is a GPU that says what it is (the simulated device
/// stands for the model's default GPU).
void describeDevice(opt::CostModel &model, const runtime::Device *device);

/// --explain-placement: each node in order, where it runs, and why.
std::string explainPlacement(const ir::Program &program, const opt::PlacementReasons &reasons);

/// --emit=llvm (ptx false): the LLVM IR of every host kernel; --emit=ptx: the PTX of every device kernel for
/// `gpuArch`, or of every kernel when nothing runs on a device, and of the generated matmul kernel for each
/// device matmul (what a GPU without cuBLAS runs). Each is headed by a comment naming its node and line.
std::string printKernels(const ir::Program &program, bool ptx, const std::string &gpuArch);

/// The device a run places its graph on, by name: none for cpu; sim; cuda (an ir::UserError saying what is
/// missing when it cannot open); auto: cuda when a driver and a GPU answer, else none. `why` says which and
/// why, for -v.
std::unique_ptr<runtime::Device> openDevice(const std::string &name, std::string &why);

} // namespace tg::tools
