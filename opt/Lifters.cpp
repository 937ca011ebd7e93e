#include "opt/Lifters.h"

#include "ir/Loop.h"
#include "opt/Pipeline.h"

#include <algorithm>
#include <chrono>

namespace tg::opt {

namespace {

/// Every op with a device implementation runs there as the same op with the same attributes.
std::optional<ir::Op> sameOpOnDevice(const ir::Node &node) {
  return node.op().on(ir::Place::Device);
}

/// Whether every node of `body` can run on a device (nested loops too), none pinned to the host, and its
/// inputs and outputs are arrays: a body that moves keeps its carries, slices and results in device memory,
/// with no transfer between steps (a 0-d carry would be a host value read back at every step).
bool bodyCanMove(const ir::Program &body) {
  auto array = [](const ir::Value *value) { return !value->type().isScalar(); };
  if (!std::ranges::all_of(body.graph.inputs(), array) || !std::ranges::all_of(body.graph.outputs(), array))
    return false;
  for (const ir::Node *node : body.graph.toposort()) {
    ir::OpKind kind = node->op().kind();
    if (!ir::opInfo(kind).hasDevice || node->pin() == ir::Pin::Host) return false;
    if (kind == ir::OpKind::Scan && !bodyCanMove(node->op().attrs().loop->body)) return false;
  }
  return true;
}

/// A scan moves to the device, body and all, when its body can: the device op holds a copy of the body placed
/// there by the placement passes alone, its array inputs and outputs in device memory (the loop-bodies pass
/// optimizes it further).
std::optional<ir::Op> liftLoop(const ir::Node &node) {
  const ir::Loop &loop = *node.op().attrs().loop;
  if (!bodyCanMove(loop.body)) return std::nullopt;
  std::shared_ptr<ir::Loop> lifted = ir::copyLoop(loop);
  OptimizerOptions placement;
  placement.device = placement.residentBody = true;
  for (const PassInfo &pass : passTable())
    if (std::ranges::find(pass.tags, "device") == pass.tags.end()) placement.exclude.push_back(pass.name);
  optimize(lifted->body, placement);
  lifted->unplaced = loop.unplaced ? loop.unplaced : node.op().attrs().loop;
  ir::OpAttrs attrs = node.op().attrs();
  attrs.loop = std::move(lifted);
  return ir::Op(ir::OpKind::Scan, std::move(attrs), ir::Place::Device);
}

} // namespace

Lifter lifterFor(ir::OpKind kind) {
  if (kind == ir::OpKind::ToDevice || kind == ir::OpKind::ToHost) return nullptr;
  if (kind == ir::OpKind::Scan) return liftLoop;
  return ir::opInfo(kind).hasDevice ? sameOpOnDevice : nullptr;
}

LifterStats::Counts &LifterStats::counts(ir::OpKind kind) {
  size_t index = static_cast<size_t>(kind);
  if (index >= byKind_.size()) byKind_.resize(index + 1);
  return byKind_[index];
}

std::optional<ir::Op> LifterStats::call(Lifter lifter, const ir::Node &node) {
  using Clock = std::chrono::steady_clock;
  Counts &kind = counts(node.op().kind());
  auto start = Clock::now();
  std::optional<ir::Op> op = lifter(node);
  kind.seconds += std::chrono::duration<double>(Clock::now() - start).count();
  kind.calls += 1;
  kind.successes += op.has_value();
  return op;
}

void LifterStats::record(PassProfile &profile) const {
  for (size_t index = 0; index < byKind_.size(); ++index) {
    const Counts &kind = byKind_[index];
    if (kind.calls == 0 && kind.created == 0) continue;
    std::string prefix = std::string("lifter ") + ir::opName(static_cast<ir::OpKind>(index)) + " ";
    if (kind.calls) {
      profile.details[prefix + "calls"] += static_cast<double>(kind.calls);
      profile.details[prefix + "seconds"] += kind.seconds;
    }
    if (kind.successes) profile.details[prefix + "successes"] += static_cast<double>(kind.successes);
    if (kind.created) profile.details[prefix + "nodes created"] += static_cast<double>(kind.created);
  }
}

} // namespace tg::opt
