// The graph IR, after Theano: Value (Variable), Node (Apply), Graph (FunctionGraph, with clients).
//
//   input X ──┐
//             ├─> Node(add) ──> Value ──> Node(exp) ──> Value ──> output
//   const 1 ──┘
//
// Values and nodes are owned by their Graph and identified by small integer ids in creation order, so every
// printer and pass that walks them is deterministic. They live in the graph's arena, each node's output
// value, input list and the node itself in a row, so a walk over a graph built in order reads memory in
// order (ir/NodeWalk.h walks lists of them with the memory asked ahead).
#pragma once

#include "ir/Op.h"
#include "ir/SourceLoc.h"
#include "ir/TensorData.h"
#include "ir/Type.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tg::ir {

class Node;

/// Where a node was asked to run by `@host` / `@device`.
enum class Pin : uint8_t { None, Host, Device };

/// One use of a value: input `index` of `node`, or (node == nullptr) graph output `index`. The reader's id
/// is kept beside it, so that sweeps and checks over client lists consult the graph's tables by id without
/// visiting each reader (on a large graph, a cache miss per reader).
struct Use {
  Node *node = nullptr;
  uint32_t index = 0;
  uint32_t nodeId = 0; // node->id(); 0 for a graph output
  bool operator==(const Use &other) const { return node == other.node && index == other.index; }
};

/// The uses of a value: most values have one or two readers (a forward value and its gradient's use), kept
/// inline.
using Clients = SmallVector<Use, 2>;

class Value {
public:
  int id() const { return id_; }
  const TensorType &type() const { return type_; }
  /// The node computing this value, or nullptr for graph inputs and constants.
  Node *owner() const { return owner_; }
  const std::string &name() const { return name_ ? *name_ : noName(); }
  void setName(std::string name) {
    name_ = name.empty() ? nullptr : std::make_unique<std::string>(std::move(name));
  }
  bool isConstant() const { return constant_ != nullptr; }
  const TensorData &constant() const { return *constant_; }
  const Clients &clients() const { return clients_; }

private:
  friend class Graph;
  int id_ = 0;
  TensorType type_;
  static const std::string &noName();

  std::unique_ptr<std::string> name_; // most values have none: a pointer keeps the value small
  std::shared_ptr<const TensorData> constant_;
  Clients clients_;
  Node *owner_ = nullptr; // last: right before its owner's input list (see Graph::addNode)
};

class Node {
public:
  int id() const { return id_; }
  const Op &op() const { return op_; }
  std::span<Value *const> inputs() const { return {inputs_, numInputs_}; }
  Value *input(size_t i) const { return inputs_[i]; }
  /// The value this node computes: its first output. Every op has one output but a fused node whose body
  /// writes extra outputs (ScalarGraph::extraOutputs), which has one more per extra output.
  Value *output() const { return output_; }
  /// Every value the node computes: output(), then the extra outputs.
  std::span<Value *const> outputs() const { return {outputs_, numOutputs_}; }
  Pin pin() const { return pin_; }
  const SourceLoc &loc() const { return loc_; }

private:
  friend class Graph;
  int id_ = 0;
  uint32_t numInputs_ = 0;
  uint32_t numOutputs_ = 1;
  Value **inputs_ = nullptr; // numInputs_ entries, in the arena right after the node
  Value *output_ = nullptr;
  Value **outputs_ = &output_; // numOutputs_ entries: &output_, or an arena list starting with it
  Op op_;
  Pin pin_ = Pin::None;
  SourceLoc loc_;

  explicit Node(Op op) : op_(std::move(op)) {}
};

/// Bump allocation in large chunks for the objects of one graph; freed all at once with the graph.
class Arena {
public:
  Arena() = default;
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;
  void *allocate(size_t bytes, size_t alignment);

private:
  static constexpr size_t kChunkBytes = 64 * 1024;
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  std::byte *next_ = nullptr, *end_ = nullptr;
};

/// Told about every change to a graph (Theano's features). Default implementations ignore the event.
class GraphListener {
public:
  virtual ~GraphListener() = default;
  virtual void onNodeAdded(Node *) {}
  virtual void onInputChanged(Node *, size_t /*index*/, Value * /*old*/, Value * /*replacement*/) {}
  virtual void onNodeRemoved(Node *) {}
};

class Graph {
public:
  Graph() = default;
  ~Graph();
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  Value *addInput(TensorType type, std::string name);
  /// Reorders the inputs; `order` must hold exactly the current inputs.
  void setInputOrder(std::vector<Value *> order);
  /// Puts a new input of `type` (same name) in the place of `input`, which stops being an input; its clients
  /// are the caller's to move. Returns the new input.
  Value *replaceInput(Value *input, TensorType type);
  Value *addConstant(TensorData data, std::string name = {});
  /// Adds a node whose output type is inferred from its inputs (throws UserError with `loc` when they do not
  /// fit).
  Node *addNode(Op op, std::vector<Value *> inputs, SourceLoc loc = {}, Pin pin = Pin::None);
  void addOutput(Value *value);
  /// Makes input `index` of `node` read `value` instead (no verification; types must fit by the caller's
  /// care).
  void setInput(Node *node, size_t index, Value *value);
  /// One past the largest node id and value id: sizes for tables indexed by id.
  size_t nodeIdBound() const { return nodes_.size(); }
  size_t valueIdBound() const { return values_.size(); }
  /// Pins a node to a place (`@host` / `@device`).
  void setPin(Node *node, Pin pin) { node->pin_ = pin; }
  void setOutput(size_t index, Value *value);
  /// Keeps the first `count` outputs and drops the others (what only they read becomes dead).
  void keepOutputs(size_t count);

