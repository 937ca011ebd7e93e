// lift (--lift=local): the legacy baseline, Theano's way, kept so that the global lift is measured against it
// side by side (bench/lift) and tested to place nodes as it does (tests/unit/LiftPropertyTest.cpp). See
// docs/optimizer.md.
//
//   outputs that stay in device memory (params' updates) ──> to_device(value)
//   inputs (rank >= 1) ──> to_host(to_device(i)); params kept in device memory ──> to_host(device input)
//                                                                     one validation each
//   worklist (topological order first), dispatch by op kind:
//     to_device(to_host(x)) -> x                                      the cut-transfer rule, one validation
//     a host node with a lifter, not pinned @host, when
//         an input comes from to_host,
//      or it has clients and all of them are to_device (or, for a 0-d value, device nodes reading it),
//      or it is pinned @device
//       -> to_host(the same op on the device, reading device values)  one validation
//          then queue its old clients (they now read to_host) and the producers of its inputs (their
//          clients changed, so they may move now)
//   until the worklist is empty: a fixed point
//
// Every validation walks the whole graph, and there is about one per node: quadratic, by design.
#pragma once

#include "opt/Rewrite.h"

namespace tg::opt {

/// Preconditions: every node is on the host and the graph verifies. Afterwards the graph verifies and the
/// placement is the global lift's on graphs without host-only ops (sort, argsort, cumsum); round trips
/// `to_host(to_device(x))` are left for cut-transfers. Every replacement is validated on its own (counted in
/// `profile.validations`). Records moves, cuts, transfers, lifter calls and validation time in
/// `profile.details`, and a reason per node in context.placement when it is set.
void localDeviceLift(ir::Graph &graph, RewriteContext &context, PassProfile &profile);

} // namespace tg::opt
