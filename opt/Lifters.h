// Lifters: for each host op kind with a device implementation, how to move a node to the device. One table,
// used by both placement strategies (GlobalDeviceLift.h and LocalDeviceLift.h).
#pragma once

#include "ir/Graph.h"
#include "opt/Rewrite.h"

#include <optional>

namespace tg::opt {

/// Given a host node, the device op that computes the same thing, or nothing when it cannot move.
using Lifter = std::optional<ir::Op> (*)(const ir::Node &node);

/// The lifter of `kind`, or nullptr when the kind has no device implementation (sort, argsort, cumsum) or is
/// a transfer.
Lifter lifterFor(ir::OpKind kind);

/// The inputs a device node reads, given the values its host node read after mapping: device values as they
/// are, 0-d host values as they are (passed to kernels by value), other host values through `toDevice`.
template <typename ToDevice>
std::vector<ir::Value *> deviceInputs(std::span<ir::Value *const> mapped, ToDevice toDevice) {
  std::vector<ir::Value *> inputs;
  for (ir::Value *value : mapped) {
    bool stays = value->type().place == ir::Place::Device || value->type().isScalar();
    inputs.push_back(stays ? value : toDevice(value));
  }
  return inputs;
}

/// What the lifters did in one placement pass, counted by op kind in plain arrays and written to the profile
/// once at the end: asking a lifter is on the path of every node, so it builds no strings and looks up no
/// map.
class LifterStats {
public:
  /// Asks `lifter` about `node`, counting the call, its time and whether it succeeded.
  std::optional<ir::Op> call(Lifter lifter, const ir::Node &node);
  /// Counts one device node created for a node of `kind`.
  void created(ir::OpKind kind) { counts(kind).created += 1; }
  /// Adds "lifter KIND calls", "... seconds", "... successes" and "... nodes created" (the last two when not
  /// zero) to `profile.details`.
  void record(PassProfile &profile) const;

private:
  struct Counts {
    size_t calls = 0, successes = 0, created = 0;
    double seconds = 0;
  };
  Counts &counts(ir::OpKind kind);
  std::vector<Counts> byKind_;
};

} // namespace tg::opt
