// lift (--lift=global): moves the graph to the device in one pass, with one validation. See
// docs/architecture.md, "The lift", and docs/optimizer.md.
//
//   inputs (rank >= 1) ──> to_device
//   forward, topological order:  a node with an input on the device and a lifter moves (unless @host)
//   backward, reverse order:     a host node whose clients are all on the device moves too, so that a chain
//                                of such nodes moves in the same pass (graph outputs count as host clients)
//   outputs on the device ──> to_host;  one replaceAll, one validation
//
// The new nodes are built beside the old ones through a mapping from old values to new; a host node whose
// inputs did not change is kept as it is.
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// Preconditions: every node is on the host and the graph verifies. Afterwards the graph verifies, every node
/// with a lifter that reads a device value or whose clients are all on the device runs on the device (unless
/// pinned by @host), nodes pinned by @device run there, and each value crosses between the two at most once
/// per direction. Records moved forward/backward, transfers, lifter calls and timings in `profile.details`,
/// and a reason per node in context.placement when it is set.
void globalDeviceLift(ir::Graph &graph, RewriteContext &context, PassProfile &profile);

/// The same rebuild with the placement decided beforehand (the cost-aware lift): in topological order, a node
/// with `onDevice[node id]` moves through its lifter, the rest are rebuilt on the host; no backward pass.
/// Transfers are made where a value crosses, once per direction; `reasons` (by node id) explain each node in
/// context.placement when both are set.
void liftToPlacement(ir::Graph &graph, RewriteContext &context, PassProfile &profile,
                     const std::vector<bool> &onDevice, const std::vector<std::string> *reasons);

} // namespace tg::opt
