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

/// A gather joins a cluster as an indexed load (ir/ScalarGraph.h): its table stays an array the kernel reads
/// where the indices say, its indices are values of the kernel's space.
bool isGather(const Node *node) {
  return node->op().kind() == ir::OpKind::Gather;
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
        position_(graph.nodeIdBound(), 0), firstNewNode_(graph.nodeIdBound()) {
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
    // The index alignments go just before the fused nodes that read them.
    std::stable_sort(aligned_.begin(), aligned_.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<Node *> order;
    order.reserve(order_.size() + aligned_.size());
    auto next = aligned_.begin();
    for (uint32_t place = 0; place < order_.size(); ++place) {
      for (; next != aligned_.end() && next->first == place; ++next)
        order.push_back(next->second);
      if (order_[place]) order.push_back(order_[place]);
    }
    graph_.assumeToposort(std::move(order), dead_);
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
    tables_.clear();
    extraSlots_ = 0;
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
    for (size_t next = 0; next < members_.size(); ++next) {
      const Node *member = members_[next].node;
      for (size_t i = isGather(member) ? 1 : 0; i < member->inputs().size(); ++i) // a table stays an array
        absorbIfFits(member->input(i));
    }
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
    for (Node *alignment : alignments_)
      aligned_.emplace_back(place, alignment);
    alignments_.clear();
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
    bool gather = producer && isGather(producer) && !clustered(producer);
    if (!producer || !(isFill(producer) || gather || (fusible(producer) && !clustered(producer)))) return;
    if (producer->op().place() != place_ || input->type().shape != shape_) return;
    if (members_.size() >= kMaxKernelOps) return;
    // A table is an array: a member's value cannot be one.
    if (gather && isMemberValue(producer->input(0))) return;
    // Read outside the cluster: by a graph output or a node that stays (the nodes the pass replaced are
    // listed as readers until it removes them, at the end).
    // A fill counts as a reader that stays (until the stage ends) even inside the cluster: another cluster
    // may take it too, reading its operand as an input.
    bool shared = false, compared = false, materialized = false;
    uint32_t firstReader = kNoPosition; // of the readers that stay, in the order (a graph output: none)
    for (const ir::Use &use : input->clients()) {
      if (use.node && use.index == 0 && isGather(use.node) && clusterOfNode(use.node) == cluster_) return;
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
    if (gather && shared) return; // read outside too: it stays a gather of its own
    bool output = shared && !isFill(producer) && (!reduction_ || materialized);
    bool copy = shared && !isFill(producer) && !output;
    if (copy && (copies_ == kMaxPrologueCopies || compared)) return;
    // Absorbing the producer trades its value for its own operands as inputs of the fused node (and, as an
    // output, for an array written).
    // A gather's table is an input of its own; indices aligned to the space (alignedIndices) may be too.
    size_t added = 0, extra = gather ? 1 + (alignedIndices(producer) ? producer->inputs().size() - 1 : 0) : 0;
    for (size_t i = gather ? 1 : 0; i < producer->inputs().size(); ++i) {
      Value *operand = producer->input(i);
      added += !isImmediate(operand) && !isMemberValue(operand) && !isExternal(operand);
    }
    if (externalCount_ + extraSlots_ - 1 + added + extra + outputs_.size() + output > kMaxFusedInputs) return;
    // The fused node must come after what it reads and before what reads its outputs. At the root's place,
    // it does while every output's other readers come after the root; else at its first output's place,
    // while everything it reads comes before that.
    uint32_t first = output ? std::min(firstOutput_, positionOf(producer)) : firstOutput_;
    bool atRoot = placeAtRoot_ && (!output || firstReader > rootPosition_);
    if (!atRoot) {
      for (const Value *external : externals_)
        if (external != input && producedAt(external) >= first) return;
      for (const Value *table : tables_)
        if (producedAt(table) >= first) return;
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
    extraSlots_ += extra;
    if (gather) tables_.push_back(producer->input(0));
    for (size_t i = gather ? 1 : 0; i < producer->inputs().size(); ++i) {
      Value *operand = producer->input(i);
      if (!isImmediate(operand) && !isMemberValue(operand)) markExternal(operand);
    }
  }

  /// Whether a gather's indices need axes after theirs to lie where the gather's result has them in the
  /// space (NumPy's x[:, idx] of a matrix: the index's axis, then the table's last): a gather of integer
  /// arrays with table axes after the gathered ones. Along an axis, the index already has the table's rank.
  static bool alignedIndices(const Node *gather) {
    const ir::OpAttrs &attrs = gather->op().attrs();
    size_t indices = gather->inputs().size() - 1;
    return !attrs.keepdims &&
           static_cast<size_t>(attrs.axes.at(0)) + indices < gather->input(0)->type().rank();
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
    if (id >= firstNewNode_) return false; // a fused node, or an index alignment
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
    std::vector<ir::SourceLoc> locs; // each instruction's: its member's; an immediate's unknown
    locs.reserve(instrs.capacity());
    auto located = [&](const Node *member) {
      locs.resize(instrs.size());
      locs.back() = member->loc();
    };
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
    // An input that only one operand reads (a gather's table, an aligned index): not numbered.
    auto readSlot = [&](Value *input) {
      inputs.push_back(input);
      body->inputDtypes.push_back(input->type().dtype);
      return static_cast<uint32_t>(inputs.size() - 1);
    };
    auto readInput = [&](Value *input) {
      number(input, static_cast<uint32_t>(inputs.size()));
      return readSlot(input);
    };
    // The operand that reads `input`: a value the program has, an immediate, or a new input.
    auto operandOf = [&](Value *input) {
      if (std::optional<uint32_t> operand = numbered(input)) return *operand;
      if (!isImmediate(input)) return readInput(input);
      instrs.push_back({ir::OpKind::Full, input->type().dtype, {}, input->constant().get(0)});
      number(input, kInstructionBit | static_cast<uint32_t>(instrs.size() - 1));
      return kInstructionBit | static_cast<uint32_t>(instrs.size() - 1);
    };
    for (const auto &[position, member] : members_) {
      if (isGather(member)) {
        instrs.push_back(gatherInstr(member, operandOf, readSlot));
        located(member);
        number(member->output(), kInstructionBit | static_cast<uint32_t>(instrs.size() - 1));
        continue;
      }
      if (std::optional<double> fill = ir::fillValue(member->op().kind())) {
        // An immediate; its operand is an input all the same (unless the program computes it), for its shape.
        if (!numbered(member->input(0))) readInput(member->input(0));
        instrs.push_back({ir::OpKind::Full, member->output()->type().dtype, {}, *fill});
        located(member);
        number(member->output(), kInstructionBit | static_cast<uint32_t>(instrs.size() - 1));
        continue;
      }
      ir::ScalarInstr instr{member->op().kind(), member->output()->type().dtype, {}, 0};
      for (Value *input : member->inputs())
        instr.operands.push_back(operandOf(input));
      instrs.push_back(std::move(instr));
      located(member);
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
    locs.resize(instrs.size());
    body->body = std::move(instrs);
    body->locs = std::move(locs);
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

  /// A gather member's instruction: its table an input of its own, its indices operands of the program
  /// (aligned to the space first where alignedIndices says).
  template <typename OperandOf, typename ReadSlot>
  ir::ScalarInstr gatherInstr(Node *gather, OperandOf &operandOf, ReadSlot &readSlot) {
    Value *table = gather->input(0);
    size_t axis = static_cast<size_t>(gather->op().attrs().axes.at(0)), indices = gather->inputs().size() - 1;
    ir::ScalarInstr instr{ir::OpKind::Gather, gather->output()->type().dtype, {}, static_cast<double>(axis)};
    instr.indexRank =
        static_cast<uint32_t>(gather->output()->type().rank() - (table->type().rank() - indices));
    instr.operands.push_back(readSlot(table));
    bool align = alignedIndices(gather);
    for (size_t i = 1; i <= indices; ++i) {
      Value *index = gather->input(i);
      if (!align || isImmediate(index)) {
        instr.operands.push_back(operandOf(index));
        continue;
      }
      // The table's axes after the gathered ones follow the index's in the space: size-1 axes in their place.
      ir::OpAttrs attrs;
      size_t rank = index->type().rank(), after = table->type().rank() - axis - indices;
      for (size_t added = 0; added < after; ++added)
        attrs.axes.push_back(static_cast<int64_t>(rank + added));
      Node *alignment = graph_.addNode(ir::Op(ir::OpKind::ExpandDims, std::move(attrs), place_), {index},
                                       gather->loc(), gather->pin());
      alignments_.push_back(alignment);
      instr.operands.push_back(readSlot(alignment->output()));
    }
    return instr;
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
  size_t firstNewNode_; // node ids from here on are the pass's: fused nodes and index alignments
  std::vector<Member> members_;
  std::vector<const Value *> tables_; // the gathers' tables: inputs of their own, like externals
  size_t extraSlots_ = 0;          // inputs the gathers read besides the externals: tables, aligned indices
  std::vector<Node *> alignments_; // the index alignments of the cluster being built
  std::vector<std::pair<uint32_t, Node *>> aligned_; // every alignment, at the place of its fused node
  std::vector<const Node *> outputs_;                // members whose values are read outside: extra outputs
  std::vector<const Value *> externals_;             // the values marked external
  std::vector<Member> copied_; // the stage's members of prologues that copy, alive or not
  std::vector<Node *> dead_;   // the clusters' nodes, then the copies nothing reads
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
