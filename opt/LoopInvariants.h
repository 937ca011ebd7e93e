// loop-invariants: what a loop's body computes from its invariants alone (and constants) is computed once,
// before the loop, and read by the body as one more invariant (Theano's scan_merge / pushout of
// non-sequences, LLVM's LICM). Runs after loop-bodies, on the optimized and placed bodies: each hoisted node
// keeps its place.
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// Hoists the loop-invariant nodes out of every scan of `graph`; counts them in `profile`.
void hoistLoopInvariants(ir::Graph &graph, PassProfile &profile);

} // namespace tg::opt
