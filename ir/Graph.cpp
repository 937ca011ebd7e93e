#include "ir/Graph.h"

#include "ir/Assert.h"
#include "ir/NodeWalk.h"

#include <algorithm>

namespace tg::ir {

namespace {
constexpr size_t kCacheLine = 64;
// addNode's layout: from the output value's last field (its owner) through two inputs to the node's id,
// input count, input list, output and op kind (the first 26 bytes of the node), within one line.
static_assert((sizeof(Value) - sizeof(Node *)) % kCacheLine + sizeof(Node *) + 2 * sizeof(Value *) + 26 <=
              kCacheLine);
} // namespace

void *Arena::allocate(size_t bytes, size_t alignment) {
  auto aligned = [alignment](std::byte *at) {
    auto address = reinterpret_cast<uintptr_t>(at);
    return reinterpret_cast<std::byte *>((address + alignment - 1) & ~(uintptr_t(alignment) - 1));
  };
  std::byte *start = next_ ? aligned(next_) : nullptr;
  if (!start || start + bytes > end_) {
    size_t size = std::max(kChunkBytes, bytes + alignment);
    chunks_.push_back(std::unique_ptr<std::byte[]>(new std::byte[size]));
    start = aligned(chunks_.back().get());
    end_ = chunks_.back().get() + size;
  }
  next_ = start + bytes;
  return start;
}

const std::string &Value::noName() {
  static const std::string empty;
  return empty;
}

Graph::~Graph() {
  for (Node *node : nodes_)
    node->~Node();
  for (Value *value : values_)
    value->~Value();
}

Value *Graph::newValue(TensorType type, size_t alignment) {
  auto *value = new (arena_.allocate(sizeof(Value), alignment)) Value();
  value->id_ = static_cast<int>(values_.size());
  value->type_ = std::move(type);
  values_.push_back(value);
  return value;
}

Value *Graph::addInput(TensorType type, std::string name) {
  Value *value = newValue(std::move(type));
  value->setName(std::move(name));
  inputs_.push_back(value);
  changed();
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
  replacement->setName(input->name());
  *position = replacement;
  changed();
  return replacement;
}

Value *Graph::addConstant(TensorData data, std::string name) {
  Shape shape;
  for (int64_t d : data.shape)
    shape.push_back(Dim::of(d));
  Value *value = newValue(TensorType{data.dtype, shape, Place::Host});
  value->setName(std::move(name));
  value->constant_ = std::make_shared<const TensorData>(std::move(data));
  return value;
}

Node *Graph::addNode(Op op, std::vector<Value *> inputs, SourceLoc loc, Pin pin) {
  // The types are copied into a vector kept by the graph: assigning reuses each shape's storage, so adding a
  // node allocates nothing for them (graphs are built and rebuilt node by node, 100k at a time).
  typeScratch_.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    typeScratch_[i] = inputs[i]->type();
  TensorType type;
  try {
    type = inferType(op, typeScratch_);
  } catch (UserError &error) {
    if (!error.loc.known()) error.loc = loc;
    throw;
  }
  // A node's output value, its input list and the node are allocated together, in that order, from the
  // start of a cache line: what a walk from a value to its producer's producers reads (the value's owner, the
  // input list, the node's id and input count) then lies in one line, one cache miss per step on a large
  // graph instead of three.
  Value *output = newValue(std::move(type), kCacheLine);
  auto **inputList =
      static_cast<Value **>(arena_.allocate(inputs.size() * sizeof(Value *), alignof(Value *)));
  std::copy(inputs.begin(), inputs.end(), inputList);
  auto *node = new (arena_.allocate(sizeof(Node), alignof(Node))) Node(std::move(op));
  node->id_ = static_cast<int>(nodes_.size());
  node->numInputs_ = static_cast<uint32_t>(inputs.size());
  node->inputs_ = inputList;
  node->pin_ = pin;
  node->loc_ = std::move(loc);
  for (size_t i = 0; i < inputs.size(); ++i)
    inputs[i]->clients_.push_back(inputUse(node, i));
  output->owner_ = node;
  node->output_ = output;
  if (size_t count = outputCount(node->op_); count > 1) {
    node->numOutputs_ = static_cast<uint32_t>(count);
    node->outputs_ = static_cast<Value **>(arena_.allocate(count * sizeof(Value *), alignof(Value *)));
    node->outputs_[0] = output;
    for (size_t i = 1; i < count; ++i) {
      node->outputs_[i] = newValue(extraOutputType(node->op_, typeScratch_, i));
      node->outputs_[i]->owner_ = node;
    }
  }
  nodes_.push_back(node);
  alive_.push_back(true);
  ++liveNodes_;
  Node *added = node;
  maybeDead_.push_back(node); // until something reads it
  changed();
  for (GraphListener *listener : listeners_)
    listener->onNodeAdded(added);
  return added;
}

void Graph::addOutput(Value *value) {
  value->clients_.push_back(outputUse(outputs_.size()));
  outputs_.push_back(value);
  changed();
}

void Graph::setOutput(size_t index, Value *value) {
  Value *old = outputs_.at(index);
  auto &uses = old->clients_;
  uses.erase(std::find(uses.begin(), uses.end(), outputUse(index)));
  value->clients_.push_back(outputUse(index));
  outputs_[index] = value;
  if (old->owner_) maybeDead_.push_back(old->owner_);
  changed();
}

void Graph::keepOutputs(size_t count) {
  while (outputs_.size() > count) {
    Value *old = outputs_.back();
    auto &uses = old->clients_;
    uses.erase(std::find(uses.begin(), uses.end(), outputUse(outputs_.size() - 1)));
    if (old->owner_) maybeDead_.push_back(old->owner_);
    outputs_.pop_back();
  }
  changed();
}

std::vector<Node *> Graph::nodes() const {
  std::vector<Node *> live;
  for (size_t id = 0; id < nodes_.size(); ++id)
    if (alive_[id]) live.push_back(nodes_[id]);
  return live;
}

const std::vector<Node *> &Graph::toposort() const {
  if (topoValid_) return topoCache_;
  // Iterative depth-first post-order from the outputs: inputs before users, deterministic. Visit states are
  // kept by node id (dense), not in a hash set: this runs after every change, on graphs of 100k nodes. A node
  // is read once, when first reached: its producers go on `pending`, so finishing it later reads only the
  // stacks (on a large graph the node has long left the cache by then).
  enum : uint8_t { Unvisited, OnStack, Done };
  std::vector<uint8_t> &state = reached_;
  state.assign(nodes_.size(), Unvisited);
  topoCache_.clear();
  struct Frame {
    Node *node;
    uint32_t id;
    uint32_t begin, next, end; // its producers are pending[begin, end); those from `next` not yet visited
  };
  std::vector<Frame> stack;
  std::vector<Node *> pending;
  auto enter = [&](Node *node) {
    auto id = static_cast<uint32_t>(node->id_);
    // Producers mostly have slightly smaller ids (graphs are built producers first): fetching the node that
    // many ids back overlaps the cache misses of a deep walk, which would otherwise come one at a time.
    if (id >= kPrefetchBehindId) __builtin_prefetch(nodes_[id - kPrefetchBehindId]);
    state[id] = OnStack;
    auto begin = static_cast<uint32_t>(pending.size());
    for (uint32_t i = 0; i < node->numInputs_; ++i)
      if (Node *producer = node->inputs_[i]->owner_) pending.push_back(producer);
    stack.push_back({node, id, begin, begin, static_cast<uint32_t>(pending.size())});
  };
  for (Value *output : outputs_) {
    if (!output->owner_ || state[static_cast<size_t>(output->owner_->id_)] == Done) continue;
    enter(output->owner_);
    while (!stack.empty()) {
      Frame &frame = stack.back();
      if (frame.next < frame.end) {
        Node *producer = pending[frame.next++];
        uint8_t producerState = state[static_cast<size_t>(producer->id_)];
        if (producerState == Done) continue;
        TG_ASSERT(producerState != OnStack) << "the graph has a cycle through node " << producer->id_;
        enter(producer);
        continue;
      }
      state[frame.id] = Done;
      topoCache_.push_back(frame.node);
      pending.resize(frame.begin);
      stack.pop_back();
    }
  }
  topoValid_ = true;
  reachedValid_ = true;
  return topoCache_;
}

void Graph::assumeToposort(std::vector<Node *> order, std::span<Node *const> dead) {
  topoCache_ = std::move(order);
  topoValid_ = true;
  if (dead.size() <= topoCache_.size()) {
    // Few died: removed by name, without reading the many that live. The sweep's table of listed nodes is
    // left to a walk, should a sweep want it before the order changes.
    drop(markKnownDead(dead));
    reachedValid_ = false;
  } else {
    // Most died: the listed are marked by id, and the dead found in a scan of the ids, each read once (to
    // take it off its inputs' client lists) instead of twice.
    reached_.assign(nodes_.size(), false);
    for (Node *node : inOrder(topoCache_))
      reached_[static_cast<size_t>(node->id_)] = true;
    reachedValid_ = true;
    drop(markUnreachable());
  }
  maybeDead_.clear();
  sweptVersion_ = version_;
}

void Graph::replaceUses(Value *old, Value *replacement) {
  TG_ASSERT(old != replacement) << "replacing value " << old->id_ << " with itself";
  Clients uses = std::move(old->clients_);
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
  if (old->owner_) maybeDead_.push_back(old->owner_);
  if (old->owner_ || replacement->owner_) {
    changed();
  } else {
    ++version_; // one constant or input for another: the order of the nodes stays as it was
  }
}

void Graph::setInput(Node *node, size_t index, Value *value) {
  TG_ASSERT(index < node->numInputs_) << "node " << node->id_ << " has no input " << index;
  Value *old = node->inputs_[index];
  auto &uses = old->clients_;
  uses.erase(std::find(uses.begin(), uses.end(), inputUse(node, index)));
  node->inputs_[index] = value;
  value->clients_.push_back(inputUse(node, index));
  for (GraphListener *listener : listeners_)
    listener->onInputChanged(node, index, old, value);
  if (old->owner_) maybeDead_.push_back(old->owner_);
  changed();
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
  // Nothing changed since the last sweep, or nothing that could kill a node (a constant for a constant).
  if (sweptVersion_ == version_ || maybeDead_.empty()) {
    sweptVersion_ = version_;
    return;
  }
  // A node is dead when no live node and no graph output reads its value: it is unreachable from the
  // outputs. When the order is known, or so much changed that the next pass's order is worth computing now
  // (a lift replaced the whole graph; canonicalize removed half of it), the dead are the nodes it does not
  // list: one scan of a table by id. Otherwise the cost follows the changes.
  drop(topoValid_ || maybeDead_.size() > liveNodes_ / 8 ? markUnreachable() : markDeadFromChanges());
  maybeDead_.clear();
  sweptVersion_ = version_;
}

std::span<Node *const> Graph::markKnownDead(std::span<Node *const> nodes) {
  for (const Node *node : nodes) {
    TG_ASSERT(isAlive(node)) << "node " << node->id_ << " (" << node->op_.name() << ") is removed twice";
    alive_[static_cast<size_t>(node->id_)] = false;
  }
#ifndef NDEBUG
  // A release build leaves this to verify() (a live reader of a removed node): checked here, it would read
  // every removed node's value, a cache miss each when a pass removes most of a large graph.
  for (const Node *node : nodes)
    for (const Value *output : node->outputs())
      for (const Use &use : output->clients_)
        TG_ASSERT(use.node && !alive_[use.nodeId])
            << "node " << node->id_ << " (" << node->op_.name() << ") is removed while "
            << (use.node ? "node " : "graph output ") << (use.node ? use.nodeId : use.index) << " reads it";
#endif
  return nodes;
}

std::vector<Node *> Graph::markUnreachable() {
  if (!reachedValid_) topoValid_ = false;
  toposort();
  std::vector<Node *> dead;
  for (size_t id = 0; id < nodes_.size(); ++id)
    if (alive_[id] && !reached_[id]) {
      alive_[id] = false;
      dead.push_back(nodes_[id]);
    }
  return dead;
}

std::vector<Node *> Graph::markDeadFromChanges() {
  // Only a node that was added or lost a reader since the last sweep can have died first; the others die
  // through their readers. Readers are counted as the graph was before this sweep (`wasAlive`), lazily, once
  // per value; every death then takes its reads off the counts, so a count reaches zero exactly when the last
  // reader dies.
  constexpr uint32_t kUncounted = ~uint32_t(0);
  const std::vector<uint8_t> wasAlive = alive_;
  std::vector<uint32_t> liveReaders(values_.size(), kUncounted);
  auto readers = [&](const Value *value) -> uint32_t & {
    uint32_t &count = liveReaders[static_cast<size_t>(value->id_)];
    if (count == kUncounted) {
      count = 0;
      for (const Use &use : value->clients_)
        count += !use.node || wasAlive[use.nodeId];
    }
    return count;
  };
  auto unread = [&](const Node *node) {
    for (const Value *output : node->outputs())
      if (readers(output) != 0) return false;
    return true;
  };
  std::vector<Node *> dead;
  for (Node *node : maybeDead_)
    if (isAlive(node) && unread(node)) {
      alive_[static_cast<size_t>(node->id_)] = false;
      dead.push_back(node);
    }
  for (size_t next = 0; next < dead.size(); ++next) {
    for (Value *input : dead[next]->inputs()) {
      Node *producer = input->owner_;
      if (--readers(input) == 0 && producer && isAlive(producer) && unread(producer)) {
        alive_[static_cast<size_t>(producer->id_)] = false;
        dead.push_back(producer);
      }
    }
  }
  return dead;
}

void Graph::drop(std::span<Node *const> dead) {
  liveNodes_ -= dead.size();
  // One filtering of each value the dead read, when first met (every death is already marked): a value with
  // many dead readers (a shared constant) costs its client count once, not once per dead reader.
  std::vector<uint8_t> filtered(values_.size(), false);
  for (const Node *node : dead)
    for (Value *input : node->inputs()) {
      if (filtered[static_cast<size_t>(input->id_)]) continue;
      filtered[static_cast<size_t>(input->id_)] = true;
      auto &uses = input->clients_;
      uses.erase(std::remove_if(uses.begin(), uses.end(),
                                [this](const Use &use) { return use.node && !readerAlive(use); }),
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
  auto report = [&problems](const Node *node, const std::string &text) {
    problems.push_back("node " + std::to_string(node->id_) + " (" + node->op_.name() + "): " + text);
  };
  std::vector<uint8_t> isGraphInput(values_.size(), false);
  for (const Value *input : inputs_)
    isGraphInput[static_cast<size_t>(input->id_)] = true;
  // The order, walked or asserted by a pass (assumeToposort), must list each node the outputs depend on once,
  // after its producers, and nothing else. Checked in dense tables by node id, without a walk: every input's
  // producer is listed before its reader (so no cycle is listed), every output's node is listed, and every
  // listed node is read by a later one or is an output's (so, the order being finite, an output depends on
  // it).
  const std::vector<Node *> &order = toposort();
  // Client lists are checked through one slot per input of every checked node: each list of a value those
  // nodes read is scanned once, recording which value lists each (node, input) slot, so a constant shared by
  // many nodes costs its client count once; then the records are compared with the inputs in two dense
  // tables. Nodes no output depends on (the old graph a lift replaced, before the sweep) are not checked.
  constexpr uint32_t kUnchecked = ~uint32_t(0);
  std::vector<uint32_t> firstSlot(nodes_.size(), kUnchecked), inputCount(nodes_.size(), 0);
  std::vector<uint32_t> position(nodes_.size(), kUnchecked);
  uint32_t slots = 0;
  for (size_t at = 0; at < order.size(); ++at) {
    const Node *node = order[at];
    if (at + kPrefetchAhead < order.size()) __builtin_prefetch(order[at + kPrefetchAhead]); // the node alone
    auto id = static_cast<size_t>(node->id_);
    if (position[id] != kUnchecked) report(node, "is listed twice in the order");
    if (!isAlive(node)) report(node, "is listed in the order although removed");
    position[id] = static_cast<uint32_t>(at);
    firstSlot[id] = slots;
    inputCount[id] = node->numInputs_;
    slots += node->numInputs_;
  }
  if (sweptVersion_ == version_ && order.size() != liveNodes_) // swept: every live node is in the order
    problems.push_back("the order lists " + std::to_string(order.size()) + " of the " +
                       std::to_string(liveNodes_) + " live nodes");
  std::vector<uint8_t> read(nodes_.size(), false);
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (const Node *owner = outputs_[i]->owner_) {
      if (position[static_cast<size_t>(owner->id_)] == kUnchecked)
        problems.push_back("output " + std::to_string(i) + " comes from node " + std::to_string(owner->id_) +
                           ", which the order does not list");
      read[static_cast<size_t>(owner->id_)] = true;
    }
  const Value *const conflict = reinterpret_cast<const Value *>(&problems); // listed by two values
  std::vector<const Value *> recordedBy(slots, nullptr), expected(slots, nullptr);
  std::vector<uint8_t> scanned(values_.size(), false);
  std::vector<TensorType> inputTypes;
  for (const Node *node : inOrder(order)) {
    inputTypes.resize(node->numInputs_);
    uint32_t first = firstSlot[static_cast<size_t>(node->id_)];
    for (size_t i = 0; i < node->numInputs_; ++i) {
      const Value *input = node->inputs_[i];
      expected[first + i] = input;
      inputTypes[i] = input->type_;
      if (!input->owner_ && !input->isConstant() && !isGraphInput[static_cast<size_t>(input->id_)])
        report(node, "input " + std::to_string(i) + " is neither computed, constant nor a graph input");
      if (const Node *producer = input->owner_) {
        if (!isAlive(producer)) report(node, "input " + std::to_string(i) + " comes from a removed node");
        uint32_t produced = position[static_cast<size_t>(producer->id_)];
        if (produced == kUnchecked || produced >= position[static_cast<size_t>(node->id_)])
          report(node,
                 "input " + std::to_string(i) + " comes from node " + std::to_string(producer->id_) +
                     (produced == kUnchecked ? ", which the order does not list" : ", listed after it"));
        read[static_cast<size_t>(producer->id_)] = true;
      }
      if (scanned[static_cast<size_t>(input->id_)]) continue;
      scanned[static_cast<size_t>(input->id_)] = true;
      for (const Use &use : input->clients_) {
        if (!use.node || firstSlot[use.nodeId] == kUnchecked || use.index >= inputCount[use.nodeId]) continue;
        const Value *&slot = recordedBy[firstSlot[use.nodeId] + use.index];
        slot = slot && slot != input ? conflict : input;
      }
    }
    try {
      TensorType inferred = inferType(node->op_, inputTypes);
      for (size_t i = 0; i < node->numOutputs_; ++i) {
        const TensorType &actual = node->outputs_[i]->type_;
        TensorType expected = i == 0 ? inferred : extraOutputType(node->op_, inputTypes, i);
        if (expected.dtype != actual.dtype || expected.rank() != actual.rank() ||
            expected.place != actual.place)
          report(node, "output " + std::to_string(i) + " type " + actual.str() +
                           " does not match the inferred " + expected.str());
        if (node->outputs_[i]->owner_ != node)
          report(node, "output " + std::to_string(i) + " names another owner");
      }
    } catch (const UserError &error) {
      report(node, error.message);
    }
  }
  for (size_t id = 0; id < nodes_.size(); ++id)
    if (position[id] != kUnchecked && !read[id]) report(nodes_[id], "is listed but nothing reads it");
  for (uint32_t slot = 0; slot < slots; ++slot) {
    if (recordedBy[slot] == expected[slot]) continue;
    // The slot's node: the last whose first slot is at or before it (the first slots grow along the order).
    auto owner = std::upper_bound(order.begin(), order.end(), slot, [&](uint32_t at, const Node *node) {
      return at < firstSlot[static_cast<size_t>(node->id_)];
    });
    const Node *node = *(owner - 1);
    report(node, "input " + std::to_string(slot - firstSlot[static_cast<size_t>(node->id_)]) +
                     " does not list it as a client");
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const auto &uses = outputs_[i]->clients_;
    if (std::find(uses.begin(), uses.end(), outputUse(i)) == uses.end())
      problems.push_back("output " + std::to_string(i) + " does not list the graph as a client");
  }
  return problems;
}

void Graph::verifyOrDie() const {
  std::vector<std::string> problems = verify();
  TG_ASSERT(problems.empty()) << "invalid graph: " << problems.front();
}

} // namespace tg::ir
