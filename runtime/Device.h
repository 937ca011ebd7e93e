// Device: where the device-placed nodes of a graph run and their values live. The executor moves values with
// upload/download (the graph's to_device/to_host nodes) and hands every device node to run().
//
//   sim    the simulated device: memory of its own, and the device kernels' code compiled for the host, run
//          over the grid a GPU would get (runtime/SimDevice.cpp)
//   cuda   a CUDA GPU through the driver API (runtime/cuda/CudaDevice.h)
//
// Both are the device layer (runtime/DeviceLayer.h) on their own primitives: what each op becomes is
// decided once, so the simulated device runs what a GPU runs.
#pragma once

#include "ir/Graph.h"
#include "runtime/Tensor.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tg::runtime {

/// What a GPU says of itself, for the cost model of placement (opt/CostModel.h): zero where it did not say.
struct GpuAttributes {
  int multiprocessors = 0;
  int computeMajor = 0, computeMinor = 0;
  double clockHz = 0;       // the SMs' peak clock
  double memoryClockHz = 0; // the memory's peak clock
  int memoryBusBits = 0;
};

class Device {
public:
  virtual ~Device() = default;
  /// "sim", or "cuda: NVIDIA H200 (sm_90, 132 SMs, 140 GiB, driver 12.4)".
  virtual std::string describe() const = 0;
  /// A copy of the host tensor `host` in device memory.
  virtual Tensor upload(const Tensor &host) = 0;
  /// A host copy of the device tensor `device` (waits for the work that computes it).
  virtual Tensor download(const Tensor &device) = 0;
  /// Runs a device-placed node on `arguments`: device tensors, and host 0-d tensors (scalars that device
  /// nodes read without a transfer). Returns its first output in device memory, and puts the others (a
  /// fused node's extra outputs) in `extraOutputs`, one place each. Errors are ir::UserErrors without a
  /// location (the executor adds the node's).
  virtual Tensor run(const ir::Node &node, const std::vector<Tensor> &arguments,
                     std::span<Tensor> extraOutputs = {}) = 0;
  /// A new tensor of `dtype` and `shape` in device memory, its elements not set (a scan's stacks).
  virtual Tensor allocate(ir::DType dtype, std::vector<int64_t> shape) = 0;
  /// Copies the device tensor `source` (any strides) into `target`, a C-contiguous device tensor or view of
  /// the same dtype and shape (a scan writing a step's carry into its stack), on the device.
  virtual void copy(const Tensor &source, const Tensor &target) = 0;
  /// Waits until all queued work is done and reports a failure of it (nothing to wait for on sim).
  virtual void synchronize() {}
  /// What the device did besides kernels, for `tgc run -v` (e.g. nodes it ran on the host through staging);
  /// empty when nothing is worth saying.
  virtual std::string report() const { return {}; }
  /// The GPU's attributes; none for the simulated device, which stands for the cost model's default GPU.
  virtual std::optional<GpuAttributes> gpuAttributes() const { return std::nullopt; }
};

/// The simulated device.
std::unique_ptr<Device> makeSimDevice();

} // namespace tg::runtime
