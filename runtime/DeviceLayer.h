// The device layer: what each device op becomes on a device (the device plan, runtime/DevicePlan.h), carried
// out once against the few primitives a device provides (allocate and free, copies host→device, device→host
// and device→device, a launch of a generated kernel on a grid, gemm, synchronize). CudaDevice (runtime/cuda)
// implements the primitives with the driver API and cuBLAS; the simulated device (SimDevice.cpp) with memory
// of its own and the device kernels' code compiled for the host, run block by block over the same grid. So
// the simulated device runs what a GPU runs: the same kernels, launch shapes, gemms and copies, in the same
// order.
//
//   fused node, elementwise op     a generated kernel (an unfused elementwise op is a one-op program)
//   fused or plain reduction       the generated reduction kernel (one block per output)
//   argmax, argmin                 two generated reductions (runtime/ArgReduction.h)
//   concat, stack                  device-to-device copies of the parts, the joined axis moved first
//   matmul                         per batch matrix: gemm (f32, f64) where the device has it, else the
//                                  generated matmul kernel (and for i32, i64, bool)
//   zeros, ones, full,             generated kernels (a program of one immediate; full broadcasts its
//   zeros_like, ones_like          value, converted on the host exactly as the CPU does)
//   eye, arange, rand, randn       the creation kernels (codegen/Kernel.h): each element from its index
//   transpose, broadcast_to,       views of device memory (reshape of a non-contiguous value copies it with
//   slice, reshape                 a generated kernel first)
//   conv, conv_transpose,          column matrices (im2col, col2im: generated window kernels) and one gemm
//   conv_filter_grad               per channel group, the batch's images side by side in the columns; y
//                                  comes out channels first, a view in y's shape (what reads it next, a
//                                  bias or an activation, reorders it in its own pass), and the gradient of
//                                  y is moved channels first by a generated copy where it is read
//   max_pool, max_pool_grad,       a generated window kernel, each output element from its windows
//   max_pool_gather
//   allreduce, allgather,          the device's collectives on device memory (NCCL on CUDA), the gathered
//   broadcast                      axis moved first; staged through host memory where it has none
//   shard                          a view of this rank's block
//   gather, scatter_add,           the index kernels (codegen/Kernel.h): each index array made i64 and
//   scatter_set, set_slice         contiguous by a generated kernel, its offsets added by the offsets kernel
//                                  (an index out of range read back as an error), then the gather or the
//                                  scatter into a device copy of x (atomic adds); set_slice's region offsets
//                                  are computed on the host and uploaded
//
// Ops that Ops.def marks host-only (sort, argsort, cumsum) have no step: placement keeps them on the host.
//
// A kernel that can fail (integer pow with a negative exponent) stores an error code in a flag that is read
// back after its launch.
//
// TGC_DEVICE_TRACE=FILE makes a device write one line per primitive to FILE (see DeviceTrace below), so that
// the simulated device's work can be compared with a CUDA device's line for line.
#pragma once

#include "codegen/Kernel.h"
#include "runtime/Device.h"
#include "runtime/DevicePlan.h"
#include "runtime/WindowGeometry.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tg::runtime {

/// An address in a device's memory.
using DeviceAddress = uint64_t;

/// A launch of the generated kernel of `spec` (codegen/Kernel.h): its PTX entry's parameters, by
/// codegen::FusedParameter, in device memory where they are pointers.
struct FusedKernelLaunch {
  codegen::KernelSpec spec;
  Grid grid;
  codegen::FusedParameters parameters{};
};

/// A launch of the generated matmul kernel of `dtype` (codegen/Kernel.h's matmul section), its parameters the
/// fields of `args`, whose pointers are device addresses.
struct MatmulKernelLaunch {
  ir::DType dtype = ir::DType::F32;
  Grid grid;
  codegen::MatmulArgs args{};
};

/// A launch of the creation kernel of `kind` and `dtype` (codegen/Kernel.h's creation kernels), its
/// parameters the fields of `args`, whose output is a device address.
struct CreationKernelLaunch {
  ir::OpKind kind = ir::OpKind::Eye;
  ir::DType dtype = ir::DType::F32;
  Grid grid;
  codegen::CreationArgs args{};
};

