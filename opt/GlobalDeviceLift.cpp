#include "opt/GlobalDeviceLift.h"

#include "opt/Lifters.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>

namespace tg::opt {

namespace {

using ir::Node;
using ir::OpKind;
using ir::Place;
using ir::Value;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool onDevice(const Value *value) {
  return value->type().place == Place::Device;
}

class GlobalLift {
public:
  GlobalLift(ir::Graph &graph, RewriteContext &context, PassProfile &profile)
      : graph_(graph), context_(context), profile_(profile), mapping_(graph.valueIdBound(), nullptr),
        retired_(graph.nodeIdBound(), false), toDeviceOf_(graph.valueIdBound(), nullptr),
        toHostOf_(graph.valueIdBound(), nullptr) {}

  void run() {
    auto start = Clock::now();
    std::vector<Node *> order = graph_.toposort();
    profile_.details["toposort seconds"] = secondsSince(start);
    std::vector<Value *> inputs = graph_.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]->type().isScalar()) continue;
      if (std::count(context_.residentInputs.begin(), context_.residentInputs.end(), i)) {
        ir::TensorType type = inputs[i]->type();
        type.place = Place::Device;
        mapping_[inputs[i]->id()] = graph_.replaceInput(inputs[i], type); // a param kept in device memory
      } else {
        mapping_[inputs[i]->id()] = toDevice(inputs[i]);
      }
    }
    for (Node *node : order)
      forward(node);
    const std::vector<Value *> &outputs = graph_.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      bool resident = std::count(context_.residentOutputs.begin(), context_.residentOutputs.end(), i) > 0;
      (resident ? residentOutputValues_ : hostOutputValues_).insert(mapped(outputs[i]));
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it)
      backward(*it);
    finish();
  }

