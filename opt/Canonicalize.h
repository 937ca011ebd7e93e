// canonicalize: algebraic normal forms: identities, chains of shape ops and casts, constant operands last.
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// The canonicalize rules, in the order the equilibrium driver tries them. Every rule preserves the output's
/// dtype and shape exactly.
std::vector<RewriteRule> canonicalizeRules();

} // namespace tg::opt
