// The equilibrium driver: applies a set of local rewrites until none matches any node (a fixed point).
//
//   worklist <- nodes in topological order
//   while worklist not empty:
//     node <- pop; skip it if nothing uses it any more
//     for each rule registered for node's op kind (in table order):
//       replacement <- rule(node); if any: substitute it, push the old clients and the new nodes, next node
//
// Dispatch is by op kind, so a node is only shown the rules that can match it; each rewrite revisits only the
// nodes it touched, so the pass is linear in the graph for the rule sets tgc has.
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// Rewrites `context.graph` to a fixed point of `rules`. Records each application in `profile.rewrites` and
/// warns (in profile.warnings) when the iteration guard stops a rule set that does not converge. Does not
/// verify the graph; dead nodes are left for the caller to remove.
void rewriteToFixedPoint(RewriteContext &context, const std::vector<RewriteRule> &rules,
                         PassProfile &profile);

} // namespace tg::opt