  const std::vector<Value *> &inputs() const { return inputs_; }
  const std::vector<Value *> &outputs() const { return outputs_; }
  /// Every live node, in creation order.
  std::vector<Node *> nodes() const;
  /// How many nodes are live: after removeDeadNodes(), exactly those toposort() lists.
  size_t liveNodeCount() const { return liveNodes_; }
  /// Nodes reachable from the outputs, inputs before users; cached until the graph changes.
  const std::vector<Node *> &toposort() const;
  /// Removes `dead` and sets the cached order to `order`, which the caller knows lists exactly the nodes the
  /// outputs then depend on, producers first; `dead` are all the other live nodes. A pass that knows how its
  /// changes moved the order (merge drops nodes from it, fusion puts each fused node where its cluster's root
  /// was) saves the next walk and the sweep. verify() checks the order.
  void assumeToposort(std::vector<Node *> order, std::span<Node *const> dead);

  /// Makes every client of `old` use `replacement` instead, then verifies the graph.
  void replace(Value *old, Value *replacement);
  /// All replacements at once, then one verification (the global lift's single validation).
  void replaceAll(const std::vector<std::pair<Value *, Value *>> &replacements);
  /// Makes every client of `old` use `replacement`, without verifying: for rewrite drivers that make many
  /// small changes and verify once at the end. The types must match (asserted).
  void substitute(Value *old, Value *replacement);
  /// Drops nodes no output depends on (nothing to do, and no walk, when the graph has not changed since).
  /// With assumeToposort, the only ways nodes leave a graph: both end in drop().
  void removeDeadNodes();
  /// Changes whenever a node, an input, an output or an edge changes: passes compare it to skip work on an
  /// unchanged graph.
  uint64_t version() const { return version_; }

  void addListener(GraphListener *listener) { listeners_.push_back(listener); }
  void removeListener(GraphListener *listener);

  /// Checks the nodes the outputs depend on: the order toposort() holds (each listed once, after its
  /// producers, and nothing else), types against inference (places included) and client lists; returns the
  /// problems found.
  std::vector<std::string> verify() const;
  /// verify(), failing with TG_ASSERT on the first problem (a compiler bug, not a user error).
  void verifyOrDie() const;

private:
  Value *newValue(TensorType type, size_t alignment = alignof(Value));
  bool isAlive(const Node *node) const { return alive_[static_cast<size_t>(node->id_)]; }
  /// Whether the node reading through `use` is alive (false for a graph output).
  bool readerAlive(const Use &use) const { return use.node && alive_[use.nodeId]; }
  static Use inputUse(Node *node, size_t index) {
    return Use{node, static_cast<uint32_t>(index), static_cast<uint32_t>(node->id_)};
  }
  static Use outputUse(size_t index) { return Use{nullptr, static_cast<uint32_t>(index), 0}; }
  void changed() {
    ++version_;
    topoValid_ = false;
  }
  void replaceUses(Value *old, Value *replacement);
  // Finding the dead: each marks them dead and returns them, for drop().
  /// The live nodes toposort() does not list.
  std::vector<Node *> markUnreachable();
  /// Those that died since the last sweep, following the changes (maybeDead_) instead of walking the graph.
  std::vector<Node *> markDeadFromChanges();
  /// `nodes`, which a pass says are dead: no graph output and no live node reads them (asserted in debug
  /// builds; verify() reports a live reader of a removed node).
  std::span<Node *const> markKnownDead(std::span<Node *const> nodes);
  /// Takes nodes marked dead out of the graph: the live count, their inputs' client lists, the listeners.
  void drop(std::span<Node *const> dead);

  Arena arena_;
  std::vector<Value *> values_; // by id
  std::vector<Node *> nodes_;   // by id
  std::vector<uint8_t> alive_;  // by node id, apart from the nodes so that sweeping them touches no node
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  std::vector<GraphListener *> listeners_;
  mutable std::vector<Node *> topoCache_;
  mutable std::vector<uint8_t> reached_; // by node id, with topoCache_: whether the order lists the node
  mutable bool topoValid_ = false;
  mutable bool reachedValid_ = false; // reached_ goes with topoCache_ (not so for an order a pass asserted)
  size_t liveNodes_ = 0;
  std::vector<Node *> maybeDead_;       // added or lost a reader since the last sweep
  std::vector<TensorType> typeScratch_; // addNode's input types
  uint64_t version_ = 0;
  uint64_t sweptVersion_ = ~uint64_t(0);
};

} // namespace tg::ir
