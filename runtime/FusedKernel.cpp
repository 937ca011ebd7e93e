// Fused nodes on the CPU runtime: the scalar program of a `fused` node over whole tensors.
#include "ir/ScalarGraph.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"

namespace tg::runtime {

Tensor evaluateFusedByKernels(const ir::Op &fused, const std::vector<Tensor> &inputs, ir::DType dtype) {
  const ir::ScalarGraph &body = *fused.attrs().body;
  TG_ASSERT(inputs.size() == body.numInputs())
      << "fused: " << inputs.size() << " inputs for a body of " << body.numInputs();
  std::vector<Tensor> values = inputs;
  for (const ir::ScalarInstr &instr : body.body) {
    if (instr.kind == ir::OpKind::Full) {
      values.push_back(Tensor::fromData(ir::TensorData::scalar(instr.dtype, instr.immediate)));
      continue;
    }
    std::vector<Tensor> operands;
    for (uint32_t operand : instr.operands)
      operands.push_back(values[operand]);
    ir::OpAttrs attrs;
    attrs.dtype = instr.dtype;
    ir::TensorType type{instr.dtype, {}, ir::Place::Host};
    values.push_back(runOp(ir::Op(instr.kind, attrs), operands, {type})[0]);
  }
  // The result has the broadcast shape of all inputs, even where the program's last value reads fewer.
  Tensor result = values.back();
  std::vector<int64_t> shape = result.shape();
  for (const Tensor &input : inputs)
    shape = broadcastShapes(shape, input.shape());
  if (shape != result.shape()) {
    Tensor broadcast = Tensor::empty(result.dtype(), shape);
    broadcast.copyFrom(result.view(shape, broadcastStrides(result, shape), result.offset()));
    result = broadcast;
  }
  if (!body.reduction) return result;
  return reductionKernel(ir::Op(*body.reduction, fused.attrs()), result, dtype);
}

Tensor fusedKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype) {
  return evaluateFusedByKernels(op, inputs, dtype);
}

} // namespace tg::runtime
