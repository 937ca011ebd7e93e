#include "opt/Fusion.h"

#include "ir/Assert.h"
#include "ir/NodeWalk.h"
#include "ir/ScalarGraph.h"

#include <algorithm>
#include <optional>

namespace tg::opt {

namespace {

using ir::Node;
using ir::Value;

bool fusible(const Node *node) {
  return node->op().kind() != ir::OpKind::Fused && ir::isScalarOp(node->op().kind());
}

/// ones_like and zeros_like: a member computes them as an immediate, reading nothing, so any number of
/// clusters may take one that others read too (each reader's kernel makes its own); it lives on, like a copy,
/// while a node outside them reads it. Their operand stays an input of the fused node, which gives it its
/// shape.
bool isFill(const Node *node) {
  return ir::fillValue(node->op().kind()).has_value();
}

bool isPrologueRoot(const Node *node) {
  return ir::isPrologueReduction(node->op().kind());
}

/// A 0-d constant, which the program holds as an immediate instead of reading it; immediates are doubles,
/// so a 64-bit integer beyond 2**53 stays an input, read exactly.
bool isImmediate(const Value *value) {
  if (!value->isConstant() || !value->type().isScalar()) return false;
  const ir::TensorData &data = value->constant();
  if (data.dtype != ir::DType::I64) return true;
  int64_t integer = data.data<int64_t>()[0];
  return integer >= -(int64_t(1) << 53) && integer <= (int64_t(1) << 53);
}

/// One cluster being turned into a fused node. The root is an elementwise node (the program's last
/// instruction) or a reduction (the program computes the value it reduces: its prologue).
class ClusterBuilder {
public:
  /// `order` is the graph's topological order (every live node), whose positions order each cluster's
  /// members.
  ClusterBuilder(ir::Graph &graph, std::vector<Node *> order, PlacementReasons *placement)
      : graph_(graph), placement_(placement), order_(std::move(order)), clusterOf_(graph.nodeIdBound(), -1),
        position_(graph.nodeIdBound(), 0) {
    for (size_t i = 0; i < order_.size(); ++i)
      position_[static_cast<size_t>(order_[i]->id())] = static_cast<uint32_t>(i);
  }

  /// One stage: roots clusters at the nodes `isRoot` accepts, consumers first, each taking nodes no cluster
  /// of this stage took (a copy an earlier stage left alive may join one). Returns {kernels made, ops fused}.
  template <typename IsRoot>
  std::pair<size_t, size_t> fuseAll(IsRoot isRoot) {
    firstCluster_ = nextCluster_;
    // Values the earlier stages' fused nodes compute may be read by this stage's members.
    valueStamp_.resize(graph_.valueIdBound(), -1);
    valueSlot_.resize(graph_.valueIdBound(), 0);
    size_t kernels = 0, ops = 0;
    // The order as the earlier stages left it: their fused nodes where their roots were (not fusible again),
    // null for the nodes they removed.
    for (Node *node : ir::inReverseOrder(order_)) {
      if (!node || !isRoot(node) || clustered(node)) continue;
      size_t fused = fuse(node);
      ops += fused;
      kernels += fused > 0;
    }
    settleCopies();
    return {kernels, ops};
  }

  /// Removes the nodes the fused nodes replaced and gives the graph its new order: what the fused nodes
  /// replaced and where they go in the order is known, so neither takes a walk through the graph (a cascade
  /// of dependent loads on a large one). Removed together, a value many of them read is filtered once.
  void finish() {
    order_.erase(std::remove(order_.begin(), order_.end(), nullptr), order_.end());
    graph_.assumeToposort(std::move(order_), dead_);
  }

private:
  /// Whether this stage has taken the node into a cluster.
  bool clustered(const Node *node) const { return clusterOfNode(node) >= firstCluster_; }

