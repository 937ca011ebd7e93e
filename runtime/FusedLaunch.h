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

/// A fused node's operands bound for one call: the outputs, strides, pointers and the layout they allow
/// (codegen::kernelLayout).
struct Launch {
  Tensor output;
  std::vector<Tensor> extraOutputs; // one per ScalarGraph::extraOutputs, of the output's shape
  std::vector<int64_t> shape, strides;
  std::vector<const void *> inputs; // the inputs' pointers, then the extra outputs' (KernelArgs::inputs)
  codegen::Layout layout = codegen::Layout::Contiguous;
  codegen::KernelArgs args{};

  /// The output's shape is the operands' broadcast shape, broadcast with `shape` (a program of immediates
  /// alone, with no operand, gets its shape there).
  Launch(const ir::ScalarGraph &body, const std::vector<Tensor> &operands, const AllocateOutput &allocate,
         std::vector<int64_t> shape = {});
  Launch(const Launch &) = delete; // args points into the members
};

/// A reduction node's operands bound for one call: the iteration space (the inputs' broadcast shape) with
/// the kept axes first and the reduced axes last (Kernel.h's KernelArgs), the output over the kept axes, and
/// the extra outputs over the space as it is (C order).
struct ReductionLaunch {
  Tensor output;
  std::vector<Tensor> extraOutputs; // one per ScalarGraph::extraOutputs, over the iteration space
  std::vector<int64_t> space;       // the iteration space, its axes in their order
  std::vector<int64_t> shape, strides;
  std::vector<const void *> inputs;
  codegen::Layout layout = codegen::Layout::Contiguous;
  codegen::KernelArgs args{};
  int64_t reducedCount = 1;

  ReductionLaunch(const ir::Op &op, const std::vector<Tensor> &operands, ir::DType dtype,
                  const AllocateOutput &allocate);
  ReductionLaunch(const ReductionLaunch &) = delete;
};

/// What a host fused kernel's launch derived from its operands' shapes and strides (the kernel, its layout
/// and arguments, the output's shape, the threads), kept by the executor for the node's next call: while the
/// operands keep their shapes and strides, as they do step after step, a launch only binds their pointers and
/// an output.
class HostLaunchMemo {
public:
  /// Whether `operands` have the shapes and strides of the launch recorded last.
  bool fits(const std::vector<Tensor> &operands) const;
  /// Records a launch over `operands`.
  void record(const std::vector<Tensor> &operands, const codegen::KernelSpec &spec,
              codegen::HostKernel kernel, const codegen::KernelArgs &args, std::vector<int64_t> outputShape,
              std::vector<int64_t> extraShape, int64_t threads);

  codegen::KernelSpec spec;
  codegen::HostKernel kernel = nullptr;
  std::vector<int64_t> shape, strides;          // the arguments' iteration space and strides
  std::vector<int64_t> outputShape, extraShape; // the first output's shape, and the extra outputs'
  int64_t reducedRank = 0, threads = 1;

private:
  std::vector<int64_t> operandLayout_; // each operand's rank, shape and strides, one after another
};

} // namespace tg::runtime
