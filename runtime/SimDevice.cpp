// The simulated device (Device.h): the device layer (DeviceLayer.h) on memory of its own and on the device
// kernels' code compiled for the host (codegen's simulated-device kernels: the index math that goes into the
// PTX), run block by block over the grid a GPU would get. gemm is the host's (runtime/Blas.h) on the
// simulated memory, as cuBLAS is a library and not generated code.
#include "codegen/KernelSupply.h"
#include "ir/SourceLoc.h"
#include "runtime/Blas.h"
#include "runtime/Collectives.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/DeviceLayer.h"
#include "runtime/WorkerPool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace tg::runtime {

namespace {

/// The simulated GPU's multiprocessors, which decide launch shapes: an H200's.
constexpr unsigned kSimMultiprocessors = 132;
/// Every block starts on this boundary, as cuMemAlloc's do.
constexpr size_t kAlignment = 256;

/// The simulated device's memory: host memory, under the caching allocator a GPU's memory has.
class SimMemory : public DeviceMemory {
public:
  DeviceAddress allocate(size_t bytes) override { return allocator_.allocate(bytes); }
  void release(DeviceAddress block) override { allocator_.release(block); }

private:
  class HostBlocks : public DeviceAllocator::Backend {
    std::optional<DeviceAddress> allocate(size_t bytes) override {
      size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
      void *block = rounded >= bytes ? std::aligned_alloc(kAlignment, rounded) : nullptr;
      if (!block) return std::nullopt;
      return reinterpret_cast<uintptr_t>(block);
    }
    void free(DeviceAddress block) override { std::free(reinterpret_cast<void *>(block)); }
    std::string freeMemory() const override { return "sim: the host has no more"; }
  };
  DeviceAllocator allocator_{std::make_unique<HostBlocks>()};
};

template <typename T>
T *pointer(DeviceAddress address) {
  return reinterpret_cast<T *>(static_cast<uintptr_t>(address));
}

/// Bytes below which a copy runs on the calling thread alone (a grid's elements: kElementsPerThread).
constexpr size_t kBytesPerThread = size_t(1) << 20;

/// Runs block(0), ..., block(blocks - 1), the blocks of a grid, split between the host's threads when the
/// grid covers at least `elements` worth sharing, as a GPU runs its blocks side by side; returns the first
/// nonzero code of a block, in block order (kKernelOk when none). Blocks write disjoint memory, or atomically
/// (scatter_add), or any one of their stores may stay (scatter_set).
int32_t runGrid(int64_t blocks, int64_t elements, const std::function<int32_t(int64_t)> &block) {
  int64_t parts =
      std::clamp<int64_t>(elements / kElementsPerThread, 1, std::min<int64_t>(blocks, hostThreads()));
  std::vector<int32_t> codes(static_cast<size_t>(blocks), codegen::kKernelOk);
  parallelFor(parts, [&](int64_t part) {
    for (int64_t b = blocks * part / parts; b < blocks * (part + 1) / parts; ++b)
      codes[static_cast<size_t>(b)] = block(b);
  });
  for (int32_t code : codes)
    if (code != codegen::kKernelOk) return code;
  return codegen::kKernelOk;
}

class SimDevice : public DeviceLayer {
public:
  SimDevice() : DeviceLayer("sim", std::make_shared<SimMemory>(), kSimMultiprocessors) {}

  std::string describe() const override { return "sim"; }

private:
  void copyToDevice(DeviceAddress target, const void *source, size_t bytes) override {
    copy(pointer<void>(target), source, bytes);
  }
  void copyToHost(void *target, DeviceAddress source, size_t bytes) override {
    copy(target, pointer<const void>(source), bytes);
  }
  void copyOnDevice(DeviceAddress target, DeviceAddress source, size_t bytes) override {
    copy(pointer<void>(target), pointer<const void>(source), bytes);
  }

  // Collectives on the simulated device's memory, as NCCL works on a GPU's: the run's communicator reads and
  // writes that memory itself (no staging through host buffers).
  bool hasCollectives(std::string &) override { return true; }
  void allreduceOnDevice(DeviceAddress data, size_t count, ir::DType dtype, ir::OpKind combine) override {
    communicator().allreduce(pointer<void>(data), count, dtype, combine);
  }
  void broadcastOnDevice(DeviceAddress data, size_t bytes) override {
    communicator().broadcast(pointer<void>(data), bytes, 0);
  }
  void allgatherOnDevice(DeviceAddress local, DeviceAddress all, const std::vector<size_t> &counts) override {
    communicator().allgather(pointer<const void>(local), pointer<void>(all), counts);
  }