  /// Grows the cluster rooted at `root`, then replaces the root by one fused node. Returns the number of ops
  /// fused, the reduction included.
  size_t fuse(Node *root) {
    cluster_ = nextCluster_++;
    clusterOf_[static_cast<size_t>(root->id())] = cluster_;
    members_.clear();
    outputs_.clear();
    externals_.clear();
    externalCount_ = 0;
    copies_ = 0;
    reduction_ = isPrologueRoot(root);
    rootPosition_ = firstOutput_ = position_[static_cast<size_t>(root->id())];
    placeAtRoot_ = true;
    place_ = root->op().place();
    shape_ = reduction_ ? root->input(0)->type().shape : root->output()->type().shape;
    if (reduction_) {
      // With no prologue (nothing absorbed) the fused reduction reads its input as it is, so that it runs as
      // a generated kernel too.
      markExternal(root->input(0));
      absorbIfFits(root->input(0));
    } else {
      members_.push_back(memberAt(root));
      for (Value *input : root->inputs())
        if (!isImmediate(input)) markExternal(input);
    }
    for (size_t next = 0; next < members_.size(); ++next)
      for (Value *input : members_[next].node->inputs())
        absorbIfFits(input);
    // Producers first: the members as the graph's order lists them (found consumers first, they would
    // otherwise need a walk through them, a cache miss per member on a large graph).
    std::sort(members_.begin(), members_.end(),
              [](const Member &a, const Member &b) { return a.position < b.position; });
    Node *fused = build(root);
    // The fused node takes the root's place in the order, or where its first output was (placeAtRoot_): it
    // reads what the members read, which comes before that, and its readers come after it. Nothing outside
    // the cluster reads the members but through the fused node's outputs: they die with the root, unless
    // copies in a prologue keep some alive (decided once the stage's clusters are built).
    die(memberAt(root));
    for (const Member &member : members_) {
      if (member.node == root) continue;
      bool output = std::find(outputs_.begin(), outputs_.end(), member.node) != outputs_.end();
      if ((copies_ == 0 || output) && !isFill(member.node)) {
        die(member);
      } else {
        copied_.push_back(member);
      }
    }
    uint32_t place = placeAtRoot_ ? rootPosition_ : firstOutput_;
    order_[place] = fused;
    position_.resize(graph_.nodeIdBound(), 0);
    position_[static_cast<size_t>(fused->id())] = place;
    return members_.size() + (reduction_ ? 1 : 0);
  }

  /// A member of a prologue that copies lives on while anything outside the dead reads it. Its readers come
  /// later in the order: deciding the latest first decides every reader before the nodes it reads.
  void settleCopies() {
    std::sort(copied_.begin(), copied_.end(),
              [](const Member &a, const Member &b) { return a.position > b.position; });
    for (const Member &member : copied_) {
      if (order_[member.position] != member.node) continue; // a fill that several clusters took, settled
      const auto &uses = member.node->output()->clients();
      if (std::none_of(uses.begin(), uses.end(), [this](const ir::Use &use) { return !dies(use.node); }))
        die(member);
    }
    copied_.clear();
  }

  /// A prologue may recompute this many ops that others also read (cheaper than a round trip through
  /// memory); elsewhere nothing is computed twice.
  static constexpr size_t kMaxPrologueCopies = 8;

