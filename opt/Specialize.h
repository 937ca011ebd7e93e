// specialize: cheaper forms: powers as products, division by a constant as multiplication.
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// The specialize rules, in the order the equilibrium driver tries them. Every rule preserves the output's
/// dtype and shape exactly.
std::vector<RewriteRule> specializeRules();

} // namespace tg::opt
