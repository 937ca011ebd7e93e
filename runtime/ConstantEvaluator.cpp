#include "runtime/ConstantEvaluator.h"

#include "runtime/Kernels.h"

namespace tg::runtime {

ir::TensorData evaluateConstant(const ir::Op &op, const std::vector<const ir::TensorData *> &operands) {
  std::vector<Tensor> inputs;
  std::vector<ir::TensorType> inputTypes;
  for (const ir::TensorData *operand : operands) {
    inputs.push_back(Tensor::fromData(*operand));
    ir::Shape shape;
    for (int64_t d : operand->shape)
      shape.push_back(ir::Dim::of(d));
    inputTypes.push_back({operand->dtype, shape, ir::Place::Host});
  }
  ir::TensorType outputType = ir::inferType(op, inputTypes);
  return runOp(op, inputs, {outputType}).at(0).toData();
}

} // namespace tg::runtime