  void absorbIfFits(Value *input) {
    Node *producer = input->owner();
    if (!producer || !(isFill(producer) || (fusible(producer) && !clustered(producer)))) return;
    if (producer->op().place() != place_ || input->type().shape != shape_) return;
    if (members_.size() >= kMaxKernelOps) return;
    // Read outside the cluster: by a graph output or a node that stays (the nodes the pass replaced are
    // listed as readers until it removes them, at the end).
    // A fill counts as a reader that stays (until the stage ends) even inside the cluster: another cluster
    // may take it too, reading its operand as an input.
    bool shared = false, compared = false, materialized = false;
    uint32_t firstReader = kNoPosition; // of the readers that stay, in the order (a graph output: none)
    for (const ir::Use &use : input->clients()) {
      bool stays =
          !use.node || ((clusterOfNode(use.node) != cluster_ || isFill(use.node)) && !dies(use.node));
      shared = shared || stays;
      if (stays) materialized = materialized || !couldFuse(use.node, input);
      if (stays && use.node) firstReader = std::min(firstReader, positionOf(use.node));
      compared = compared || (use.node && ir::isComparison(use.node->op().kind()));
    }
    // A shared value joins the cluster as one of its outputs (multi-output fusion), but for a reduction's
    // prologue only when memory must hold the value anyway; there it is otherwise recomputed (a copy), which
    // costs less than a round trip through memory. Two kernels may compute one value with different last
    // bits (vector math in one, scalar in the other), so a value that is compared is never recomputed: max's
    // gradient, x == max(x), must see its own maximum.
    bool output = shared && !isFill(producer) && (!reduction_ || materialized);
    bool copy = shared && !isFill(producer) && !output;
    if (copy && (copies_ == kMaxPrologueCopies || compared)) return;
    // Absorbing the producer trades its value for its own operands as inputs of the fused node (and, as an
    // output, for an array written).
    size_t added = 0;
    for (Value *operand : producer->inputs())
      added += !isImmediate(operand) && !isMemberValue(operand) && !isExternal(operand);
    if (externalCount_ - 1 + added + outputs_.size() + output > kMaxFusedInputs) return;
    // The fused node must come after what it reads and before what reads its outputs. At the root's place,
    // it does while every output's other readers come after the root; else at its first output's place,
    // while everything it reads comes before that.
    uint32_t first = output ? std::min(firstOutput_, positionOf(producer)) : firstOutput_;
    bool atRoot = placeAtRoot_ && (!output || firstReader > rootPosition_);
    if (!atRoot) {
      for (const Value *external : externals_)
        if (external != input && producedAt(external) >= first) return;
      for (const Value *operand : producer->inputs())
        if (!isImmediate(operand) && !isMemberValue(operand) && producedAt(operand) >= first) return;
    }
    placeAtRoot_ = atRoot;
    firstOutput_ = first;
    if (output) outputs_.push_back(producer);
    copies_ += copy;
    clusterOf_[static_cast<size_t>(producer->id())] = cluster_;
    members_.push_back(memberAt(producer));
    unmarkExternal(input);
    for (Value *operand : producer->inputs())
      if (!isImmediate(operand) && !isMemberValue(operand)) markExternal(operand);
  }

  // Per-value marks of the cluster being grown, by value id, stamped with the cluster's number so that no
  // table is cleared between clusters (most clusters are one or two nodes; clearing would cost the graph).
  // Every value looked up existed before the stage: a cluster's members never read its own stage's fused
  // values.
  bool isExternal(const Value *value) const {
    size_t id = static_cast<size_t>(value->id());
    return valueStamp_[id] == cluster_ && valueSlot_[id] == kExternal;
  }
  void markExternal(const Value *value) {
    if (isExternal(value)) return;
    size_t id = static_cast<size_t>(value->id());
    valueStamp_[id] = cluster_;
    valueSlot_[id] = kExternal;
    ++externalCount_;
    externals_.push_back(value);
  }
  void unmarkExternal(const Value *value) {
    if (!isExternal(value)) return;
    valueStamp_[static_cast<size_t>(value->id())] = -1;
    --externalCount_;
    externals_.erase(std::find(externals_.begin(), externals_.end(), value));
  }

  /// Whether `reader` (null: a graph output) could take `value`'s producer into a kernel of its own: an
  /// elementwise node of its shape or a reduction of it, in this cluster's place, that no cluster has taken.
  bool couldFuse(const Node *reader, const Value *value) const {
    if (!reader || reader->op().place() != place_ || clustered(reader)) return false;
    if (fusible(reader)) return reader->output()->type().shape == value->type().shape;
    return isPrologueRoot(reader) && reader->input(0) == value;
  }

