#include "opt/GlobalDeviceLift.h"

#include "opt/Lifters.h"

#include <algorithm>
#include <chrono>

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
  /// `chosen` (by node id, with `reasons`): a placement decided beforehand; null: the global lift's rule.
  GlobalLift(ir::Graph &graph, RewriteContext &context, PassProfile &profile,
             const std::vector<bool> *chosen = nullptr, const std::vector<std::string> *reasons = nullptr)
      : graph_(graph), context_(context), profile_(profile), chosen_(chosen), chosenReasons_(reasons),
        mapping_(graph.valueIdBound(), nullptr), retired_(graph.nodeIdBound(), false),
        toDeviceOf_(graph.valueIdBound(), nullptr), toHostOf_(graph.valueIdBound(), nullptr),
        residentInput_(graph.inputs().size(), false), residentOutput_(graph.outputs().size(), false) {
    // Flags by index, so that asking about an input or output costs no search of the lists.
    for (size_t i : context.residentInputs)
      residentInput_.at(i) = true;
    for (size_t i : context.residentOutputs)
      residentOutput_.at(i) = true;
  }

  void run() {
    auto start = Clock::now();
    std::vector<Node *> order = graph_.toposort();
    profile_.details["toposort seconds"] = secondsSince(start);
    std::vector<Value *> inputs = graph_.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]->type().isScalar()) continue;
      if (residentInput_[i]) {
        ir::TensorType type = inputs[i]->type();
        type.place = Place::Device;
        mapping_[inputs[i]->id()] = graph_.replaceInput(inputs[i], type); // a param kept in device memory
      } else if (!chosen_) {
        mapping_[inputs[i]->id()] = toDevice(inputs[i]);
      }
    }
    for (Node *node : order)
      forward(node);
    const std::vector<Value *> &outputs = graph_.outputs();
    outputReader_.assign(graph_.valueIdBound(), NoReader);
    for (size_t i = 0; i < outputs.size(); ++i)
      outputReader_[static_cast<size_t>(mapped(outputs[i])->id())] |=
          residentOutput_[i] ? DeviceReader : HostReader;
    if (!chosen_)
      for (auto it = order.rbegin(); it != order.rend(); ++it)
        backward(*it);
    finish();
    if (movedForward_) profile_.details["moved forward"] = static_cast<double>(movedForward_);
    if (movedBackward_) profile_.details["moved backward"] = static_cast<double>(movedBackward_);
    lifters_.record(profile_);
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

  /// Records why `node` runs where it does, when asked: the reason is only built then, since this is on the
  /// path of every node.
  template <typename Reason>
  void explain(const Node *node, Reason reason) {
    if (context_.placement) (*context_.placement)[node] = reason();
  }

  Value *moveToDevice(Node *node, const ir::Op &op, std::span<Value *const> inputs, size_t &moves) {
    Node *moved = graph_.addNode(op, deviceInputs(inputs, [this](Value *v) { return toDevice(v); }),
                                 node->loc(), node->pin());
    moved->output()->setName(node->output()->name());     // the `let` name follows the value to its new node
    for (size_t k = 1; k < node->outputs().size(); ++k) { // a scan's other stacks
      moved->outputs()[k]->setName(node->outputs()[k]->name());
      mapping_[static_cast<size_t>(node->outputs()[k]->id())] = moved->outputs()[k];
    }
    lifters_.created(node->op().kind());
    ++moves;
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
    bool wanted = chosen_ ? (*chosen_)[static_cast<size_t>(node->id())]
                          : deviceInput < inputs.size() || node->pin() == ir::Pin::Device;
    if (lifter && node->pin() != ir::Pin::Host && wanted) {
      if (std::optional<ir::Op> op = lifters_.call(lifter, *node)) {
        Value *moved = moveToDevice(node, *op, inputs, movedForward_);
        retire(node, moved);
        explain(moved->owner(), [&] {
          if (chosenReasons_) return (*chosenReasons_)[static_cast<size_t>(node->id())];
          return node->pin() == ir::Pin::Device
                     ? std::string("pinned by @device")
                     : "moved forward: input " + std::to_string(deviceInput) + " is on the device";
        });
        return;
      }
    }
    for (Value *&input : inputs)
      if (onDevice(input)) input = toHost(input);
    Node *host = node;
    if (!std::ranges::equal(inputs, node->inputs())) {
      host = graph_.addNode(node->op(), inputs, node->loc(), node->pin());
      host->output()->setName(node->output()->name());
      retire(node, host->output());
      for (size_t k = 1; k < node->outputs().size(); ++k) { // a scan's other stacks
        host->outputs()[k]->setName(node->outputs()[k]->name());
        mapping_[static_cast<size_t>(node->outputs()[k]->id())] = host->outputs()[k];
      }
    }
    explain(host, [&]() -> std::string {
      if (chosenReasons_) return (*chosenReasons_)[static_cast<size_t>(node->id())];
      return node->pin() == ir::Pin::Host ? "stayed: pinned by @host"
             : !lifter                    ? "stayed: no lifter (no device implementation)"
                                          : "stayed: no input on the device";
    });
  }

  /// A host node whose clients all run on the device moves there too.
  void backward(Node *old) {
    Value *value = mapped(old->output());
    Node *node = value->owner();
    if (!node || onDevice(value) || node->pin() == ir::Pin::Host || readByOutput(value, HostReader)) return;
    if (node->outputs().size() > 1) return; // a scan of several stacks moves forward only
    Lifter lifter = lifterFor(node->op().kind());
    if (!lifter) return;
    std::vector<ir::Use> clients;
    for (const ir::Use &use : value->clients()) {
      if (!use.node || isRetired(use.node)) continue;
      if (use.node->op().place() != Place::Device && use.node->op().kind() != OpKind::ToDevice) return;
      clients.push_back(use);
    }
    // The new value of a param kept in device memory is read there: a device client.
    if (clients.empty() && !readByOutput(value, DeviceReader)) return;
    std::optional<ir::Op> op = lifters_.call(lifter, *node);
    if (!op) return;
    Value *moved = moveToDevice(node, *op, node->inputs(), movedBackward_);
    for (const ir::Use &use : clients)
      if (use.node->op().kind() == OpKind::ToDevice) graph_.substitute(use.node->output(), moved);
    // Every other reader now reads the device value: the live ones run on the device (reading a 0-d value by
    // value), the rest are nodes the new graph no longer uses, dropped with the dead. One substitution,
    // linear in the readers: a setInput per reader searches the client list each time, which made a 0-d value
    // read by k device nodes cost k^2.
    graph_.substitute(value, moved);
    if (node != old) markRetired(node);
    retire(old, moved);
    explain(moved->owner(), [] { return "moved backward: all its clients are on the device"; });
  }

  bool readByOutput(const Value *value, uint8_t reader) const {
    size_t id = static_cast<size_t>(value->id());
    return id < outputReader_.size() && (outputReader_[id] & reader);
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
      bool resident = residentOutput_[i];
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
    // Every transfer is one of those made here (the old graph had none on the device path), and after the
    // sweep a live one is read: counted from the tables, without another walk of the graph.
    size_t transfers = 0;
    for (const std::vector<Value *> *table : {&toDeviceOf_, &toHostOf_})
      for (const Value *transfer : *table)
        transfers += transfer && !transfer->clients().empty();
    profile_.details["transfers"] = static_cast<double>(transfers);
  }

  ir::Graph &graph_;
  RewriteContext &context_;
  PassProfile &profile_;
  const std::vector<bool> *chosen_;
  const std::vector<std::string> *chosenReasons_;
  std::vector<Value *> mapping_; // by old value id: its value in the new graph (null: itself)
  std::vector<bool> retired_;    // by node id: an old node the new graph no longer uses
  std::vector<Value *> toDeviceOf_, toHostOf_;
  // By value id (values made before the backward pass): how graph outputs read the value. Outputs returned
  // to the host are host clients; new param values kept on the device are device clients.
  enum : uint8_t { NoReader = 0, HostReader = 1, DeviceReader = 2 };
  std::vector<uint8_t> outputReader_;
  std::vector<bool> residentInput_, residentOutput_; // by input and output index: context.resident*
  LifterStats lifters_;
  size_t movedForward_ = 0, movedBackward_ = 0;
};

} // namespace

void globalDeviceLift(ir::Graph &graph, RewriteContext &context, PassProfile &profile) {
  GlobalLift(graph, context, profile).run();
}

void liftToPlacement(ir::Graph &graph, RewriteContext &context, PassProfile &profile,
                     const std::vector<bool> &onDevice, const std::vector<std::string> *reasons) {
  GlobalLift(graph, context, profile, &onDevice, reasons).run();
}

} // namespace tg::opt
