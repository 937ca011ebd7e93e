#include "opt/Merge.h"

#include <unordered_map>

namespace tg::opt {

void mergeEquivalent(ir::Graph &graph, PassProfile &profile) {
  std::unordered_multimap<size_t, ir::Value *> constants;
  std::unordered_multimap<size_t, ir::Node *> nodes;
  auto canonicalConstant = [&](ir::Value *value) {
    size_t hash = ir::hashTensorData(value->constant());
    auto [begin, end] = constants.equal_range(hash);
    for (auto it = begin; it != end; ++it)
      if (it->second == value || it->second->constant() == value->constant()) return it->second;
    constants.emplace(hash, value);
    return value;
  };
  // Producers come first in topological order, so a node's inputs are already canonical when it is looked at.
  std::vector<ir::Node *> order = graph.toposort();
  for (ir::Node *node : order) {
    for (ir::Value *input : std::vector<ir::Value *>(node->inputs())) {
      if (!input->isConstant()) continue;
      ir::Value *canonical = canonicalConstant(input);
      if (canonical != input) {
        graph.substitute(input, canonical);
        ++profile.rewrites["merge constants"];
      }
    }
    size_t hash = node->op().hash();
    for (ir::Value *input : node->inputs())
      hash = hash * 1000003u ^ static_cast<size_t>(input->id());
    auto [begin, end] = nodes.equal_range(hash);
    ir::Node *equal = nullptr;
    for (auto it = begin; it != end && !equal; ++it)
      if (it->second->op() == node->op() && it->second->inputs() == node->inputs() &&
          it->second->pin() == node->pin())
        equal = it->second;
    if (!equal) {
      nodes.emplace(hash, node);
      continue;
    }
    graph.substitute(node->output(), equal->output());
    ++profile.rewrites["merge nodes"];
  }
}

} // namespace tg::opt