  static constexpr uint32_t kNoPosition = ~uint32_t(0);
  /// Where the order lists a node (a fused node: where this pass put it).
  uint32_t positionOf(const Node *node) const { return position_[static_cast<size_t>(node->id())]; }
  /// Where the order lists a value's producer; 0 for a graph input or constant, which precede every node.
  uint32_t producedAt(const Value *value) const { return value->owner() ? positionOf(value->owner()) : 0; }

  bool isMemberValue(const Value *value) const {
    return value->owner() && clusterOfNode(value->owner()) == cluster_;
  }

  /// The cluster a node is in, or -1 (also for the fused nodes this pass adds).
  int clusterOfNode(const Node *node) const {
    size_t id = static_cast<size_t>(node->id());
    return id < clusterOf_.size() ? clusterOf_[id] : -1;
  }

  struct Member {
    uint32_t position; // in the graph's order
    Node *node;
  };
  Member memberAt(Node *node) const { return {position_[static_cast<size_t>(node->id())], node}; }

  void die(const Member &member) {
    order_[member.position] = nullptr;
    dead_.push_back(member.node);
  }
  /// Whether the pass removes the node reading through a use (false for a graph output). Every node the
  /// order listed is alive: the graph was swept before the pass.
  bool dies(const Node *reader) const {
    if (!reader) return false;
    size_t id = static_cast<size_t>(reader->id());
    if (id >= position_.size()) return false; // a fused node
    const Node *listed = order_[position_[id]];
    return listed != reader;
  }

  Node *build(Node *root) {
    auto body = std::make_shared<ir::ScalarGraph>();
    // Sized up front (the inputs are the values marked external; an instruction per member, and one per
    // immediate, rarely more than one): growing them would allocate a few times per fused node.
    std::vector<Value *> inputs;
    inputs.reserve(externalCount_);
    body->inputDtypes.reserve(inputs.capacity());
    std::vector<ir::ScalarInstr> instrs;
    instrs.reserve(members_.size() + 1);
    // Each value the program reads gets its operand number in valueSlot_, stamped with a number of its own
    // (the external marks of growing are done with). Operands refer to inputs (0..n-1) and instructions
    // (n+k); inputs are numbered as they are met, so instruction operands are renumbered at the end.
    int stamp = -2 - cluster_;
    constexpr uint32_t kInstructionBit = 1u << 31;
    auto numbered = [&](const Value *value) -> std::optional<uint32_t> {
      size_t id = static_cast<size_t>(value->id());
      if (valueStamp_[id] == stamp) return valueSlot_[id];
      return std::nullopt;
    };
    auto number = [&](const Value *value, uint32_t operand) {
      size_t id = static_cast<size_t>(value->id());
      valueStamp_[id] = stamp;
      valueSlot_[id] = operand;
    };
    auto readInput = [&](Value *input) {
      number(input, static_cast<uint32_t>(inputs.size()));
      inputs.push_back(input);
      body->inputDtypes.push_back(input->type().dtype);
      return static_cast<uint32_t>(inputs.size() - 1);
    };
    for (const auto &[position, member] : members_) {
      if (std::optional<double> fill = ir::fillValue(member->op().kind())) {
        // An immediate; its operand is an input all the same (unless the program computes it), for its shape.
        if (!numbered(member->input(0))) readInput(member->input(0));
        instrs.push_back({ir::OpKind::Full, member->output()->type().dtype, {}, *fill});
        number(member->output(), kInstructionBit | static_cast<uint32_t>(instrs.size() - 1));
        continue;
      }
      ir::ScalarInstr instr{member->op().kind(), member->output()->type().dtype, {}, 0};
      for (Value *input : member->inputs()) {
        if (std::optional<uint32_t> operand = numbered(input)) {
          instr.operands.push_back(*operand);
        } else if (isImmediate(input)) {
          instrs.push_back({ir::OpKind::Full, input->type().dtype, {}, input->constant().get(0)});
          number(input, kInstructionBit | static_cast<uint32_t>(instrs.size() - 1));
          instr.operands.push_back(kInstructionBit | static_cast<uint32_t>(instrs.size() - 1));
        } else {
          instr.operands.push_back(readInput(input));
        }
      }
      instrs.push_back(std::move(instr));
      number(member->output(), kInstructionBit | static_cast<uint32_t>(instrs.size() - 1));
    }
    if (members_.empty()) { // a reduction without prologue reads its input as it is
      inputs.push_back(root->input(0));
      body->inputDtypes.push_back(root->input(0)->type().dtype);
    }
    uint32_t numInputs = static_cast<uint32_t>(inputs.size());
    for (ir::ScalarInstr &instr : instrs)
      for (uint32_t &operand : instr.operands)
        if (operand & kInstructionBit) operand = numInputs + (operand & ~kInstructionBit);
    body->body = std::move(instrs);
    for (const Node *output : outputs_)
      body->extraOutputs.push_back(numInputs + (*numbered(output->output()) & ~kInstructionBit));
    ir::OpAttrs attrs = reduction_ ? root->op().attrs() : ir::OpAttrs{};
    if (reduction_) body->reduction = root->op().kind();
    attrs.body = std::move(body);
    Node *fused = graph_.addNode(ir::Op(ir::OpKind::Fused, std::move(attrs), place_), std::move(inputs),
                                 root->loc(), root->pin());
    graph_.substitute(root->output(), fused->output());
    for (size_t k = 0; k < outputs_.size(); ++k)
      graph_.substitute(outputs_[k]->output(), fused->outputs()[k + 1]);
    // Later clusters of the stage may read the new outputs.
    valueStamp_.resize(graph_.valueIdBound(), -1);
    valueSlot_.resize(graph_.valueIdBound(), 0);
    if (placement_)
      if (auto reason = placement_->find(root); reason != placement_->end())
        (*placement_)[fused] = reason->second + " (fused)";
    return fused;
  }

