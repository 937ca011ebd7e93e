#include "opt/Rewrite.h"

namespace tg::opt {

ir::Value *RewriteContext::make(ir::OpKind kind, std::vector<ir::Value *> inputs, ir::OpAttrs attrs) {
  ir::SourceLoc loc = current ? current->loc() : ir::SourceLoc{};
  return graph.addNode(ir::Op(kind, std::move(attrs)), std::move(inputs), loc)->output();
}

ir::Value *RewriteContext::constant(double value, ir::DType dtype) {
  return graph.addConstant(ir::TensorData::scalar(dtype, value));
}

std::optional<double> RewriteContext::uniformValue(const ir::Value *value) {
  if (!value->isConstant())
    return std::nullopt;
  const ir::TensorData &data = value->constant();
  if (data.numElements() == 0)
    return std::nullopt;
  double first = data.get(0);
  for (int64_t i = 1; i < data.numElements(); ++i)
    if (data.get(i) != first)
      return std::nullopt;
  return first;
}

bool RewriteContext::isConstantEqualTo(const ir::Value *value, double expected) {
  std::optional<double> uniform = uniformValue(value);
  return uniform && *uniform == expected;
}

ir::Value *RewriteContext::ifSameType(const ir::Node *node, ir::Value *value) {
  const ir::TensorType &want = node->output()->type(), &have = value->type();
  return have.dtype == want.dtype && have.shape == want.shape && have.place == want.place ? value : nullptr;
}

ir::Node *RewriteContext::producer(const ir::Value *value, ir::OpKind kind) {
  ir::Node *owner = value->owner();
  return owner && owner->op().kind() == kind ? owner : nullptr;
}

} // namespace tg::opt
