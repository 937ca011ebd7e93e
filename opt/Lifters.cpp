#include "opt/Lifters.h"

#include <chrono>

namespace tg::opt {

namespace {

/// Every op with a device implementation runs there as the same op with the same attributes.
std::optional<ir::Op> sameOpOnDevice(const ir::Node &node) {
  return node.op().on(ir::Place::Device);
}

} // namespace

Lifter lifterFor(ir::OpKind kind) {
  if (kind == ir::OpKind::ToDevice || kind == ir::OpKind::ToHost) return nullptr;
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