  ir::Graph &graph_;
  PlacementReasons *placement_;
  std::vector<Node *> order_;      // the graph's order, becoming the new one: fused nodes in, the dead null
  std::vector<int> clusterOf_;     // by node id
  std::vector<uint32_t> position_; // by node id: where the graph's order lists the node
  int cluster_ = -1, nextCluster_ = 0;
  int firstCluster_ = 0; // the stage's first cluster
  bool reduction_ = false;
  ir::Place place_ = ir::Place::Host;
  ir::Shape shape_; // of every member's value
  size_t copies_ = 0;
  uint32_t rootPosition_ = 0, firstOutput_ = 0; // the root's place; the first place of an output
  bool placeAtRoot_ = true;                     // whether the fused node can take the root's place
  std::vector<Member> members_;
  std::vector<const Node *> outputs_;    // members whose values are read outside: extra outputs
  std::vector<const Value *> externals_; // the values marked external
  std::vector<Member> copied_;           // the stage's members of prologues that copy, alive or not
  std::vector<Node *> dead_;             // the clusters' nodes, then the copies nothing reads
  static constexpr uint32_t kExternal = ~0u;
  std::vector<int> valueStamp_;     // by value id: whose mark valueSlot_ holds
  std::vector<uint32_t> valueSlot_; // by value id: kExternal while growing, the operand number in build
  size_t externalCount_ = 0;        // values the fused node would read now
};

} // namespace

void fuseElementwise(ir::Graph &graph, PassProfile &profile, PlacementReasons *placement) {
  graph.removeDeadNodes(); // so that the order lists every live node
  ClusterBuilder builder(graph, graph.toposort(), placement);
  // Reductions first, so that an elementwise value they copy into their prologue is left to its other
  // readers alone, and fuses with them.
  auto [reductions, reducedOps] = builder.fuseAll(isPrologueRoot);
  auto [kernels, ops] = builder.fuseAll(fusible);
  builder.finish();
  profile.details["kernels"] = static_cast<double>(kernels + reductions);
  profile.details["fused ops"] = static_cast<double>(ops + reducedOps);
  if (kernels) profile.rewrites["fuse elementwise cluster"] = kernels;
  if (reductions) profile.rewrites["fuse reduction"] = reductions;
}

} // namespace tg::opt
