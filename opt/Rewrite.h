// Local rewrites as data: a rule names the math it does, declares the op kinds it matches, and maps a node to
// a replacement for its output (or nothing). Rule sets are plain vectors; one driver applies them
// (Equilibrium.h). The helpers here are what rules use to inspect and build graphs.
#pragma once

#include "ir/Graph.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tg::opt {

/// How constant folding computes an op on constant operands (the runtime's kernels, injected by the driver so
/// that opt/ does not depend on runtime/). Returns nullopt when the op cannot be folded.
using ConstantEvaluator =
    std::function<std::optional<ir::TensorData>(const ir::Op &, const std::vector<const ir::TensorData *> &)>;

/// What one pass did, for --opt-profile.
struct PassProfile {
  std::string name;
  double seconds = 0;
  size_t nodesBefore = 0, nodesAfter = 0;
  std::map<std::string, size_t> rewrites; // applications by rule name
  size_t validations = 0;
  std::map<std::string, double> details; // pass-specific figures ("moved forward", "toposort seconds", ...)
  std::vector<std::string> warnings;
};

/// Why each node runs where it does, filled by the placement passes for --explain-placement.
using PlacementReasons = std::map<const ir::Node *, std::string>;

/// The graph being rewritten and the tools rules build with. New nodes take the location of the node being
/// rewritten, so errors found later still point at the user's code.
class RewriteContext {
public:
  RewriteContext(ir::Graph &graph, const ConstantEvaluator *evaluate, int64_t foldLimit)
      : graph(graph), evaluate(evaluate), foldLimit(foldLimit) {}

  ir::Graph &graph;
  const ConstantEvaluator *evaluate;     // null: no constant folding
  int64_t foldLimit;                     // the most elements a folded constant may have
  const ir::Node *current = nullptr;     // the node being rewritten
  PlacementReasons *placement = nullptr; // where placement passes explain themselves, when asked
  /// Graph inputs and outputs (by index) that live on the device between runs when a device is used: the
  /// params and their updates, so that training steps do not move parameters back and forth.
  std::vector<size_t> residentInputs, residentOutputs;

  /// Adds a node at the current node's location, on the current node's place.
  ir::Value *make(ir::OpKind kind, std::vector<ir::Value *> inputs, ir::OpAttrs attrs = {});
  /// A 0-d constant of `dtype`.
  ir::Value *constant(double value, ir::DType dtype);
  /// The value every element of a constant (or of a broadcast constant) has, if they are all equal.
  static std::optional<double> uniformValue(const ir::Value *value);
  /// The constant that `value` broadcasts, when it is `broadcast_to(constant)` (how constant folding keeps a
  /// tensor of one repeated value), else nullptr.
  static const ir::Value *broadcastConstant(const ir::Value *value);
  static bool isConstantEqualTo(const ir::Value *value, double expected);
  /// `value` if it can replace `node`'s output as it is (same dtype and shape), else nullptr.
  static ir::Value *ifSameType(const ir::Node *node, ir::Value *value);
  /// A node of `kind` on `inputs`, added only when its output type is `node`'s output type (dtype, shape and
  /// place); nullptr otherwise, adding nothing. The operands must have the dtypes the op requires.
  ir::Value *makeSameType(const ir::Node *node, ir::OpKind kind, std::vector<ir::Value *> inputs,
                          ir::OpAttrs attrs = {});
  /// `value` made to replace `node`'s output: itself when the types match, or broadcast_to the output's shape
  /// when only broadcasting differs and that shape is static; nullptr otherwise.
  ir::Value *broadcastLike(const ir::Node *node, ir::Value *value);
  /// A value of `node`'s output type with every element `value`: a creation op when the shape is static, else
  /// zeros_like/ones_like(like) for 0 and 1 when `like` has the output's type; nullptr otherwise.
  ir::Value *fill(const ir::Node *node, double value, ir::Value *like);
  /// The node computing `value` when it is of `kind`, else nullptr.
  static ir::Node *producer(const ir::Value *value, ir::OpKind kind);
};

struct RewriteRule {
  const char *name;                                               // the math: "mul(x, 1) -> x"
  std::vector<ir::OpKind> kinds;                                  // the op kinds it matches
  std::function<ir::Value *(RewriteContext &, ir::Node *)> apply; // a replacement for node->output(), or null
};

} // namespace tg::opt
