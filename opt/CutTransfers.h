// cut-transfers: removes the round trips placement leaves behind. Also part of canonicalize.
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// `to_device(to_host(x)) -> x` and `to_host(to_device(x)) -> x`.
std::vector<RewriteRule> cutTransferRules();

} // namespace tg::opt
