#include "ir/Loop.h"

#include "ir/Assert.h"

#include <unordered_map>

namespace tg::ir {

std::string Loop::str() const {
  std::string text = "carries=" + std::to_string(carries) + ", sequences=" + std::to_string(sequences);
  if (std::find(stacked.begin(), stacked.end(), false) != stacked.end()) {
    text += ", stacked=[";
    for (size_t k = 0; k < stacked.size(); ++k)
      text += std::string(k ? ", " : "") + (stacked[k] ? "1" : "0");
    text += "]";
  }
  if (results()) text += ", results=" + std::to_string(results());
  if (!sequences) text += ", length=" + std::to_string(length);
  if (reverse) text += ", reverse";
  return text;
}

Dim Loop::steps(const std::vector<TensorType> &inputs) const {
  if (!sequences) return Dim::of(length);
  // A static size says more than a symbol: the first sequence with one gives it.
  for (size_t s = 0; s < sequences; ++s)
    if (inputs[carries + s].shape[0].isStatic()) return inputs[carries + s].shape[0];
  return inputs[carries].shape[0];
}

std::vector<TensorType> Loop::outputTypes(const std::vector<TensorType> &inputs, Place place) const {
  const std::vector<Value *> &bodyInputs = body.graph.inputs();
  TG_ASSERT(inputs.size() == bodyInputs.size())
      << "scan: " << inputs.size() << " inputs for a body of " << bodyInputs.size();
  TG_ASSERT(stacked.size() == carries)
      << "scan: " << stacked.size() << " stacked flags for " << carries << " carries";
  auto sameType = [](TensorType a, TensorType b) {
    a.place = b.place = Place::Host; // a scalar may stay on the host for a device body
    return a == b;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorType expected = bodyInputs[i]->type();
    if (i >= carries && i < carries + sequences) { // a sequence: its slices' type, one axis more
      TG_ASSERT(!inputs[i].isScalar()) << "scan: sequence " << i - carries << " is a scalar";
      TensorType slice = inputs[i];
      slice.shape.erase(slice.shape.begin());
      TG_ASSERT(sameType(slice, expected)) << "scan: sequence " << i - carries << " of " << inputs[i].str()
                                           << " for slices of " << expected.str();
      continue;
    }
    TG_ASSERT(sameType(inputs[i], expected))
        << "scan: input " << i << " is " << inputs[i].str() << ", the body reads " << expected.str();
  }
  Dim steps = this->steps(inputs);
  for (size_t s = 0; s < sequences; ++s) {
    const Dim &leading = inputs[carries + s].shape[0];
    if (leading.isStatic() && steps.isStatic() && leading != steps)
      throw UserError("scan: the sequences differ in length: " + steps.str() + " and " + leading.str() +
                      " steps (sequence " + std::to_string(s + 1) + " is " + inputs[carries + s].str() + ")");
  }
  std::vector<TensorType> types;
  const std::vector<Value *> &outputs = body.graph.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    TensorType type = outputs[i]->type();
    if (i < carries) {
      TG_ASSERT(sameType(type, bodyInputs[i]->type()))
          << "scan: carry " << i << " is " << bodyInputs[i]->type().str() << ", the body returns "
          << type.str();
    }
    if (i >= carries || stacked[i]) type.shape.insert(type.shape.begin(), steps);
    type.place = place;
    types.push_back(std::move(type));
  }
  return types;
}

std::vector<Value *> inlineGraph(Graph &into, const Graph &from, std::span<Value *const> inputs,
                                 std::unordered_map<const Value *, Value *> *recorded) {
  TG_ASSERT(inputs.size() == from.inputs().size())
      << inputs.size() << " values for a graph of " << from.inputs().size() << " inputs";
  std::unordered_map<const Value *, Value *> own;
  std::unordered_map<const Value *, Value *> &copies = recorded ? *recorded : own;
  for (size_t i = 0; i < inputs.size(); ++i)
    copies[from.inputs()[i]] = inputs[i];
  auto copyOf = [&](const Value *value) {
    auto found = copies.find(value);
    if (found != copies.end()) return found->second;
    TG_ASSERT(value->isConstant()) << "value " << value->id() << " is read before it is computed";
    Value *constant = into.addConstant(value->constant(), value->name());
    copies[value] = constant;
    return constant;
  };
  for (const Node *node : from.toposort()) {
    std::vector<Value *> operands;
    for (const Value *input : node->inputs())
      operands.push_back(copyOf(input));
    Node *copy = into.addNode(node->op(), std::move(operands), node->loc(), node->pin());
    for (size_t k = 0; k < node->outputs().size(); ++k) {
      copies[node->outputs()[k]] = copy->outputs()[k];
      if (!node->outputs()[k]->name().empty()) copy->outputs()[k]->setName(node->outputs()[k]->name());
    }
  }
  std::vector<Value *> outputs;
  for (const Value *output : from.outputs())
    outputs.push_back(copyOf(output));
  return outputs;
}

std::shared_ptr<Loop> loopShell(const Loop &loop) {
  auto shell = std::make_shared<Loop>();
  shell->carries = loop.carries;
  shell->sequences = loop.sequences;
  shell->stacked = loop.stacked;
  shell->reverse = loop.reverse;
  shell->length = loop.length;
  return shell;
}

std::shared_ptr<Loop> copyLoop(const Loop &loop, std::unordered_map<const Value *, Value *> *copies) {
  std::shared_ptr<Loop> copy = loopShell(loop);
  Program &body = copy->body;
  std::vector<Value *> inputs;
  for (const Program::Input &input : loop.body.inputs) {
    inputs.push_back(body.graph.addInput(input.value->type(), input.name));
    body.inputs.push_back({input.name, inputs.back(), input.loc});
  }
  std::vector<Value *> outputs = inlineGraph(body.graph, loop.body.graph, inputs, copies);
  for (size_t i = 0; i < outputs.size(); ++i) {
    body.graph.addOutput(outputs[i]);
    body.outputs.push_back({loop.body.outputs[i].name, outputs[i]});
  }
  return copy;
}

Node *rebuildScan(Graph &graph, const Node &scan, std::shared_ptr<const Loop> loop,
                  std::vector<Value *> inputs) {
  OpAttrs attrs = scan.op().attrs();
  attrs.loop = std::move(loop);
  Node *rebuilt = graph.addNode(Op(OpKind::Scan, std::move(attrs), scan.op().place()), std::move(inputs),
                                scan.loc(), scan.pin());
  for (size_t k = 0; k < scan.outputs().size(); ++k)
    rebuilt->outputs()[k]->setName(scan.outputs()[k]->name());
  return rebuilt;
}

std::vector<const Node *> nodesWithLoopBodies(const Graph &graph) {
  std::vector<const Node *> nodes;
  for (const Node *node : graph.toposort()) {
    nodes.push_back(node);
    if (node->op().kind() == OpKind::Scan) {
      std::vector<const Node *> body = nodesWithLoopBodies(node->op().attrs().loop->body.graph);
      nodes.insert(nodes.end(), body.begin(), body.end());
    }
  }
  return nodes;
}

} // namespace tg::ir
