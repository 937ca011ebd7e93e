// Executor: runs an ir::Graph node by node in topological order, host nodes on the CPU and device nodes on a
// Device (Device.h), freeing each intermediate as soon as its last client has run.
#pragma once

#include "ir/Graph.h"
#include "runtime/Device.h"
#include "runtime/Tensor.h"

#include <memory>
#include <unordered_map>
#include <vector>

namespace tg::runtime {

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

  /// Evaluates the graph's outputs, in order, from one tensor per graph input (in graph.inputs() order; check
  /// them with checkInputs first). A UserError from a kernel is rethrown with the failing node's location.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs);

  /// The transfers made by every run so far.
  const TransferStats &transfers() const { return transfers_; }
  Device &device() const { return *device_; }

private:
  const Tensor &constant(const ir::Value *value);
  /// Runs a to_device or to_host node: a counted copy between the two memories.
  Tensor transfer(const ir::Node &node, const Tensor &source);

  const ir::Graph &graph_;
  std::unique_ptr<Device> ownDevice_; // the simulated device, when none is given
  Device *device_;
  std::unordered_map<const ir::Value *, int> uses_; // node inputs and graph outputs reading each value
  std::unordered_map<const ir::Value *, Tensor> constants_; // constants, and their copies in device memory
  TransferStats transfers_;
};

} // namespace tg::runtime
