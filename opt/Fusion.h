// fusion: maximal connected elementwise clusters of one place become one `fused` node, whose scalar program
// (ir/ScalarGraph.h) the code generator turns into one kernel.
//
//   a   b                      a   b   c
//    \ /                        \  |  /
//    mul   c                  fused{mul, add, relu}        %3 = mul %0, %1
//      \  /          =>             |                      %4 = add %3, %2
//      add                                                 %5 = relu %4
//       |
//      relu
//
// Policy (which ops may join, kept apart from the mechanism below): elementwise ops (FusionKind::Elementwise
// in Ops.def) of the same place, and gathers that only the cluster reads, as indexed loads
// (ir/ScalarGraph.h): the table stays an input of its own, never a member's value; the indices are operands,
// aligned to the space by an expand_dims node (placed just before the fused node) where the table has axes
// after the gathered ones. Mechanism: nodes are visited consumers first; an unclustered elementwise node
// roots a cluster, which absorbs a producer when every reader of the producer's value is already in the
// cluster (so nothing is computed twice) and the producer's value has the root's shape (so a small operand is
// not recomputed for every element it is broadcast to). 0-d constants become immediates of the program.
// Each node is visited once and each edge looked at a bounded number of times; a cluster's members are put
// in the graph's order by sorting their positions (k log k for k members), and the nodes the fused nodes
// replace are removed as a list, without a walk: linear in the graph but for the sorts.
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// The most inputs a fused node reads; a cluster stops growing before it would need more.
constexpr size_t kMaxFusedInputs = 64;

/// The most ops one kernel holds: a longer cluster is cut there (a long chain becomes kernels of this many
/// ops, each reading the value the one before wrote), so that compile time per op stays flat: LLVM's time on
/// one function grows faster than the function. Measured (docs/optimizer.md), the host JIT's and ptxas's
/// time per op are lowest between 256 and 1,024 ops a kernel; the same cap serves both places.
constexpr size_t kMaxKernelOps = 1024;

/// Afterwards no elementwise node is left outside a `fused` node; every fused node's program computes exactly
/// what its cluster did. Single elementwise nodes become one-instruction fused nodes, so that all elementwise
/// work runs as generated kernels; so does a reduction without elementwise producers (an empty program).
/// Records "kernels" (fused nodes made) and "fused ops" in the profile; leaves no dead nodes. With
/// `placement`, each fused node gets the reason of the node it replaced (its cluster's root), marked as
/// fused.
void fuseElementwise(ir::Graph &graph, PassProfile &profile, PlacementReasons *placement = nullptr);

} // namespace tg::opt
