#include "opt/LocalDeviceLift.h"

#include "ir/Assert.h"
#include "opt/CutTransfers.h"
#include "opt/Lifters.h"

#include <chrono>
#include <deque>

namespace tg::opt {

namespace {

using ir::Node;
using ir::OpKind;
using ir::Place;
using ir::Value;
using Clock = std::chrono::steady_clock;

/// A node whose output nobody reads any more: replaced by a move, or a cut transfer. (Only a to_host can be
/// left with nothing but dead readers, and no host node's value is read by a to_host, so for the values this
/// pass asks about, this is the whole test.)
bool isDead(const Node *node) {
  return node->output()->clients().empty();
}

bool isTransfer(const Node *node) {
  return node->op().kind() == OpKind::ToDevice || node->op().kind() == OpKind::ToHost;
}

class LocalLift {
public:
  LocalLift(ir::Graph &graph, RewriteContext &context, PassProfile &profile)
      : graph_(graph), context_(context), profile_(profile) {
    // Only the cut that lets the next node see a device value: `to_host(to_device(x)) -> x` would undo the
    // input pass. cut-transfers removes those round trips afterwards.
    for (RewriteRule &rule : cutTransferRules())
      if (rule.kinds == std::vector<OpKind>{OpKind::ToDevice}) cutRule_ = std::move(rule);
    TG_ASSERT(cutRule_.apply) << "cut-transfers has no rule for to_device";
  }

  void run() {
    for (size_t i : context_.residentOutputs)
      wrapResidentOutput(i);
    std::vector<bool> resident(graph_.inputs().size(), false);
    for (size_t i : context_.residentInputs)
      resident.at(i) = true;
    std::vector<Value *> inputs = graph_.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]->type().isScalar()) continue;
      if (resident[i])
        wrapResidentInput(inputs[i]);
      else
        wrap(inputs[i]);
    }
    for (Node *node : graph_.toposort())
      push(node);
    while (!queue_.empty()) {
      Node *node = pop();
      if (isDead(node)) continue;
      OpKind kind = node->op().kind();
      if (kind == OpKind::ToDevice) {
        cut(node);
        continue;
      }
      Lifter lifter = lifterFor(kind);
      if (lifter && node->op().place() == Place::Host) moveIfWanted(node, lifter);
    }
    graph_.removeDeadNodes();
    finish();
  }

