// Executor: runs an ir::Graph node by node in topological order, host nodes on the CPU and device nodes on a
// Device (Device.h). What a run needs is planned once per graph and set of outputs (the step plan): the
// nodes those outputs depend on, each value's slot, and after which node each value dies. At run time a
// value's last reader takes it over (an elementwise kernel may write its result over it), every other value
// is dropped right after its last reader, and the host buffers come from the executor's own pool, so that a
// run after the first allocates no tensor memory. A host fused node's step keeps its last launch: while its
// operands keep their shapes and strides, the next run binds pointers to the same kernel and arguments.
#pragma once

#include "ir/Graph.h"
#include "runtime/Device.h"
#include "runtime/HostAllocator.h"
#include "runtime/Tensor.h"

#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace tg::runtime {

class HostLaunchMemo; // FusedLaunch.h

/// Inputs that do not fit the script: a missing or unknown name, a wrong dtype or shape (Session::step,
/// checkInputs), or a param's new value of another type (Session::setParam).
struct InputError : ir::UserError {
  using UserError::UserError;
};

/// Checks that each tensor fits the declared type of its graph input: the same dtype and rank, the static
/// sizes, and one size for each symbolic dimension across all inputs. Throws InputError naming the input,
/// e.g. "input 'y': dimension 0 is n=4, but n=5 from input 'X'".
void checkInputs(const std::vector<ir::Value *> &inputs, const std::vector<Tensor> &tensors,
                 const std::vector<ir::SourceLoc> &declarations = {});

/// What crossed between host and device memory (the simulated device's transfers, or a real device's).
struct TransferStats {
  size_t toDevice = 0, toHost = 0; // transfers
  size_t bytes = 0;                // in both directions
};

class Executor {
public:
  /// Prepares to run `graph`, which must outlive the executor and not change while it exists, with its device
  /// nodes on `device` (which must outlive it too), or on a simulated device of its own when null.
  explicit Executor(const ir::Graph &graph, Device *device = nullptr);

  /// Evaluates the graph's first `count` outputs (all of them by default), in order, from one tensor per
  /// graph input (in graph.inputs() order; check them with checkInputs first). Only the nodes those outputs
  /// depend on run. The inputs are never written. A UserError from a kernel is rethrown with the failing
  /// node's location. Without `synchronize`, device work may still be queued when it returns (a loop's body,
  /// run step after step: its loop's run waits once at the end).
  std::vector<Tensor> run(const std::vector<Tensor> &inputs, size_t count = SIZE_MAX,
                          bool synchronize = true);

  /// Per graph input, whether evaluating the first `count` outputs reads it (an input it does not read may
  /// be given as an undefined tensor).
  std::vector<bool> readsInputs(size_t count = SIZE_MAX);

  /// The transfers made by every run so far.
  const TransferStats &transfers() const { return transfers_; }
  Device &device() const { return *device_; }

private:
  /// One node of a plan: the slots of its arguments, those it takes over (it is their last reader, and each
  /// appears once), those dropped after it, and its results' slots (its outputs' in order; kNoSlot for an
  /// output nothing in the plan reads).
  struct Step {
    const ir::Node *node;
    std::vector<uint32_t> arguments;
    std::vector<bool> takes;
    std::vector<uint32_t> drops;
    uint32_t result;
    std::vector<uint32_t> extraResults;     // a fused node's extra outputs
    std::shared_ptr<HostLaunchMemo> launch; // a host fused node's last launch (FusedLaunch.h)
    std::shared_ptr<Executor> loopBody;     // a scan's body, planned once for all its steps
  };
  static constexpr uint32_t kNoSlot = ~uint32_t(0);
  /// The steps that compute the first `outputs.size()` graph outputs, in topological order.
  struct Plan {
    std::vector<Step> steps;
    std::vector<uint32_t> outputs;
  };
  const Plan &plan(size_t count);
  /// Runs a step's node: returns its first output and puts the others in `extraOutputs`.
  Tensor runStep(const Step &step, std::vector<Tensor> &arguments, std::span<Tensor> extraOutputs);
  /// Runs a scan node: its body once per step, the stacked results written in place.
  Tensor runLoop(const Step &step, std::vector<Tensor> &arguments, std::span<Tensor> extraOutputs);
  /// Runs a to_device or to_host node: a counted copy between the two memories.
  Tensor transfer(const ir::Node &node, const Tensor &source);

  const ir::Graph &graph_;
  std::unique_ptr<Device> ownDevice_; // the simulated device, when none is given
  Device *device_;
  std::unordered_map<const ir::Value *, uint32_t> slotOf_; // every value's slot; inputs first, then constants
  std::vector<Tensor> slots_;                              // the values of a run; constants stay
  size_t firstComputed_ = 0;                               // the slot of the first node's result
  std::vector<std::unique_ptr<Plan>> plans_;               // by output count, planned when first asked for
  std::unordered_map<const ir::Value *, Tensor> deviceConstants_; // constants' copies in device memory
  HostBufferPool buffers_;
  TransferStats transfers_;
};

} // namespace tg::runtime
