#include "opt/Fusion.h"

#include "ir/Assert.h"
#include "ir/ScalarGraph.h"

#include <unordered_map>
#include <unordered_set>

namespace tg::opt {

namespace {

using ir::Node;
using ir::Value;

bool fusible(const Node *node) {
  return node->op().kind() != ir::OpKind::Fused && ir::isScalarOp(node->op().kind());
}

/// One cluster being turned into a fused node: its members (consumers first, as found) and, once built, the
/// fused node's inputs and program.
class ClusterBuilder {
public:
  ClusterBuilder(ir::Graph &graph, std::vector<int> &clusterOf) : graph_(graph), clusterOf_(clusterOf) {}

  /// Grows the cluster rooted at `root` (numbered `cluster`), then replaces it by one fused node. Returns the
  /// number of ops fused.
  size_t fuse(Node *root, int cluster) {
    members_.assign(1, root);
    clusterOf_[static_cast<size_t>(root->id())] = cluster;
    external_.clear();
    for (Value *input : root->inputs())
      if (!isImmediate(input)) external_.insert(input);
    for (size_t next = 0; next < members_.size(); ++next)
      for (Value *input : members_[next]->inputs())
        if (canAbsorb(input, root, cluster)) {
          Node *producer = input->owner();
          clusterOf_[static_cast<size_t>(producer->id())] = cluster;
          members_.push_back(producer);
          external_.erase(input);
          for (Value *operand : producer->inputs())
            if (!isImmediate(operand) && !isMemberValue(operand, cluster)) external_.insert(operand);
        }
    orderMembers(root, cluster);
    build(root);
    return members_.size();
  }

private:
  bool canAbsorb(Value *input, const Node *root, int cluster) {
    Node *producer = input->owner();
    if (!producer || !fusible(producer) || clusterOfNode(producer) >= 0) return false;
    if (producer->op().place() != root->op().place()) return false;
    if (input->type().shape != root->output()->type().shape) return false;
    for (const ir::Use &use : input->clients())
      if (!use.node || clusterOfNode(use.node) != cluster) return false;
    // Absorbing the producer trades its value for its own operands as inputs of the fused node.
    size_t added = 0;
    for (Value *operand : producer->inputs())
      added += !isImmediate(operand) && !isMemberValue(operand, cluster) && !external_.count(operand);
    return external_.size() - 1 + added <= kMaxFusedInputs;
  }

  /// A 0-d constant, which the program holds as an immediate instead of reading it; immediates are doubles,
  /// so a 64-bit integer beyond 2**53 stays an input, read exactly.
  static bool isImmediate(const Value *value) {
    if (!value->isConstant() || !value->type().isScalar()) return false;
    const ir::TensorData &data = value->constant();
    if (data.dtype != ir::DType::I64) return true;
    int64_t integer = data.data<int64_t>()[0];
    return integer >= -(int64_t(1) << 53) && integer <= (int64_t(1) << 53);
  }

  bool isMemberValue(const Value *value, int cluster) const {
    return value->owner() && clusterOfNode(value->owner()) == cluster;
  }

  /// The cluster a node is in, or -1 (also for the fused nodes this pass adds).
  int clusterOfNode(const Node *node) const {
    size_t id = static_cast<size_t>(node->id());
    return id < clusterOf_.size() ? clusterOf_[id] : -1;
  }

  /// Puts the members in an order where producers come first: depth-first from the root, through members
  /// only (they were found consumers first, and ids do not give the order once rewrites have run).
  void orderMembers(Node *root, int cluster) {
    std::vector<Node *> order;
    std::vector<std::pair<Node *, size_t>> stack{{root, 0}};
    if (visited_.size() < clusterOf_.size()) visited_.resize(clusterOf_.size(), -1);
    visited_[static_cast<size_t>(root->id())] = cluster;
    while (!stack.empty()) {
      auto &[node, next] = stack.back();
      if (next < node->inputs().size()) {
        Node *producer = node->input(next++)->owner();
        if (!producer || clusterOfNode(producer) != cluster) continue;
        size_t id = static_cast<size_t>(producer->id());
        if (visited_[id] == cluster) continue;
        visited_[id] = cluster;
        stack.push_back({producer, 0});
        continue;
      }
      order.push_back(node);
      stack.pop_back();
    }
    TG_ASSERT(order.size() == members_.size()) << "fusion: a cluster is not connected through its members";
    members_ = std::move(order);
  }