private:
  void push(Node *node) {
    size_t id = static_cast<size_t>(node->id());
    if (id >= queued_.size()) queued_.resize(id + 1, false);
    if (queued_[id]) return;
    queued_[id] = true;
    queue_.push_back(node);
  }

  Node *pop() {
    Node *node = queue_.front();
    queue_.pop_front();
    queued_[static_cast<size_t>(node->id())] = false;
    return node;
  }

  /// The full validation after each change: what made the node-by-node lift slow.
  void validate() {
    auto start = Clock::now();
    graph_.verifyOrDie();
    validationSeconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    ++profile_.validations;
  }

  /// graph.replace: substitutes, then validates the whole graph.
  void replace(Value *old, Value *replacement) {
    auto start = Clock::now();
    graph_.replace(old, replacement);
    validationSeconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    ++profile_.validations;
  }

  Value *transfer(OpKind kind, Value *value, const ir::SourceLoc &loc) {
    return graph_.addNode(ir::Op(kind), {value}, loc)->output();
  }

  /// The input pass: the nodes reading `input` read `to_host(to_device(input))` instead, so that the first
  /// move sees a value that comes from to_host. A graph output stays the input itself: it needs no transfer.
  void wrap(Value *input) {
    std::vector<ir::Use> uses;
    for (const ir::Use &use : input->clients())
      if (use.node) uses.push_back(use);
    if (uses.empty()) return;
    Value *host = transfer(OpKind::ToHost, transfer(OpKind::ToDevice, input, {}), {});
    for (const ir::Use &use : uses)
      graph_.setInput(use.node, use.index, host);
    validate();
  }

  /// A param kept in device memory becomes a device input, which every client reads through to_host (graph
  /// outputs too: they return to the host).
  void wrapResidentInput(Value *input) {
    ir::Clients uses = input->clients();
    ir::TensorType type = input->type();
    type.place = Place::Device;
    Value *host = transfer(OpKind::ToHost, graph_.replaceInput(input, type), {});
    for (const ir::Use &use : uses) {
      if (use.node)
        graph_.setInput(use.node, use.index, host);
      else
        graph_.setOutput(use.index, host);
    }
    validate();
  }

  /// The new value of a param kept in device memory is returned there: the output reads
  /// `to_device(value)`, a device client of the value like any other (cut once the value moves).
  void wrapResidentOutput(size_t index) {
    Value *value = graph_.outputs().at(index);
    if (value->type().place == Place::Device) return;
    graph_.setOutput(index, transfer(OpKind::ToDevice, value, {}));
    validate();
  }

  /// `to_device(to_host(x)) -> x`.
  void cut(Node *node) {
    context_.current = node;
    Value *replacement = cutRule_.apply(context_, node);
    context_.current = nullptr;
    if (!replacement) return;
    ++profile_.rewrites[cutRule_.name];
    replace(node->output(), replacement);
  }

  /// Whether `value` has live clients and every one runs on the device: a to_device, or (a 0-d value is read
  /// by value) a device node. A graph output is a host client. `allTransfers` says whether they were all
  /// to_device.
  static bool clientsOnDevice(const Value *value, bool &allTransfers) {
    bool any = false;
    allTransfers = true;
    for (const ir::Use &use : value->clients()) {
      if (!use.node) return false;
      if (isDead(use.node)) continue;
      bool toDevice = use.node->op().kind() == OpKind::ToDevice;
      if (!toDevice && use.node->op().place() != Place::Device) return false;
      allTransfers &= toDevice;
      any = true;
    }
    return any;
  }

  /// Theano's op_lifter: moves `node` when an input comes from to_host, when all its clients are on the
  /// device, or when it is pinned @device; its output becomes `to_host(moved)`.
  void moveIfWanted(Node *node, Lifter lifter) {
    if (node->pin() == ir::Pin::Host) return;
    if (node->outputs().size() > 1) return; // a scan of several stacks stays (the global lift moves it)
    size_t fromToHost = 0;
    while (fromToHost < node->inputs().size() &&
           !RewriteContext::producer(node->input(fromToHost), OpKind::ToHost))
      ++fromToHost;
    bool pinned = node->pin() == ir::Pin::Device, byInput = fromToHost < node->inputs().size();
    bool allTransfers = false;
    bool byClients = !pinned && !byInput && clientsOnDevice(node->output(), allTransfers);
    if (!pinned && !byInput && !byClients) return;
    std::optional<ir::Op> op = lifters_.call(lifter, *node);
    if (!op) return;

    std::vector<Value *> inputs;
    for (Value *input : node->inputs()) {
      Node *toHost = RewriteContext::producer(input, OpKind::ToHost);
      inputs.push_back(toHost ? toHost->input(0) : input);
    }
    auto toDevice = [&](Value *value) { return transfer(OpKind::ToDevice, value, node->loc()); };
    Value *moved = graph_.addNode(*op, deviceInputs(inputs, toDevice), node->loc(), node->pin())->output();
    lifters_.created(node->op().kind());

    Value *old = node->output();
    ir::Clients clients = old->clients();
    // A device node reading the old 0-d value by value reads the device value: to_host feeding a device
    // node would be a round trip that no cut rule sees.
    for (const ir::Use &use : clients)
      if (use.node && use.node->op().place() == Place::Device) graph_.setInput(use.node, use.index, moved);
    if (!old->clients().empty())
      replace(old, transfer(OpKind::ToHost, moved, node->loc()));
    else
      validate();

    for (const ir::Use &use : clients)
      if (use.node) push(use.node);
    for (Value *input : node->inputs())
      if (input->owner()) push(input->owner());
    ++(pinned ? movedPinned_ : byInput ? movedByInput_ : movedByClients_);
    if (context_.placement)
      (*context_.placement)[moved->owner()] =
          pinned    ? "pinned by @device"
          : byInput ? "moved: input " + std::to_string(fromToHost) + " comes from to_host"
                    : std::string("moved: all its clients are ") +
                          (allTransfers ? "to_device" : "to_device or read it on the device");
  }

  void finish() {
    size_t transfers = 0;
    for (const Node *node : graph_.toposort()) {
      transfers += isTransfer(node);
      if (!context_.placement || isTransfer(node) || node->op().place() == Place::Device) continue;
      (*context_.placement)[node] = node->pin() == ir::Pin::Host ? "stayed: pinned by @host"
                                    : !lifterFor(node->op().kind())
                                        ? "stayed: no lifter (no device implementation)"
                                        : "stayed: no input comes from to_host and not all its clients "
                                          "are to_device";
    }
    std::map<std::string, double> &details = profile_.details;
    details["moved"] = static_cast<double>(movedByInput_ + movedByClients_ + movedPinned_);
    details["moved: an input from to_host"] = static_cast<double>(movedByInput_);
    details["moved: all clients on the device"] = static_cast<double>(movedByClients_);
    details["moved: pinned by @device"] = static_cast<double>(movedPinned_);
    details["transfers"] = static_cast<double>(transfers);
    details["validation seconds"] = validationSeconds_;
    lifters_.record(profile_);
  }

  ir::Graph &graph_;
  RewriteContext &context_;
  PassProfile &profile_;
  RewriteRule cutRule_{};
  std::deque<Node *> queue_;
  std::vector<bool> queued_; // by node id
  LifterStats lifters_;
  size_t movedByInput_ = 0, movedByClients_ = 0, movedPinned_ = 0;
  double validationSeconds_ = 0;
};

} // namespace

void localDeviceLift(ir::Graph &graph, RewriteContext &context, PassProfile &profile) {
  LocalLift(graph, context, profile).run();
}

} // namespace tg::opt
