#include "opt/Equilibrium.h"

#include "ir/NodeWalk.h"

#include <deque>

namespace tg::opt {

namespace {

/// Queues each node once at a time; nodes added to the graph while rewriting are queued as they appear.
class Worklist : public ir::GraphListener {
public:
  void push(ir::Node *node) {
    size_t id = static_cast<size_t>(node->id());
    if (id >= queued_.size()) queued_.resize(id + 1, false);
    if (queued_[id]) return;
    queued_[id] = true;
    nodes_.push_back(node);
  }
  ir::Node *pop() {
    ir::Node *node = nodes_.front();
    nodes_.pop_front();
    queued_[static_cast<size_t>(node->id())] = false;
    return node;
  }
  bool empty() const { return nodes_.empty(); }
  void onNodeAdded(ir::Node *node) override { push(node); }

private:
  std::deque<ir::Node *> nodes_;
  std::vector<bool> queued_;
};

} // namespace

void rewriteToFixedPoint(RewriteContext &context, const std::vector<RewriteRule> &rules,
                         PassProfile &profile) {
  ir::Graph &graph = context.graph;
  std::vector<std::vector<const RewriteRule *>> byKind;
  for (const RewriteRule &rule : rules) {
    for (ir::OpKind kind : rule.kinds) {
      size_t index = static_cast<size_t>(kind);
      if (index >= byKind.size()) byKind.resize(index + 1);
      byKind[index].push_back(&rule);
    }
  }
  // Every node once in topological order (producers first), then, to a fixed point, the readers of each
  // replaced value and the nodes rules create. The first sweep reads the order as it is; the nodes rules
  // create meanwhile are queued.
  Worklist worklist;
  graph.addListener(&worklist);
  const std::vector<ir::Node *> order = graph.toposort();
  // A rule set that keeps rewriting its own output would loop; stop it and say so.
  size_t limit = 16 * (order.size() + 64), applied = 0;
  bool sweeping = true;
  auto visit = [&](ir::Node *node) {
    // The kind first: most nodes match no rule, and are then not read further (on a large graph, their
    // values are a cache miss each).
    size_t kind = static_cast<size_t>(node->op().kind());
    if (kind >= byKind.size() || byKind[kind].empty()) return;
    ir::Value *output = node->output();
    if (output->clients().empty()) return;
    for (const RewriteRule *rule : byKind[kind]) {
      context.current = node;
      ir::Value *replacement = rule->apply(context, node);
      context.current = nullptr;
      if (!replacement || replacement == output) continue;
      ++profile.rewrites[rule->name];
      // The readers are queued, but in the first sweep, where they come later in the order anyway.
      ir::Clients readers = sweeping ? ir::Clients{} : output->clients();
      graph.substitute(output, replacement);
      for (const ir::Use &use : readers)
        if (use.node) worklist.push(use.node);
      ++applied;
      return;
    }
  };
  for (ir::Node *node : ir::inOrder(order)) {
    if (applied > limit) break;
    visit(node);
  }
  sweeping = false;
  while (!worklist.empty() && applied <= limit)
    visit(worklist.pop());
  if (applied > limit)
    profile.warnings.push_back("rewrites did not reach a fixed point after " + std::to_string(applied) +
                               " applications; stopping");
  graph.removeListener(&worklist);
}

} // namespace tg::opt