  /// A copy, split between the host's threads when large (as a GPU's copy engines and SMs move memory
  /// faster than one core).
  static void copy(void *target, const void *source, size_t bytes) {
    int64_t parts = std::clamp<int64_t>(static_cast<int64_t>(bytes / kBytesPerThread), 1, hostThreads());
    parallelFor(parts, [&](int64_t part) {
      size_t begin = bytes * static_cast<size_t>(part) / static_cast<size_t>(parts),
             end = bytes * static_cast<size_t>(part + 1) / static_cast<size_t>(parts);
      std::memcpy(static_cast<char *>(target) + begin, static_cast<const char *>(source) + begin,
                  end - begin);
    });
  }

  /// Blocks side by side on the host's threads, each running its threads in turn; a failing block stores
  /// its code in the error flag as the GPU's threads do (the first block's code stays).
  void launch(const FusedKernelLaunch &launch) override {
    codegen::SimDeviceKernel kernel = codegen::kernelSupply().simDevice(launch.spec);
    const codegen::FusedParameters &p = launch.parameters;
    codegen::KernelArgs args{static_cast<int64_t>(p[codegen::kFusedRank]),
                             pointer<const int64_t>(p[codegen::kFusedShape]),
                             pointer<const void *const>(p[codegen::kFusedInputs]),
                             pointer<const int64_t>(p[codegen::kFusedStrides]),
                             pointer<void>(p[codegen::kFusedOutput]),
                             static_cast<int64_t>(p[codegen::kFusedReducedRank])};
    int32_t *flag = pointer<int32_t>(p[codegen::kFusedErrorFlag]);
    auto count = static_cast<int64_t>(p[codegen::kFusedCount]);
    // A reduction's count is its outputs: each block reads at least a warp's worth of elements per output.
    int64_t elements = count * (launch.spec.body->reduction ? int64_t(launch.grid.threadsX) : 1);
    int32_t code = runGrid(launch.grid.blocksX, elements, [&](int64_t block) {
      return kernel(&args, count, block, launch.grid.threadsX, launch.grid.blocksX);
    });
    if (code != codegen::kKernelOk && *flag == codegen::kKernelOk) *flag = code;
  }

  void launch(const MatmulKernelLaunch &launch) override {
    codegen::SimMatmulKernel kernel = codegen::kernelSupply().simMatmul(launch.dtype);
    const codegen::MatmulArgs &args = launch.args;
    int64_t blocksX = launch.grid.blocksX;
    runGrid(blocksX * launch.grid.blocksY, args.n * args.m * std::max<int64_t>(args.k, 1),
            [&](int64_t block) {
              kernel(&args, block % blocksX, block / blocksX);
              return codegen::kKernelOk;
            });
  }

  void launch(const CreationKernelLaunch &launch) override {
    codegen::SimCreationKernel kernel = codegen::kernelSupply().simCreation(launch.kind, launch.dtype);
    runGrid(launch.grid.blocksX, launch.args.count, [&](int64_t block) {
      kernel(&launch.args, block, launch.grid.threadsX, launch.grid.blocksX);
      return codegen::kKernelOk;
    });
  }

  void launch(const IndexKernelLaunch &launch) override {
    codegen::SimIndexKernel kernel = codegen::kernelSupply().simIndex(launch.kind, launch.dtype);
    runGrid(launch.grid.blocksX, launch.args.count, [&](int64_t block) {
      kernel(&launch.args, block, launch.grid.threadsX, launch.grid.blocksX);
      return codegen::kKernelOk;
    });
  }

  void launch(const WindowKernelLaunch &launch) override {
    codegen::SimWindowKernel kernel = codegen::kernelSupply().simWindow(launch.kind, launch.dtype);
    runGrid(launch.grid.blocksX, launch.args.count, [&](int64_t block) {
      kernel(&launch.args, block, launch.grid.threadsX, launch.grid.blocksX);
      return codegen::kKernelOk;
    });
  }

  bool hasGemm(ir::DType dtype) const override { return dtype == ir::DType::F32 || dtype == ir::DType::F64; }

  void gemm(const Gemm &g) override {
    if (g.dtype == ir::DType::F32)
      gemmOf<float>(g);
    else
      gemmOf<double>(g);
  }

  template <typename T>
  static void gemmOf(const Gemm &g) {
    hostGemm(GemmMatrix<T>{pointer<const T>(g.a), g.leadingA, g.transposeA},
             GemmMatrix<T>{pointer<const T>(g.b), g.leadingB, g.transposeB}, pointer<T>(g.c), g.n, g.m, g.k);
  }

  void waitForDevice() override {}
};

} // namespace

std::unique_ptr<Device> makeSimDevice() {
  return std::make_unique<SimDevice>();
}

} // namespace tg::runtime
