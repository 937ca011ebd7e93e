// constant-fold: a node whose inputs are all constants becomes a constant, computed once at compile time by
// the runtime's kernels (through a ConstantEvaluator), when the result is small enough to embed. A tensor of
// one repeated value is kept as `broadcast_to(scalar constant)`, never spelled out: elementwise ops on such
// operands compute on the scalars, so that a chain of them (a gradient's, say) costs no more memory or time
// than on scalars, whatever the shape.
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// The rule `op(constants...) -> constant`, for every op kind but broadcast_to, whose operands may also be
/// broadcast constants. Folds only when an evaluator is present, the result's element count is static and at
/// most context.foldLimit (for an elementwise op, the count before broadcasting), and evaluation succeeds; a
/// user error found while folding (a bad reshape, say) is left for run time, where it is reported with its
/// location. A result of one repeated value becomes broadcast_to(that value).
RewriteRule constantFoldRule();

} // namespace tg::opt
