// The gradient of a scan (autodiff's rule for OpKind::Scan, used by grad() in Gradient.cpp).
#pragma once

#include "ir/Graph.h"

#include <vector>

namespace tg::autodiff {

/// Adds to `graph` the nodes that compute the gradients of the inputs of `scan` (its initial carries,
/// sequences and invariants) from the gradients of its outputs, `outputGrads` (nullptr where an output gets
/// none), and returns them: nullptr where an input is not `wanted` or gets none.
///
/// It is a scan the other way (Theano's and JAX's rule): each backward step recomputes the forward step from
/// the carry before it (the initial carry and the stacked carries, shifted by one step) and the step's
/// slices, then takes the step's vector-Jacobian product by grad() inside the backward body. Its carries are
/// the adjoints of the forward carries and the sums of the invariants' gradients; its per-step results are
/// the sequences' gradients.
std::vector<ir::Value *> loopGradients(ir::Graph &graph, const ir::Node &scan,
                                       const std::vector<ir::Value *> &outputGrads,
                                       const std::vector<bool> &wanted);

} // namespace tg::autodiff