  void build(Node *root) {
    auto body = std::make_shared<ir::ScalarGraph>();
    std::vector<Value *> inputs;
    std::unordered_map<const Value *, uint32_t> inputIndex, memberValue, immediate;
    std::vector<ir::ScalarInstr> instrs;
    auto lookup = [](const auto &table, const Value *value) -> const uint32_t * {
      auto found = table.find(value);
      return found == table.end() ? nullptr : &found->second;
    };
    // Operands refer to inputs (0..n-1) and instructions (n+k); inputs are numbered as they are met, so
    // instruction operands are renumbered once the input count is known.
    constexpr uint32_t kInstructionBit = 1u << 31;
    for (Node *member : members_) {
      ir::ScalarInstr instr{member->op().kind(), member->output()->type().dtype, {}, 0};
      for (Value *input : member->inputs()) {
        if (const uint32_t *value = lookup(memberValue, input)) {
          instr.operands.push_back(*value);
        } else if (const uint32_t *constant = lookup(immediate, input)) {
          instr.operands.push_back(*constant);
        } else if (isImmediate(input)) {
          instrs.push_back({ir::OpKind::Full, input->type().dtype, {}, input->constant().get(0)});
          immediate[input] = kInstructionBit | static_cast<uint32_t>(instrs.size() - 1);
          instr.operands.push_back(immediate[input]);
        } else if (const uint32_t *index = lookup(inputIndex, input)) {
          instr.operands.push_back(*index);
        } else {
          inputIndex[input] = static_cast<uint32_t>(inputs.size());
          inputs.push_back(input);
          body->inputDtypes.push_back(input->type().dtype);
          instr.operands.push_back(static_cast<uint32_t>(inputs.size() - 1));
        }
      }
      instrs.push_back(std::move(instr));
      memberValue[member->output()] = kInstructionBit | static_cast<uint32_t>(instrs.size() - 1);
    }
    uint32_t numInputs = static_cast<uint32_t>(inputs.size());
    for (ir::ScalarInstr &instr : instrs)
      for (uint32_t &operand : instr.operands)
        if (operand & kInstructionBit) operand = numInputs + (operand & ~kInstructionBit);
    body->body = std::move(instrs);
    ir::OpAttrs attrs;
    attrs.body = std::move(body);
    Node *fused = graph_.addNode(ir::Op(ir::OpKind::Fused, std::move(attrs), root->op().place()), inputs,
                                 root->loc(), root->pin());
    graph_.substitute(root->output(), fused->output());
  }

  ir::Graph &graph_;
  std::vector<int> &clusterOf_;
  std::vector<Node *> members_;
  std::unordered_set<const Value *> external_; // what the fused node would read now
  std::vector<int> visited_;                   // by node id: the cluster whose member walk reached it
};

} // namespace

void fuseElementwise(ir::Graph &graph, PassProfile &profile) {
  std::vector<Node *> order = graph.toposort();
  std::vector<int> clusterOf(graph.nodeIdBound(), -1);
  ClusterBuilder builder(graph, clusterOf);
  size_t kernels = 0, ops = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node *node = *it;
    if (!fusible(node) || clusterOf[static_cast<size_t>(node->id())] >= 0) continue;
    // A node added by this pass has an id past the table; none is in `order`.
    ops += builder.fuse(node, static_cast<int>(kernels));
    ++kernels;
  }
  profile.details["kernels"] = static_cast<double>(kernels);
  profile.details["fused ops"] = static_cast<double>(ops);
  if (kernels) profile.rewrites["fuse elementwise cluster"] = kernels;
}

} // namespace tg::opt
