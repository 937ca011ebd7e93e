// The arguments of one fused-kernel launch (codegen/Kernel.h's KernelArgs), computed from the operands'
// shapes and strides the same way for every target: the host JIT, the simulated device and CUDA. Only where
// the output goes differs, so the caller allocates it.
#pragma once

#include "codegen/Kernel.h"
#include "ir/Op.h"
#include "runtime/Tensor.h"

#include <functional>
#include <vector>

namespace tg::runtime {

/// Allocates a C-contiguous output of a dtype and shape (host memory, or a device's).
using AllocateOutput = std::function<Tensor(ir::DType, std::vector<int64_t>)>;

/// A fused node's operands bound for one call: the output, strides, pointers and the layout they allow
/// (codegen::kernelLayout).
struct Launch {
  Tensor output;
  std::vector<int64_t> shape, strides;
  std::vector<const void *> inputs;
  codegen::Layout layout = codegen::Layout::Contiguous;
  codegen::KernelArgs args{};

  /// The output's shape is the operands' broadcast shape, broadcast with `shape` (a program of immediates
  /// alone, with no operand, gets its shape there).
  Launch(const ir::ScalarGraph &body, const std::vector<Tensor> &operands, const AllocateOutput &allocate,
         std::vector<int64_t> shape = {});
  Launch(const Launch &) = delete; // args points into the members
};

/// A reduction node's operands bound for one call: the iteration space (the inputs' broadcast shape) with
/// the kept axes first and the reduced axes last (Kernel.h's KernelArgs), and the output over the kept axes.
struct ReductionLaunch {
  Tensor output;
  std::vector<int64_t> shape, strides;
  std::vector<const void *> inputs;
  codegen::Layout layout = codegen::Layout::Contiguous;
  codegen::KernelArgs args{};
  int64_t reducedCount = 1;

  ReductionLaunch(const ir::Op &op, const std::vector<Tensor> &operands, ir::DType dtype,
                  const AllocateOutput &allocate);
  ReductionLaunch(const ReductionLaunch &) = delete;
};

} // namespace tg::runtime
