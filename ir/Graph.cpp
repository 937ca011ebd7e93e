#include "ir/Graph.h"

#include "ir/Assert.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace tg::ir {

Value *Graph::newValue(TensorType type) {
  auto value = std::make_unique<Value>();
  value->id_ = static_cast<int>(values_.size());
  value->type_ = std::move(type);
  values_.push_back(std::move(value));
  return values_.back().get();
}

Value *Graph::addInput(TensorType type, std::string name) {
  Value *value = newValue(std::move(type));
  value->name_ = std::move(name);
  inputs_.push_back(value);
  topoValid_ = false;
  return value;
}

void Graph::setInputOrder(std::vector<Value *> order) {
  std::vector<Value *> sorted = order, current = inputs_;
  std::sort(sorted.begin(), sorted.end());
  std::sort(current.begin(), current.end());
  TG_ASSERT(sorted == current) << "setInputOrder must keep the same inputs";
  inputs_ = std::move(order);
}

Value *Graph::replaceInput(Value *input, TensorType type) {
  auto position = std::find(inputs_.begin(), inputs_.end(), input);
  TG_ASSERT(position != inputs_.end()) << "value " << input->id_ << " is not a graph input";
  Value *replacement = newValue(std::move(type));
  replacement->name_ = input->name_;
  *position = replacement;
  topoValid_ = false;
  return replacement;
}

Value *Graph::addConstant(TensorData data, std::string name) {
  Shape shape;
  for (int64_t d : data.shape)
    shape.push_back(Dim::of(d));
  Value *value = newValue(TensorType{data.dtype, shape, Place::Host});
  value->name_ = std::move(name);
  value->constant_ = std::make_shared<const TensorData>(std::move(data));
  return value;
}

Node *Graph::addNode(Op op, std::vector<Value *> inputs, SourceLoc loc, Pin pin) {
  std::vector<TensorType> inputTypes;
  for (Value *input : inputs)
    inputTypes.push_back(input->type());
  TensorType type;
  try {
    type = inferType(op, inputTypes);
  } catch (UserError &error) {
    if (!error.loc.known()) error.loc = loc;
    throw;
  }
  auto node = std::unique_ptr<Node>(new Node(std::move(op)));
  node->id_ = static_cast<int>(nodes_.size());
  node->inputs_ = std::move(inputs);
  node->pin_ = pin;
  node->loc_ = std::move(loc);
  for (size_t i = 0; i < node->inputs_.size(); ++i)
    node->inputs_[i]->clients_.push_back(Use{node.get(), i});
  Value *output = newValue(std::move(type));
  output->owner_ = node.get();
  node->outputs_.push_back(output);
  nodes_.push_back(std::move(node));
  alive_.push_back(true);
  Node *added = nodes_.back().get();
  topoValid_ = false;
  for (GraphListener *listener : listeners_)
    listener->onNodeAdded(added);
  return added;
}

void Graph::addOutput(Value *value) {
  value->clients_.push_back(Use{nullptr, outputs_.size()});
  outputs_.push_back(value);
  topoValid_ = false;
}

void Graph::setOutput(size_t index, Value *value) {
  Value *old = outputs_.at(index);
  auto &uses = old->clients_;
  uses.erase(std::find(uses.begin(), uses.end(), Use{nullptr, index}));
  value->clients_.push_back(Use{nullptr, index});
  outputs_[index] = value;
  topoValid_ = false;
}

std::vector<Node *> Graph::nodes() const {
  std::vector<Node *> live;
  for (size_t id = 0; id < nodes_.size(); ++id)
    if (alive_[id]) live.push_back(nodes_[id].get());
  return live;
}

const std::vector<Node *> &Graph::toposort() const {
  if (topoValid_) return topoCache_;
  // Iterative depth-first post-order from the outputs: inputs before users, deterministic. Visit states are
  // kept by node id (dense), not in a hash set: this runs after every change, on graphs of 100k nodes.
  enum : uint8_t { Unvisited, OnStack, Done };
  std::vector<uint8_t> state(nodes_.size(), Unvisited);
  topoCache_.clear();
  std::vector<std::pair<Node *, size_t>> stack;
  for (Value *output : outputs_) {
    if (!output->owner_ || state[output->owner_->id_] == Done) continue;
    stack.push_back({output->owner_, 0});
    state[output->owner_->id_] = OnStack;
    while (!stack.empty()) {
      auto &[node, next] = stack.back();
      if (next < node->inputs_.size()) {
        Node *producer = node->inputs_[next++]->owner_;
        if (!producer || state[producer->id_] == Done) continue;
        TG_ASSERT(state[producer->id_] != OnStack) << "the graph has a cycle through node " << producer->id_;
        stack.push_back({producer, 0});
        state[producer->id_] = OnStack;
        continue;
      }
      state[node->id_] = Done;
      topoCache_.push_back(node);
      stack.pop_back();
    }
  }
  topoValid_ = true;
  return topoCache_;
}