private:
  Value *mapped(Value *value) const {
    size_t id = static_cast<size_t>(value->id());
    return id < mapping_.size() && mapping_[id] ? mapping_[id] : value;
  }

  /// The device copy of a host value, made once.
  Value *toDevice(Value *host) {
    Value *&cached = cachedTransfer(toDeviceOf_, host);
    if (!cached)
      cached = graph_
                   .addNode(ir::Op(OpKind::ToDevice), {host},
                            host->owner() ? host->owner()->loc() : ir::SourceLoc{})
                   ->output();
    return cached;
  }

  /// The host copy of a device value, made once.
  Value *toHost(Value *device) {
    Value *&cached = cachedTransfer(toHostOf_, device);
    if (!cached) {
      // A param kept in device memory is a graph input: it has no node to lend its location.
      ir::SourceLoc loc = device->owner() ? device->owner()->loc() : ir::SourceLoc{};
      cached = graph_.addNode(ir::Op(OpKind::ToHost), {device}, loc)->output();
    }
    return cached;
  }

  Value *&cachedTransfer(std::vector<Value *> &cache, Value *value) {
    size_t id = static_cast<size_t>(value->id());
    if (id >= cache.size()) cache.resize(id + 1, nullptr);
    return cache[id];
  }

  void explain(const Node *node, std::string reason) {
    if (context_.placement) (*context_.placement)[node] = std::move(reason);
  }

  /// Asks the lifter, counting calls, successes and time per op kind.
  std::optional<ir::Op> lift(Lifter lifter, const Node &node) {
    std::string kind = node.op().name();
    auto start = Clock::now();
    std::optional<ir::Op> op = lifter(node);
    profile_.details["lifter " + kind + " seconds"] += secondsSince(start);
    profile_.details["lifter " + kind + " calls"] += 1;
    if (op) profile_.details["lifter " + kind + " successes"] += 1;
    return op;
  }

  Value *moveToDevice(Node *node, const ir::Op &op, const std::vector<Value *> &inputs,
                      const char *direction) {
    Node *moved = graph_.addNode(op, deviceInputs(inputs, [this](Value *v) { return toDevice(v); }),
                                 node->loc(), node->pin());
    profile_.details[std::string("lifter ") + node->op().name() + " nodes created"] += 1;
    profile_.details[direction] += 1;
    return moved->output();
  }

  void forward(Node *node) {
    std::vector<Value *> inputs;
    size_t deviceInput = node->inputs().size();
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      inputs.push_back(mapped(node->input(i)));
      if (onDevice(inputs.back()) && deviceInput == node->inputs().size()) deviceInput = i;
    }
    Lifter lifter = lifterFor(node->op().kind());
    bool wanted = deviceInput < inputs.size() || node->pin() == ir::Pin::Device;
    if (lifter && node->pin() != ir::Pin::Host && wanted) {
      if (std::optional<ir::Op> op = lift(lifter, *node)) {
        Value *moved = moveToDevice(node, *op, inputs, "moved forward");
        retire(node, moved);
        explain(moved->owner(),
                node->pin() == ir::Pin::Device
                    ? "pinned by @device"
                    : "moved forward: input " + std::to_string(deviceInput) + " is on the device");
        return;
      }
    }
    for (Value *&input : inputs)
      if (onDevice(input)) input = toHost(input);
    Node *host = node;
    if (inputs != node->inputs()) {
      host = graph_.addNode(node->op(), inputs, node->loc(), node->pin());
      retire(node, host->output());
    }
    explain(host, node->pin() == ir::Pin::Host ? "stayed: pinned by @host"
                  : !lifter                    ? "stayed: no lifter (no device implementation)"
                                               : "stayed: no input on the device");
  }

  /// A host node whose clients all run on the device moves there too.
  void backward(Node *old) {
    Value *value = mapped(old->output());
    Node *node = value->owner();
    if (!node || onDevice(value) || node->pin() == ir::Pin::Host || hostOutputValues_.count(value)) return;
    Lifter lifter = lifterFor(node->op().kind());
    if (!lifter) return;
    std::vector<ir::Use> clients;
    for (const ir::Use &use : value->clients()) {
      if (!use.node || isRetired(use.node)) continue;
      if (use.node->op().place() != Place::Device && use.node->op().kind() != OpKind::ToDevice) return;
      clients.push_back(use);
    }
    // The new value of a param kept in device memory is read there: a device client.
    if (clients.empty() && !residentOutputValues_.count(value)) return;
    std::optional<ir::Op> op = lift(lifter, *node);
    if (!op) return;
    Value *moved = moveToDevice(node, *op, node->inputs(), "moved backward");
    for (const ir::Use &use : clients) {
      if (use.node->op().kind() == OpKind::ToDevice)
        graph_.substitute(use.node->output(), moved);
      else
        graph_.setInput(use.node, use.index, moved);
    }
    if (node != old) markRetired(node);
    retire(old, moved);
    explain(moved->owner(), "moved backward: all its clients are on the device");
  }

  bool isRetired(const Node *node) const {
    size_t id = static_cast<size_t>(node->id());
    return id < retired_.size() && retired_[id];
  }

  void markRetired(const Node *node) {
    size_t id = static_cast<size_t>(node->id());
    if (id >= retired_.size()) retired_.resize(id + 1, false);
    retired_[id] = true;
  }

  /// `old` is no longer part of the new graph, where `replacement` stands for its output.
  void retire(Node *old, Value *replacement) {
    markRetired(old);
    mapping_[static_cast<size_t>(old->output()->id())] = replacement;
  }

  /// Outputs come back to the host, and the old graph is swapped for the new one with one validation.
  void finish() {
    const std::vector<Value *> &outputs = graph_.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      Value *output = outputs[i], *result = mapped(output);
      bool resident = std::count(context_.residentOutputs.begin(), context_.residentOutputs.end(), i) > 0;
      if (resident && !onDevice(result)) {
        result = toDevice(result); // the new value of a param kept in device memory
      } else if (!resident && onDevice(result)) {
        Node *producer = result->owner();
        bool roundTrip =
            producer && producer->op().kind() == OpKind::ToDevice && producer->input(0) == output;
        result = roundTrip ? output : toHost(result);
      }
      if (result != output) graph_.setOutput(i, result);
    }
    auto start = Clock::now();
    graph_.verifyOrDie(); // the one validation
    profile_.details["validation seconds"] = secondsSince(start);
    ++profile_.validations;
    graph_.removeDeadNodes();
    size_t transfers = 0;
    for (const Node *node : graph_.toposort())
      transfers += node->op().kind() == OpKind::ToDevice || node->op().kind() == OpKind::ToHost;
    profile_.details["transfers"] = static_cast<double>(transfers);
  }

  ir::Graph &graph_;
  RewriteContext &context_;
  PassProfile &profile_;
  std::vector<Value *> mapping_; // by old value id: its value in the new graph (null: itself)
  std::vector<bool> retired_;    // by node id: an old node the new graph no longer uses
  std::vector<Value *> toDeviceOf_, toHostOf_;
  std::unordered_set<const Value *> hostOutputValues_; // outputs returned to the host: host clients
  std::unordered_set<const Value *>
      residentOutputValues_; // new param values kept on the device: device clients
};

} // namespace

void globalDeviceLift(ir::Graph &graph, RewriteContext &context, PassProfile &profile) {
  GlobalLift(graph, context, profile).run();
}

} // namespace tg::opt
