#include "opt/ConstantFold.h"

#include <cstdint>
#include <cstring>
#include <deque>

namespace tg::opt {
namespace {

/// The element count of the operands' shapes broadcast together, or nothing when they do not broadcast.
std::optional<int64_t> broadcastCount(const std::vector<const ir::TensorData *> &operands) {
  ir::TensorType broadcast;
  for (const ir::TensorData *operand : operands) {
    ir::Shape shape;
    for (int64_t size : operand->shape)
      shape.push_back(ir::Dim::of(size));
    std::optional<ir::Shape> joined = ir::broadcastShapes(broadcast.shape, shape);
    if (!joined) return std::nullopt;
    broadcast.shape = std::move(*joined);
  }
  return broadcast.staticNumElements();
}

/// The 0-d array of the value every element of `data` has (bit for bit), when it has more than one element
/// and they are all equal.
std::optional<ir::TensorData> uniformScalar(const ir::TensorData &data) {
  if (data.numElements() < 2) return std::nullopt;
  size_t size = data.bytes.size() / data.numElements();
  for (size_t at = size; at < data.bytes.size(); at += size)
    if (std::memcmp(&data.bytes[at], data.bytes.data(), size) != 0) return std::nullopt;
  ir::TensorData scalar(data.dtype, {});
  std::memcpy(scalar.bytes.data(), data.bytes.data(), size);
  return scalar;
}

} // namespace

RewriteRule constantFoldRule() {
  std::vector<ir::OpKind> kinds;
#define OP(Enum, ...) kinds.push_back(ir::OpKind::Enum);
#include "ir/Ops.def"
  return {"op(constants) -> constant", kinds, [](RewriteContext &context, ir::Node *node) -> ir::Value * {
            if (!context.evaluate) return nullptr;
            // A broadcast constant stays one: folding it would repeat one value in memory.
            if (node->op().kind() == ir::OpKind::BroadcastTo) return nullptr;
            // A loop is not run at compile time (it may run long, and it has several results): the passes
            // fold within its body instead.
            if (node->op().kind() == ir::OpKind::Scan) return nullptr;
            bool elementwise = ir::opInfo(node->op().kind()).fusion == ir::FusionKind::Elementwise;
            std::vector<const ir::TensorData *> operands;
            std::deque<ir::TensorData> broadcast; // the broadcast operands of an op that is not elementwise
            try {
              for (const ir::Value *input : node->inputs()) {
                if (input->isConstant()) {
                  operands.push_back(&input->constant());
                } else if (const ir::Value *constant = RewriteContext::broadcastConstant(input)) {
                  // An elementwise op computes on the constant and broadcasts its result instead.
                  if (elementwise) {
                    operands.push_back(&constant->constant());
                    continue;
                  }
                  if (input->type().staticNumElements().value_or(INT64_MAX) > context.foldLimit)
                    return nullptr;
                  std::optional<ir::TensorData> expanded =
                      (*context.evaluate)(input->owner()->op(), {&constant->constant()});
                  if (!expanded) return nullptr;
                  operands.push_back(&broadcast.emplace_back(std::move(*expanded)));
                } else {
                  return nullptr;
                }
              }
              std::optional<int64_t> count =
                  elementwise ? broadcastCount(operands) : node->output()->type().staticNumElements();
              if (!count || *count > context.foldLimit) return nullptr;
              std::optional<ir::TensorData> folded = (*context.evaluate)(node->op(), operands);
              if (!folded) return nullptr;
              // A result of one repeated value is kept as that value, broadcast.
              if (std::optional<ir::TensorData> scalar = uniformScalar(*folded)) folded = std::move(scalar);
              return context.broadcastLike(node, context.graph.addConstant(std::move(*folded)));
            } catch (const ir::UserError &) {
              return nullptr;
            }
          }};
}

} // namespace tg::opt