/// A launch of the index kernel of `kind` and `dtype` (codegen/Kernel.h's index kernels), its parameters the
/// fields of `args`, whose pointers are device addresses.
struct IndexKernelLaunch {
  codegen::IndexKernel kind = codegen::IndexKernel::Gather;
  ir::DType dtype = ir::DType::F32;
  Grid grid;
  codegen::IndexArgs args{};
};

/// A launch of the window kernel of `kind` and `dtype` (codegen/Kernel.h's window kernels), its parameters
/// the fields of `args`, whose pointers are device addresses.
struct WindowKernelLaunch {
  codegen::WindowKernel kind = codegen::WindowKernel::Im2col;
  ir::DType dtype = ir::DType::F32;
  Grid grid;
  codegen::WindowArgs args{};
};

/// c (n x m, row-major, leading dimension m) = op(a) (n x k) @ op(b) (k x m), row-major operands with leading
/// dimensions `leadingA`, `leadingB`, transposed where said.
struct Gemm {
  ir::DType dtype = ir::DType::F32;
  int64_t n = 0, m = 0, k = 0;
  DeviceAddress a = 0;
  bool transposeA = false;
  int64_t leadingA = 1;
  DeviceAddress b = 0;
  bool transposeB = false;
  int64_t leadingB = 1;
  DeviceAddress c = 0;
};

/// A device's memory: allocation and release, shared by the device and every buffer it hands out (a tensor
/// may outlive the device that made it).
class DeviceMemory {
public:
  virtual ~DeviceMemory() = default;
  /// A block of at least `bytes` bytes (a zero-size request gets a small block); ir::UserError when the
  /// device is out of memory.
  virtual DeviceAddress allocate(size_t bytes) = 0;
  virtual void release(DeviceAddress block) = 0;
};

/// The trace of TGC_DEVICE_TRACE: one line per primitive, the same words on every device, e.g.
///
///   alloc 4096                        bytes
///   free 4096
///   h2d 4000                          a copy host→device of 4000 bytes (d2h, d2d likewise)
///   launch tgc_fused_0123456789abcdef grid 16x1 block 256x1
///   gemm f32 n 64 m 32 k 16 ta 0 tb 1 lda 16 ldb 16
///   sync
///
/// Lines name no address, so two devices doing the same work write the same file.
class DeviceTrace {
public:
  /// The trace that $TGC_DEVICE_TRACE names (the file truncated), or nullptr when it is unset or empty.
  /// ir::UserError when the file cannot be written.
  static std::shared_ptr<DeviceTrace> fromEnvironment();
  explicit DeviceTrace(std::FILE *file) : file_(file) {}
  ~DeviceTrace();
  DeviceTrace(const DeviceTrace &) = delete;
  DeviceTrace &operator=(const DeviceTrace &) = delete;
  void line(const std::string &text);

private:
  std::FILE *file_;
};

class DeviceLayer : public Device {
public:
  Tensor upload(const Tensor &host) final;
  Tensor download(const Tensor &device) final;
  Tensor run(const ir::Node &node, const std::vector<Tensor> &arguments,
             std::span<Tensor> extraOutputs = {}) final;
  void synchronize() final;
  std::string report() const final;
  Tensor allocate(ir::DType dtype, std::vector<int64_t> shape) final;
  void copy(const Tensor &source, const Tensor &target) final;

protected:
  /// `name` begins the lines of report() ("sim", "cuda"); `memory` outlives the layer in the buffers it hands
  /// out; launch shapes are chosen for `multiprocessors`.
  DeviceLayer(std::string name, std::shared_ptr<DeviceMemory> memory, unsigned multiprocessors);

