// merge: common-subexpression elimination. Equal constants become one value; nodes with equal ops, equal
// inputs and equal pins become one node (Theano's MergeOptimizer).
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// Afterwards no two live nodes compute the same op on the same inputs, and no two constants used by nodes
/// hold the same data. Linear in the graph (hashing). Does not verify; leaves the merged-away nodes dead.
void mergeEquivalent(ir::Graph &graph, PassProfile &profile);

} // namespace tg::opt
