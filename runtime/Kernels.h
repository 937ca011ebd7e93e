// The CPU kernels: one entry point that runs any op of ir/Ops.def on host tensors.
#pragma once

#include "ir/Op.h"
#include "ir/ScalarGraph.h"
#include "runtime/Tensor.h"

#include <vector>

namespace tg::runtime {

/// Runs `op` on `inputs` (actual shapes; any strides) and returns its outputs. `outputTypes` are the node's
/// static output types: their dtypes are authoritative, their shapes (possibly symbolic) are not used.
/// Outputs may be views sharing an input's buffer. Throws UserError without a location when the inputs do not
/// fit at run time (shapes that cannot broadcast, an index out of bounds, ...); a dtype the op does not
/// accept is a compiler bug. With `reuseInputs` the caller gives the inputs up: an elementwise fused kernel
/// may write its result over one that no other handle shares (Tensor::ownsBufferAlone), contiguous, of the
/// result's dtype and shape.
std::vector<Tensor> runOp(const ir::Op &op, const std::vector<Tensor> &inputs,
                          const std::vector<ir::TensorType> &outputTypes, bool reuseInputs = false);

/// runOp's result, of `dtype`, without the vectors around it, for an op of one output: what the executor
/// calls every step.
Tensor runKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype,
                 bool reuseInputs = false);

/// A fused node's program evaluated instruction by instruction with the kernels above, over whole tensors
/// (then reduced, for a reduction with a prologue), giving its outputs (the first of `dtype`, then the
/// extra outputs): the reference the generated kernels are tested against.
std::vector<Tensor> evaluateFusedByKernels(const ir::Op &fused, const std::vector<Tensor> &inputs,
                                           ir::DType dtype);

} // namespace tg::runtime
