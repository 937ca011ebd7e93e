// stabilize: numerically stable forms: log1p, expm1, softplus, log-sum-exp.
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// The stabilize rules, in the order the equilibrium driver tries them. Every rule preserves the output's
/// dtype and shape exactly.
std::vector<RewriteRule> stabilizeRules();

} // namespace tg::opt
