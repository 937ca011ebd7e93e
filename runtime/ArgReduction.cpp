#include "runtime/ArgReduction.h"

#include "ir/ScalarGraph.h"

#include <memory>

namespace tg::runtime {

ArgReduction planArgReduction(const ir::Op &op, ir::DType dtype, size_t axis, bool keepdims) {
  using ir::OpKind;
  ir::OpAttrs along;
  along.axes = {static_cast<int64_t>(axis)};
  along.keepdims = true;

  auto extreme = std::make_shared<ir::ScalarGraph>();
  extreme->inputDtypes = {dtype};
  extreme->reduction = op.kind() == OpKind::Argmax ? OpKind::Max : OpKind::Min;
  ir::OpAttrs extremeAttrs = along;
  extremeAttrs.body = std::move(extreme);

  // Values 0, 1, 2 are x, extreme, index; the instructions are values 3 to 7.
  auto first = std::make_shared<ir::ScalarGraph>();
  first->inputDtypes = {dtype, dtype, ir::DType::I64};
  first->body = {{OpKind::Eq, ir::DType::Bool, {0, 1}, 0},
                 {OpKind::Ne, ir::DType::Bool, {0, 0}, 0},
                 {OpKind::Or, ir::DType::Bool, {3, 4}, 0},
                 {OpKind::Full, ir::DType::I64, {}, kNoPosition},
                 {OpKind::Where, ir::DType::I64, {5, 2, 6}, 0}};
  first->reduction = OpKind::Min;
  ir::OpAttrs firstAttrs = along;
  firstAttrs.keepdims = keepdims;
  firstAttrs.body = std::move(first);

  return {ir::Op(OpKind::Fused, std::move(extremeAttrs), op.place()),
          ir::Op(OpKind::Fused, std::move(firstAttrs), op.place())};
}

} // namespace tg::runtime
