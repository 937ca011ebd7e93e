// constant-fold: a node whose inputs are all constants becomes a constant, computed once at compile time by
// the runtime's kernels (through a ConstantEvaluator), when the result is small enough to embed.
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// The rule `op(constants...) -> constant`, for every op kind. Folds only when an evaluator is present, the
/// result's element count is static and at most context.foldLimit, and evaluation succeeds; a user error
/// found while folding (a bad reshape, say) is left for run time, where it is reported with its location.
RewriteRule constantFoldRule();

} // namespace tg::opt