void Graph::replaceUses(Value *old, Value *replacement) {
  TG_ASSERT(old != replacement) << "replacing value " << old->id_ << " with itself";
  std::vector<Use> uses = std::move(old->clients_);
  old->clients_.clear();
  for (const Use &use : uses) {
    if (!use.node) {
      outputs_[use.index] = replacement;
    } else {
      use.node->inputs_[use.index] = replacement;
      for (GraphListener *listener : listeners_)
        listener->onInputChanged(use.node, use.index, old, replacement);
    }
    replacement->clients_.push_back(use);
  }
  topoValid_ = false;
}

void Graph::setInput(Node *node, size_t index, Value *value) {
  Value *old = node->inputs_.at(index);
  auto &uses = old->clients_;
  uses.erase(std::find(uses.begin(), uses.end(), Use{node, index}));
  node->inputs_[index] = value;
  value->clients_.push_back(Use{node, index});
  for (GraphListener *listener : listeners_)
    listener->onInputChanged(node, index, old, value);
  topoValid_ = false;
}

void Graph::replace(Value *old, Value *replacement) {
  replaceAll({{old, replacement}});
}

void Graph::substitute(Value *old, Value *replacement) {
  TG_ASSERT(old->type_.dtype == replacement->type_.dtype && old->type_.rank() == replacement->type_.rank())
      << "replacement changes the type of value " << old->id_ << " from " << old->type_.str() << " to "
      << replacement->type_.str();
  replaceUses(old, replacement);
}

void Graph::replaceAll(const std::vector<std::pair<Value *, Value *>> &replacements) {
  for (const auto &[old, replacement] : replacements)
    substitute(old, replacement);
  verifyOrDie();
}

void Graph::removeDeadNodes() {
  std::vector<bool> reachable(nodes_.size(), false);
  for (const Node *node : toposort())
    reachable[node->id_] = true;
  std::vector<Node *> dead;
  std::unordered_set<Value *> touched;
  for (size_t id = 0; id < nodes_.size(); ++id) {
    if (!alive_[id] || reachable[id]) continue;
    alive_[id] = false;
    Node *node = nodes_[id].get();
    dead.push_back(node);
    touched.insert(node->inputs_.begin(), node->inputs_.end());
  }
  // One filtering pass per value: a value with many dead clients (a shared constant) costs its client count
  // once, not once per dead client.
  for (Value *value : touched) {
    auto &uses = value->clients_;
    uses.erase(std::remove_if(uses.begin(), uses.end(),
                              [this](const Use &use) { return use.node && !isAlive(use.node); }),
               uses.end());
  }
  for (Node *node : dead)
    for (GraphListener *listener : listeners_)
      listener->onNodeRemoved(node);
}

void Graph::removeListener(GraphListener *listener) {
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), listener), listeners_.end());
}

std::vector<std::string> Graph::verify() const {
  std::vector<std::string> problems;
  auto report = [&problems](const std::string &text) { problems.push_back(text); };
  std::unordered_set<const Value *> graphInputs(inputs_.begin(), inputs_.end());
  // Every (node, input index) the client lists record, with the value recording it: one pass over the lists,
  // so a constant shared by many nodes costs its client count once.
  std::unordered_map<uint64_t, const Value *> recorded;
  auto useKey = [](const Node *node, size_t index) {
    return (static_cast<uint64_t>(node->id_) << 24) | index;
  };
  for (const auto &value : values_)
    for (const Use &use : value->clients_)
      if (use.node) recorded.emplace(useKey(use.node, use.index), value.get());
  topoValid_ = false; // recompute the order: toposort() asserts on a cycle
  for (const Node *node : toposort()) {
    std::string where = "node " + std::to_string(node->id_) + " (" + node->op_.name() + ")";
    std::vector<TensorType> inputTypes;
    for (size_t i = 0; i < node->inputs_.size(); ++i) {
      const Value *input = node->inputs_[i];
      inputTypes.push_back(input->type_);
      if (!input->owner_ && !input->isConstant() && !graphInputs.count(input))
        report(where + ": input " + std::to_string(i) + " is neither computed, constant nor a graph input");
      if (input->owner_ && !isAlive(input->owner_))
        report(where + ": input " + std::to_string(i) + " comes from a removed node");
      auto use = recorded.find(useKey(node, i));
      if (use == recorded.end() || use->second != input)
        report(where + ": input " + std::to_string(i) + " does not list it as a client");
    }
    try {
      TensorType expected = inferType(node->op_, inputTypes);
      const TensorType &actual = node->outputs_[0]->type_;
      if (expected.dtype != actual.dtype || expected.rank() != actual.rank() ||
          expected.place != actual.place)
        report(where + ": output type " + actual.str() + " does not match the inferred " + expected.str());
    } catch (const UserError &error) {
      report(where + ": " + error.message);
    }
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const auto &uses = outputs_[i]->clients_;
    if (std::find(uses.begin(), uses.end(), Use{nullptr, i}) == uses.end())
      report("output " + std::to_string(i) + " does not list the graph as a client");
  }
  return problems;
}

void Graph::verifyOrDie() const {
  std::vector<std::string> problems = verify();
  TG_ASSERT(problems.empty()) << "invalid graph: " << problems.front();
}

} // namespace tg::ir
