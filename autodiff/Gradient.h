// Symbolic reverse-mode differentiation, Theano's `grad`: new nodes in the same graph compute the gradient of
// a scalar cost with respect to chosen values.
//
//   forward (only nodes on a path wrt -> cost)      reverse walk (reverse topological order)
//
//   w ──> mul ──> a ──> exp ──> b ──> sum ──> cost    d(cost) = 1
//   x ──┘                                            d(b)    = broadcast d(cost)          (sum's rule)
//                                                    d(a)    = d(b) * b                   (exp's rule)
//                                                    d(w)   += sumToShape(d(a) * x, w)    (mul's rule)
//
// Each node is visited once, after every client of its output has added its share to that output's gradient.
#pragma once

#include "ir/Graph.h"

#include <vector>

namespace tg::autodiff {

using ir::Graph;
using ir::SourceLoc;
using ir::Value;

/// What grad does for a w the cost does not depend on at all (no path in the graph): Theano's
/// disconnected_inputs, 'raise' (a UserError naming it: usually a typo that would stop training silently) or
/// 'ignore' (zeros).
enum class Disconnected { Raise, Zero };

/// Adds to `graph` the nodes that compute d(cost)/d(w) for each w in `wrt`, and returns those values in
/// order.
///
/// Preconditions (each a UserError at `loc` when broken): `cost` is a 0-d float value of `graph`; every w is
/// a float value of `graph` (usually a graph input or param; any value the cost depends on works).
///
/// Postconditions:
/// - result[i] has wrt[i]'s dtype and rank, and its shape at run time; a symbolic dimension may print under
///   another name (reshape and concat derive new ones). The graph's inputs and outputs are unchanged; the new
///   nodes carry the location of the forward node they differentiate, so later errors point at user code.
/// - A w the cost does not depend on at all is a UserError at `loc` unless `disconnected` is Zero; a w it
///   reaches only through integer values, floor/ceil/round/sign or zeros_like/ones_like (or, with Zero, not
///   at all) gets zeros: a `zeros` node when its shape is static, else `zeros_like(w)`.
/// - Building the gradient twice gives identical graphs (the walk never iterates a hash table).
///
/// Rules worth knowing (Theano's unless said otherwise):
/// - Broadcasting: an operand's gradient is summed over the axes it was broadcast along. As in Theano, only a
///   static 1 broadcasts; a symbolic dimension is assumed to match.
/// - maximum/minimum: the gradient goes to the operand equal to the result; on a tie, all of it to the first.
/// - max/min reductions: every position equal to the result gets the whole gradient (ties each get it).
/// - clip(x, lo, hi): x gets it where lo <= x <= hi (inclusive), lo where x < lo, hi where x > hi.
/// - prod: exact at zeros, not the naive prod / x: prod / x in a group without zeros; at the only zero of a
///   group, the product of the others; 0 elsewhere.
/// - pow(a, b): d/db = a**b * log(a), so NaN for a <= 0.
/// - where: to a and b by the condition, none to the condition. Comparisons, argmax and the like carry none.
/// - reshape back to the input's shape needs at most one symbolic dimension (it becomes -1); otherwise, and
///   likewise for cumsum without an axis, a UserError "grad: reshape of a symbolic shape is not
///   differentiable yet".
/// - slice: the gradient is placed between zeros with concat; bounds of any sign work, on symbolic dimensions
///   too. Steps other than 1 (and -1 over a whole axis) are a UserError.
/// - concat: the gradient is sliced; at most one input may have a symbolic size along the axis.
/// - cumsum: the reversed cumsum of the reversed gradient.
/// - sort: a UserError at the sort (its gradient would need a gather op).
std::vector<Value *> grad(Graph &graph, Value *cost, const std::vector<Value *> &wrt, const SourceLoc &loc,
                          Disconnected disconnected = Disconnected::Raise);

} // namespace tg::autodiff
