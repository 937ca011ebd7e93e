// Runs one op on constant data with the CPU kernels: how the optimizer folds constants at compile time.
#pragma once

#include "ir/Op.h"
#include "ir/TensorData.h"

#include <vector>

namespace tg::runtime {

/// `op` applied to `operands`, as C-ordered data. Throws UserError when the operands do not fit the op.
ir::TensorData evaluateConstant(const ir::Op &op, const std::vector<const ir::TensorData *> &operands);

} // namespace tg::runtime