  // ---- The primitives: all a device implements ----
  /// Copies `bytes` bytes into device memory (queued: the source may be reused when this returns).
  virtual void copyToDevice(DeviceAddress target, const void *source, size_t bytes) = 0;
  /// Copies `bytes` bytes to the host, waiting for the work queued before it.
  virtual void copyToHost(void *target, DeviceAddress source, size_t bytes) = 0;
  virtual void copyOnDevice(DeviceAddress target, DeviceAddress source, size_t bytes) = 0;
  virtual void launch(const FusedKernelLaunch &launch) = 0;
  virtual void launch(const MatmulKernelLaunch &launch) = 0;
  virtual void launch(const CreationKernelLaunch &launch) = 0;
  virtual void launch(const IndexKernelLaunch &launch) = 0;
  virtual void launch(const WindowKernelLaunch &launch) = 0;
  /// Whether gemm() takes `dtype` (f32 and f64 where a BLAS is there).
  virtual bool hasGemm(ir::DType dtype) const = 0;
  virtual void gemm(const Gemm &gemm) = 0;
  /// Waits until all queued work is done and reports a failure of it.
  virtual void waitForDevice() = 0;
  /// What the device adds to report(): its own counters, or empty.
  virtual std::string deviceReport() const { return {}; }

  // Collectives on device memory, between the ranks of a distributed run (runtime/Collectives.h): NCCL on
  // CUDA, the run's communicator on the simulated device's memory. Where a device has none (CUDA without
  // NCCL), the layer stages each collective through host memory instead.
  /// Whether the collectives below run; false with `why` set (for report()) when they cannot.
  virtual bool hasCollectives(std::string &why) {
    why = "this device has no collectives";
    return false;
  }
  /// `count` elements of `dtype` at `data`, combined in place across the ranks by `combine` (sum, prod, max,
  /// min; of bools, max is `or` and min `and`).
  virtual void allreduceOnDevice(DeviceAddress data, size_t count, ir::DType dtype, ir::OpKind combine);
  /// Rank 0's `bytes` bytes at `data` to every rank's `data`.
  virtual void broadcastOnDevice(DeviceAddress data, size_t bytes);
  /// The ranks' blocks joined in rank order at `all`: rank r's `counts[r]` bytes (this rank's at `local`).
  virtual void allgatherOnDevice(DeviceAddress local, DeviceAddress all, const std::vector<size_t> &counts);

private:
  Tensor contiguous(const Tensor &tensor);
  Tensor elementwise(const ir::ScalarGraph &body, const std::vector<Tensor> &inputs,
                     std::vector<int64_t> shape = {}, std::span<Tensor> extraOutputs = {});
  Tensor reduce(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype,
                std::span<Tensor> extraOutputs = {});
  Tensor join(const ir::Op &op, std::vector<Tensor> inputs);
  Tensor argReduce(const ir::Op &op, Tensor x);
  Tensor matmul(const Tensor &left, const Tensor &right, ir::DType dtype);
  void multiply(const Tensor &a, const Tensor &b, DeviceAddress c, ir::DType dtype);
  Tensor createByIndex(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype);
  Tensor index(const ir::Node &node, const std::vector<Tensor> &inputs);
  void issue(const IndexKernelLaunch &index);
  Tensor window(const ir::Node &node, const std::vector<Tensor> &inputs);
  void windowKernel(codegen::WindowKernel kind, const Geometry &g, const Tensor &out, const Tensor &input,
                    const Tensor &second = {});
  Tensor zeros(ir::DType dtype, const std::vector<int64_t> &shape);
  Tensor collective(const ir::Op &op, const Tensor &input);
  struct PackedArgs;
  PackedArgs pack(const codegen::KernelArgs &args, const ir::ScalarGraph &body, bool strided);
  FusedKernelLaunch fusedLaunch(const codegen::KernelSpec &spec, const Grid &grid, int64_t count,
                                const codegen::KernelArgs &args, const PackedArgs &packed,
                                DeviceAddress output);
  void issue(const std::string &name, const Grid &grid, const std::function<void()> &start);
  void issue(const FusedKernelLaunch &fused);
  void toDevice(DeviceAddress target, const void *source, size_t bytes);
  void toHost(void *target, DeviceAddress source, size_t bytes);

  std::string name_;
  std::shared_ptr<DeviceMemory> memory_;
  std::shared_ptr<DeviceTrace> trace_;
  unsigned multiprocessors_;
  size_t launches_ = 0, gemms_ = 0, generatedMatmuls_ = 0;
  size_t collectives_ = 0, stagedCollectives_ = 0;
  std::optional<bool> collectivesOnDevice_; // asked at the first collective
  std::string noCollectives_;               // why not, when not
};

} // namespace tg::runtime
