#include "opt/LoopInvariants.h"

#include "ir/Loop.h"

#include <unordered_map>

namespace tg::opt {

namespace {

/// Moves the invariant nodes of `loop`'s body (a copy the caller owns) into `graph`, before the scan `node`,
/// and returns the loop that remains, with the outer values it reads as invariants (the old ones the body
/// still reads, then the hoisted values it reads); nullptr when nothing moved.
std::shared_ptr<ir::Loop> hoist(ir::Graph &graph, const ir::Node &node, ir::Loop &loop,
                                std::vector<ir::Value *> &invariants, size_t &hoisted) {
  ir::Graph &body = loop.body.graph;
  size_t first = loop.carries + loop.sequences;               // the first invariant input
  std::unordered_map<const ir::Value *, ir::Value *> outside; // body value -> the outer value it equals
  for (size_t i = first; i < body.inputs().size(); ++i)
    outside[body.inputs()[i]] = node.input(i);
  std::vector<const ir::Node *> moved;
  for (const ir::Node *inner : body.toposort()) {
    bool invariant = true;
    for (const ir::Value *input : inner->inputs())
      invariant &= input->isConstant() || outside.count(input) > 0;
    if (!invariant) continue;
    std::vector<ir::Value *> operands;
    for (ir::Value *input : inner->inputs()) {
      auto found = outside.find(input);
      operands.push_back(found != outside.end() ? found->second : graph.addConstant(input->constant()));
    }
    ir::Node *copy = graph.addNode(inner->op(), std::move(operands), inner->loc(), inner->pin());
    for (size_t k = 0; k < inner->outputs().size(); ++k)
      outside[inner->outputs()[k]] = copy->outputs()[k];
    moved.push_back(inner);
  }
  if (moved.empty()) return nullptr;
  hoisted += moved.size();
  // Each hoisted value that the rest of the body (or its outputs) reads becomes an input of the body.
  std::vector<ir::Value *> outer(node.inputs().begin(), node.inputs().end());
  for (const ir::Node *inner : moved)
    for (ir::Value *value : inner->outputs()) {
      bool readInside = false;
      for (const ir::Use &use : value->clients())
        readInside |= !use.node || outside.count(use.node->output()) == 0;
      if (!readInside) continue;
      std::string name = value->name().empty() ? "hoisted" : value->name();
      ir::Value *input = body.addInput(value->type(), name);
      loop.body.inputs.push_back({name, input, inner->loc()});
      body.substitute(value, input);
      outer.push_back(outside.at(value));
    }
  body.removeDeadNodes();
  // The loop again, without the invariant inputs the body no longer reads.
  std::shared_ptr<ir::Loop> kept = ir::loopShell(loop);
  std::vector<ir::Value *> inputs;
  for (size_t i = 0; i < body.inputs().size(); ++i) {
    ir::Value *input = body.inputs()[i];
    if (i >= first && input->clients().empty()) {
      inputs.push_back(nullptr); // read by nothing: inlineGraph never looks it up
      continue;
    }
    inputs.push_back(kept->body.graph.addInput(input->type(), input->name()));
    kept->body.inputs.push_back({input->name(), inputs.back(), loop.body.inputs[i].loc});
    if (i >= first) invariants.push_back(outer[i]);
  }
  std::vector<ir::Value *> outputs = ir::inlineGraph(kept->body.graph, body, inputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    kept->body.graph.addOutput(outputs[i]);
    kept->body.outputs.push_back({loop.body.outputs[i].name, outputs[i]});
  }
  return kept;
}

} // namespace

void hoistLoopInvariants(ir::Graph &graph, PassProfile &profile) {
  std::vector<std::pair<ir::Value *, ir::Value *>> replacements;
  size_t hoisted = 0;
  for (ir::Node *node : graph.toposort()) {
    if (node->op().kind() != ir::OpKind::Scan) continue;
    std::shared_ptr<ir::Loop> loop = ir::copyLoop(*node->op().attrs().loop);
    std::vector<ir::Value *> invariants;
    std::shared_ptr<ir::Loop> kept = hoist(graph, *node, *loop, invariants, hoisted);
    if (!kept) continue;
    size_t first = loop->carries + loop->sequences;
    std::vector<ir::Value *> inputs(node->inputs().begin(),
                                    node->inputs().begin() + static_cast<std::ptrdiff_t>(first));
    inputs.insert(inputs.end(), invariants.begin(), invariants.end());
    ir::Node *rebuilt = ir::rebuildScan(graph, *node, std::move(kept), std::move(inputs));
    for (size_t k = 0; k < node->outputs().size(); ++k)
      replacements.push_back({node->outputs()[k], rebuilt->outputs()[k]});
  }
  if (!replacements.empty()) graph.replaceAll(replacements);
  if (hoisted) profile.rewrites["hoist loop-invariant node"] += hoisted;
}

} // namespace tg::opt
