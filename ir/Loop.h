// Loop: what a scan node runs, Theano's Scan op and JAX's scan primitive. The node reads the initial carries,
// the sequences and the invariants (values from outside the loop that the body reads); its body is a program
// of its own, run once per step:
//
//   carries ──> body(carries, one slice of each sequence, invariants) ──> new carries, per-step results
//      ^                                                                     │
//      └─────────────────────────────────────────────────────────────────────┘
//
// The node gives, per carry, the stack of its values after each step ([T] + the carry's shape) or only its
// last value, then the stack of each per-step result. The step that reads slice t of the sequences writes
// place t of the stacks, whichever way the loop runs (as JAX's scan with reverse=True).
#pragma once

#include "ir/Program.h"

#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace tg::ir {

struct Loop {
  /// inputs: the carries, then one slice per sequence, then the invariants; outputs: the new carries (of the
  /// carries' types), then the per-step results.
  Program body;
  size_t carries = 0, sequences = 0;
  std::vector<bool> stacked; // per carry: whether the node gives the stack of its values, else its last
  bool reverse = false;      // steps from the sequences' last slice down to the first
  int64_t length = 0;        // the number of steps of a loop without sequences
  /// A loop the lift moved to a device: the loop before its body was placed, which the loop-bodies pass
  /// optimizes as a whole, placement included (its rewrites make host nodes: they run before the lift).
  std::shared_ptr<const Loop> unplaced;
  /// A loop a gradient rebuilt to also give what its backward pass reads: it computes everything `extends`
  /// computes, the same outputs first, so that a scan of `extends` on the same inputs is the same as this
  /// one's (merge joins them).
  std::shared_ptr<const Loop> extends;

  size_t invariants() const { return body.graph.inputs().size() - carries - sequences; }
  size_t results() const { return body.graph.outputs().size() - carries; }
  /// "carries=2, sequences=1, stacked=[1, 0], reverse" for the op's printers.
  std::string str() const;
  /// The node's output types for inputs of `inputs` (carries, sequences, invariants), on `place`. Throws
  /// UserError when the sequences' leading dimensions differ; a body that does not fit the inputs is a
  /// compiler bug (asserted).
  std::vector<TensorType> outputTypes(const std::vector<TensorType> &inputs, Place place) const;
  /// The number of steps for inputs of these types: the sequences' leading dimension, else `length`.
  Dim steps(const std::vector<TensorType> &inputs) const;
};

/// Copies the nodes `from`'s outputs depend on into `into`, with `inputs` read in place of `from`'s inputs
/// (one each, of the same types), and returns what become `from`'s outputs; `copies`, when given, gets each
/// value of `from` with its copy.
std::vector<Value *> inlineGraph(Graph &into, const Graph &from, std::span<Value *const> inputs,
                                 std::unordered_map<const Value *, Value *> *copies = nullptr);

/// The nodes of `graph` in order, each scan followed by the nodes of its body (nested loops too): the nodes a
/// run executes, the kernels it launches.
std::vector<const Node *> nodesWithLoopBodies(const Graph &graph);

/// A loop of `loop`'s carries, sequences, stacked flags, direction and length, with an empty body.
std::shared_ptr<Loop> loopShell(const Loop &loop);

/// A copy of `loop` with the same attributes and a copy of its body; `copies`, when given, gets each value of
/// the body with its copy.
std::shared_ptr<Loop> copyLoop(const Loop &loop,
                               std::unordered_map<const Value *, Value *> *copies = nullptr);

/// A scan of `loop` reading `inputs` in `graph`, like `scan` (its place, location and pin; each output named
/// as `scan`'s of the same place): how a pass or a gradient rebuilds a scan around a changed loop.
Node *rebuildScan(Graph &graph, const Node &scan, std::shared_ptr<const Loop> loop,
                  std::vector<Value *> inputs);

} // namespace tg::ir
