#include "opt/ConstantFold.h"

namespace tg::opt {

RewriteRule constantFoldRule() {
  std::vector<ir::OpKind> kinds;
#define OP(Enum, name, arity, fusion, device) kinds.push_back(ir::OpKind::Enum);
#include "ir/Ops.def"
  return {"op(constants) -> constant", kinds, [](RewriteContext &context, ir::Node *node) -> ir::Value * {
            if (!context.evaluate) return nullptr;
            std::vector<const ir::TensorData *> operands;
            for (const ir::Value *input : node->inputs()) {
              if (!input->isConstant()) return nullptr;
              operands.push_back(&input->constant());
            }
            std::optional<int64_t> count = node->output()->type().staticNumElements();
            if (!count || *count > context.foldLimit) return nullptr;
            std::optional<ir::TensorData> folded;
            try {
              folded = (*context.evaluate)(node->op(), operands);
            } catch (const ir::UserError &) {
              return nullptr;
            }
            if (!folded) return nullptr;
            return context.graph.addConstant(std::move(*folded));
          }};
}

} // namespace tg::opt
