#include "opt/Rewrite.h"

namespace tg::opt {

ir::Value *RewriteContext::make(ir::OpKind kind, std::vector<ir::Value *> inputs, ir::OpAttrs attrs) {
  ir::SourceLoc loc = current ? current->loc() : ir::SourceLoc{};
  ir::Place place = current ? current->op().place() : ir::Place::Host;
  return graph.addNode(ir::Op(kind, std::move(attrs), place), std::move(inputs), loc)->output();
}

ir::Value *RewriteContext::constant(double value, ir::DType dtype) {
  return graph.addConstant(ir::TensorData::scalar(dtype, value));
}

std::optional<double> RewriteContext::uniformValue(const ir::Value *value) {
  if (const ir::Value *constant = broadcastConstant(value)) value = constant;
  if (!value->isConstant()) return std::nullopt;
  const ir::TensorData &data = value->constant();
  if (data.numElements() == 0) return std::nullopt;
  double first = data.get(0);
  for (int64_t i = 1; i < data.numElements(); ++i)
    if (data.get(i) != first) return std::nullopt;
  return first;
}

const ir::Value *RewriteContext::broadcastConstant(const ir::Value *value) {
  ir::Node *broadcast = producer(value, ir::OpKind::BroadcastTo);
  return broadcast && broadcast->input(0)->isConstant() ? broadcast->input(0) : nullptr;
}

bool RewriteContext::isConstantEqualTo(const ir::Value *value, double expected) {
  std::optional<double> uniform = uniformValue(value);
  return uniform && *uniform == expected;
}

ir::Value *RewriteContext::ifSameType(const ir::Node *node, ir::Value *value) {
  const ir::TensorType &want = node->output()->type(), &have = value->type();
  return have.dtype == want.dtype && have.shape == want.shape && have.place == want.place ? value : nullptr;
}

ir::Value *RewriteContext::makeSameType(const ir::Node *node, ir::OpKind kind,
                                        std::vector<ir::Value *> inputs, ir::OpAttrs attrs) {
  ir::Op op(kind, std::move(attrs));
  std::vector<ir::TensorType> types;
  for (const ir::Value *input : inputs)
    types.push_back(input->type());
  try {
    if (ir::inferType(op, types) != node->output()->type()) return nullptr;
  } catch (const ir::UserError &) {
    return nullptr;
  }
  return make(kind, std::move(inputs), op.attrs());
}

ir::Value *RewriteContext::broadcastLike(const ir::Node *node, ir::Value *value) {
  if (ifSameType(node, value)) return value;
  const ir::TensorType &want = node->output()->type();
  if (!want.staticNumElements()) return nullptr;
  ir::OpAttrs attrs;
  for (const ir::Dim &dim : want.shape)
    attrs.shape.push_back(dim.size());
  return makeSameType(node, ir::OpKind::BroadcastTo, {value}, std::move(attrs));
}

ir::Value *RewriteContext::fill(const ir::Node *node, double value, ir::Value *like) {
  const ir::TensorType &want = node->output()->type();
  if (want.staticNumElements()) {
    ir::OpAttrs attrs;
    attrs.dtype = want.dtype;
    for (const ir::Dim &dim : want.shape)
      attrs.shape.push_back(dim.size());
    ir::OpKind kind = ir::OpKind::Full;
    if (value == 0 || value == 1)
      kind = value == 0 ? ir::OpKind::Zeros : ir::OpKind::Ones;
    else
      attrs.scalars = {ir::Number::ofFloat(value)};
    return makeSameType(node, kind, {}, std::move(attrs));
  }
  if ((value != 0 && value != 1) || !like || !ifSameType(node, like)) return nullptr;
  return make(value == 0 ? ir::OpKind::ZerosLike : ir::OpKind::OnesLike, {like});
}

ir::Node *RewriteContext::producer(const ir::Value *value, ir::OpKind kind) {
  ir::Node *owner = value->owner();
  return owner && owner->op().kind() == kind ? owner : nullptr;
}

} // namespace tg::opt
