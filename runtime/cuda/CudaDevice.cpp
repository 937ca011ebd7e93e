#include "runtime/cuda/CudaDevice.h"

#include "codegen/KernelSupply.h"
#include "ir/SourceLoc.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/DeviceLayer.h"
#include "runtime/cuda/Cublas.h"
#include "runtime/cuda/Driver.h"
#include "runtime/cuda/Nccl.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>

namespace tg::runtime::cuda {

namespace {

/// Transfers of at least this size go through pinned staging buffers of this size, two at a time, so that
/// copying one chunk on the host overlaps the DMA of the other.
constexpr size_t kStagingBytes = size_t(4) << 20;

/// cuMemAlloc and cuMemFree under the caching allocator.
class CudaMemory : public DeviceAllocator::Backend {
public:
  explicit CudaMemory(const Driver &driver) : driver_(driver) {}
  std::optional<DeviceAddress> allocate(size_t bytes) override {
    CUdeviceptr block = 0;
    CUresult result = driver_.api().cuMemAlloc(&block, bytes);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) return std::nullopt;
    driver_.check(result, "cuMemAlloc");
    return block;
  }
  void free(DeviceAddress block) override {
    driver_.api().cuMemFree(block); // when out of memory or at exit: a failure has no one to tell
  }
  std::string freeMemory() const override {
    size_t free = 0, total = 0;
    driver_.api().cuMemGetInfo(&free, &total);
    return mebibytes(free) + " free of " + mebibytes(total);
  }

private:
  const Driver &driver_;
};

/// The GPU opened: the driver, the primary context, the one stream for all work and the caching allocator.
/// The device's buffers keep it alive (DeviceMemory).
struct Context : DeviceMemory {
  std::unique_ptr<Driver> driver;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::unique_ptr<DeviceAllocator> allocator;
  std::string name;
  int major = 0, minor = 0, multiprocessors = 1;
  size_t memory = 0;
  GpuAttributes attributes;

  ~Context() override {
    if (!driver) return;
    if (stream) driver->api().cuStreamSynchronize(stream);
    allocator.reset();
    if (stream) driver->api().cuStreamDestroy(stream);
    if (context) driver->api().cuDevicePrimaryCtxRelease(device);
  }
  DeviceAddress allocate(size_t bytes) override { return allocator->allocate(bytes); }
  void release(DeviceAddress block) override { allocator->release(block); }
};

std::shared_ptr<Context> openContext(int ordinal) {
  auto context = std::make_shared<Context>();
  context->driver = Driver::open();
  const Driver &driver = *context->driver;
  int count = 0;
  TG_CUDA_CHECK(driver, cuDeviceGetCount, &count);
  if (ordinal >= count)
    throw ir::UserError("no CUDA GPU " + std::to_string(ordinal) + ": the driver sees " +
                        std::to_string(count));
  TG_CUDA_CHECK(driver, cuDeviceGet, &context->device, ordinal);
  CUdevice device = context->device;
  char name[256] = {};
  TG_CUDA_CHECK(driver, cuDeviceGetName, name, sizeof name - 1, device);
  context->name = name;
  auto attribute = [&](int which) {
    int value = 0;
    TG_CUDA_CHECK(driver, cuDeviceGetAttribute, &value, which, device);
    return value;
  };
  context->major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  context->minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  context->multiprocessors = std::max(1, attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  context->attributes = {context->multiprocessors,
                         context->major,
                         context->minor,
                         attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE) * 1e3,
                         attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) * 1e3,
                         attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)};
  TG_CUDA_CHECK(driver, cuDeviceTotalMem, &context->memory, device);
  TG_CUDA_CHECK(driver, cuDevicePrimaryCtxRetain, &context->context, device);
  TG_CUDA_CHECK(driver, cuCtxSetCurrent, context->context);
  TG_CUDA_CHECK(driver, cuStreamCreate, &context->stream, CU_STREAM_NON_BLOCKING);
  context->allocator = std::make_unique<DeviceAllocator>(std::make_unique<CudaMemory>(driver));
  return context;
}

class CudaDevice : public DeviceLayer {
public:
  explicit CudaDevice(std::shared_ptr<Context> context)
      : DeviceLayer("cuda", context, static_cast<unsigned>(context->multiprocessors)),
        context_(std::move(context)) {
    // PTX for this GPU's architecture; LLVM 19 knows up to sm_90, whose PTX newer GPUs compile too.
    int capability = std::min(context_->major * 10 + context_->minor, 90);
    arch_ = "sm_" + std::to_string(capability);
    cublas_ = Cublas::open(context_->stream, cublasMissing_);
  }

  ~CudaDevice() override {
    const Driver &driver = *context_->driver;
    for (Staging &staging : staging_) {
      driver.api().cuMemFreeHost(staging.buffer);
      driver.api().cuEventDestroy(staging.event);
    }
    cublas_.reset();
    nccl_.reset();
    for (CUmodule module : modules_)
      driver.api().cuModuleUnload(module);
  }

  std::optional<GpuAttributes> gpuAttributes() const override { return context_->attributes; }

  std::string describe() const override {
    std::ostringstream text;
    text << "cuda: " << context_->name << " (sm_" << context_->major << context_->minor << ", "
         << context_->multiprocessors << " SMs, " << (context_->memory >> 30) << " GiB, driver "
         << context_->driver->version() << " from " << context_->driver->library() << ")";
    return text.str();
  }

private:
  const Driver &driver() const { return *context_->driver; }

  std::string deviceReport() const override {
    std::ostringstream text;
    DeviceAllocator::Stats memory = context_->allocator->stats();
    text << modules_.size() << " modules loaded, "
         << (cublas_ ? "cuBLAS" : "no cuBLAS (" + cublasMissing_ + ")")
         << "; device memory: " << memory.deviceAllocations << " cuMemAlloc, " << memory.reused
         << " reused, peak " << (memory.peakBytesInUse >> 10) << " KiB";
    if (!modules_.empty()) {
      double kernels = static_cast<double>(modules_.size());
      char line[200];
      std::snprintf(
          line, sizeof line,
          "\ncuda: per kernel, %.2f ms to make its PTX (compiled, or read from the kernel cache) and %.2f "
          "ms to load it",
          1e3 * ptxSeconds_ / kernels, 1e3 * loadSeconds_ / kernels);
      text << line;
    }
    return text.str();
  }

  /// The kernel `name`, loaded once from the PTX that `ptx` makes.
  CUfunction function(const std::string &name, const std::function<std::string()> &ptx) {
    if (auto found = functions_.find(name); found != functions_.end()) return found->second;
    auto start = std::chrono::steady_clock::now();
    std::string text = ptx();
    auto generated = std::chrono::steady_clock::now();
    char errorLog[8192] = {}, infoLog[8192] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {errorLog, reinterpret_cast<void *>(sizeof errorLog - 1), infoLog,
                      reinterpret_cast<void *>(sizeof infoLog - 1)};
    CUmodule module = nullptr;
    CUresult loaded = driver().api().cuModuleLoadDataEx(&module, text.c_str(), 4, options, values);
    if (loaded != CUDA_SUCCESS)
      throw ir::UserError("cuModuleLoadDataEx failed for kernel " + name + " (" + arch_ + "): " +
                          driver().describe(loaded) + (errorLog[0] ? ":\n" + std::string(errorLog) : ""));
    modules_.push_back(module);
    CUfunction function = nullptr;
    TG_CUDA_CHECK(driver(), cuModuleGetFunction, &function, module, name.c_str());
    functions_[name] = function;
    ptxSeconds_ += std::chrono::duration<double>(generated - start).count();
    loadSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - generated).count();
    return function;
  }

  /// Launches `function` with its parameters as one buffer of `bytes` bytes laid out as its PTX entry
  /// declares them: every parameter of tgc's kernels is 8 bytes, so an argument struct (or array) of 8-byte
  /// fields in the entry's order is that buffer.
  void launchOnGrid(CUfunction function, const Grid &grid, const void *parameters, size_t bytes) {
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void *>(parameters),
                     CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes, CU_LAUNCH_PARAM_END};
    TG_CUDA_CHECK(driver(), cuLaunchKernel, function, grid.blocksX, grid.blocksY, 1, grid.threadsX,
                  grid.threadsY, 1, 0, context_->stream, nullptr, extra);
  }

  void launch(const FusedKernelLaunch &launch) override {
    CUfunction kernel = function(codegen::kernelName(launch.spec),
                                 [&] { return codegen::kernelSupply().ptx(launch.spec, arch_); });
    launchOnGrid(kernel, launch.grid, launch.parameters.data(),
                 codegen::fusedParameterCount(launch.spec) * sizeof(uint64_t));
  }

  void launch(const MatmulKernelLaunch &launch) override {
    CUfunction kernel = function(codegen::matmulKernelName(launch.dtype),
                                 [&] { return codegen::kernelSupply().matmulPtx(launch.dtype, arch_); });
    launchOnGrid(kernel, launch.grid, &launch.args, sizeof launch.args);
  }

  void launch(const CreationKernelLaunch &launch) override {
    CUfunction kernel = function(codegen::creationKernelName(launch.kind, launch.dtype), [&] {
      return codegen::kernelSupply().creationPtx(launch.kind, launch.dtype, arch_);
    });
    launchOnGrid(kernel, launch.grid, &launch.args, sizeof launch.args);
  }

  void launch(const IndexKernelLaunch &launch) override {
    CUfunction kernel = function(codegen::indexKernelName(launch.kind, launch.dtype), [&] {
      return codegen::kernelSupply().indexPtx(launch.kind, launch.dtype, arch_);
    });
    launchOnGrid(kernel, launch.grid, &launch.args, sizeof launch.args);
  }

  void launch(const WindowKernelLaunch &launch) override {
    CUfunction kernel = function(codegen::windowKernelName(launch.kind, launch.dtype), [&] {
      return codegen::kernelSupply().windowPtx(launch.kind, launch.dtype, arch_);
    });
    launchOnGrid(kernel, launch.grid, &launch.args, sizeof launch.args);
  }

  /// NCCL, opened at the first collective (only a distributed run has any); without it the layer stages.
  bool hasCollectives(std::string &why) override {
    if (!ncclTried_) {
      ncclTried_ = true;
      nccl_ = Nccl::open(context_->stream, ncclMissing_);
    }
    why = ncclMissing_;
    return nccl_ != nullptr;
  }
  void allreduceOnDevice(DeviceAddress data, size_t count, ir::DType dtype, ir::OpKind combine) override {
    nccl_->allreduce(data, count, dtype, combine);
  }
  void broadcastOnDevice(DeviceAddress data, size_t bytes) override { nccl_->broadcast(data, bytes); }
  void allgatherOnDevice(DeviceAddress local, DeviceAddress all, const std::vector<size_t> &counts) override {
    nccl_->allgather(local, all, counts);
  }

  bool hasGemm(ir::DType dtype) const override {
    return cublas_ && (dtype == ir::DType::F32 || dtype == ir::DType::F64);
  }

  void gemm(const Gemm &g) override {
    auto narrow = [](int64_t value) { return static_cast<int>(value); };
    cublas_->gemm(g.dtype, narrow(g.n), narrow(g.m), narrow(g.k), {g.a, g.transposeA, narrow(g.leadingA)},
                  {g.b, g.transposeB, narrow(g.leadingB)}, g.c);
  }

  void copyOnDevice(DeviceAddress target, DeviceAddress source, size_t bytes) override {
    TG_CUDA_CHECK(driver(), cuMemcpyDtoDAsync, target, source, bytes, context_->stream);
  }

  void waitForDevice() override { TG_CUDA_CHECK(driver(), cuStreamSynchronize, context_->stream); }

  /// A pinned host buffer of kStagingBytes and the event that says when the copy using it is done.
  struct Staging {
    void *buffer = nullptr;
    CUevent event = nullptr;
    bool pending = false;
  };
  /// Two staging buffers, or none when pinned memory cannot be had (copies then go from pageable memory).
  Staging *stagingBuffers() {
    if (stagingTried_) return staging_.empty() ? nullptr : staging_.data();
    stagingTried_ = true;
    for (int i = 0; i < 2; ++i) {
      Staging staging;
      if (driver().api().cuMemHostAlloc(&staging.buffer, kStagingBytes, 0) != CUDA_SUCCESS ||
          driver().api().cuEventCreate(&staging.event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
        if (staging.buffer) driver().api().cuMemFreeHost(staging.buffer);
        break;
      }
      staging_.push_back(staging);
    }
    if (staging_.size() < 2) {
      for (Staging &staging : staging_) {
        driver().api().cuMemFreeHost(staging.buffer);
        driver().api().cuEventDestroy(staging.event);
      }
      staging_.clear();
      return nullptr;
    }
    return staging_.data();
  }

  void copyToDevice(DeviceAddress target, const void *source, size_t bytes) override {
    Staging *staging = bytes >= kStagingBytes ? stagingBuffers() : nullptr;
    if (!staging) { // small, or no pinned memory: the driver stages pageable memory itself
      TG_CUDA_CHECK(driver(), cuMemcpyHtoDAsync, target, source, bytes, context_->stream);
      return;
    }
    for (size_t done = 0, chunk = 0; done < bytes; done += kStagingBytes, ++chunk) {
      Staging &buffer = staging[chunk % 2];
      if (buffer.pending) TG_CUDA_CHECK(driver(), cuEventSynchronize, buffer.event);
      size_t size = std::min(kStagingBytes, bytes - done);
      std::memcpy(buffer.buffer, static_cast<const std::byte *>(source) + done, size);
      TG_CUDA_CHECK(driver(), cuMemcpyHtoDAsync, target + done, buffer.buffer, size, context_->stream);
      TG_CUDA_CHECK(driver(), cuEventRecord, buffer.event, context_->stream);
      buffer.pending = true;
    }
  }

  /// Waits for the work that computes `source`, then copies it.
  void copyToHost(void *target, DeviceAddress source, size_t bytes) override {
    Staging *staging = bytes >= kStagingBytes ? stagingBuffers() : nullptr;
    if (!staging) {
      TG_CUDA_CHECK(driver(), cuMemcpyDtoHAsync, target, source, bytes, context_->stream);
      waitForDevice();
      return;
    }
    size_t chunks = (bytes + kStagingBytes - 1) / kStagingBytes;
    auto issue = [&](size_t chunk) {
      Staging &buffer = staging[chunk % 2];
      size_t offset = chunk * kStagingBytes, size = std::min(kStagingBytes, bytes - offset);
      TG_CUDA_CHECK(driver(), cuMemcpyDtoHAsync, buffer.buffer, source + offset, size, context_->stream);
      TG_CUDA_CHECK(driver(), cuEventRecord, buffer.event, context_->stream);
    };
    issue(0);
    for (size_t chunk = 0; chunk < chunks; ++chunk) {
      if (chunk + 1 < chunks) issue(chunk + 1); // its buffer's last chunk was copied out below already
      Staging &buffer = staging[chunk % 2];
      TG_CUDA_CHECK(driver(), cuEventSynchronize, buffer.event);
      size_t offset = chunk * kStagingBytes;
      std::memcpy(static_cast<std::byte *>(target) + offset, buffer.buffer,
                  std::min(kStagingBytes, bytes - offset));
    }
    for (Staging &buffer : staging_)
      buffer.pending = false; // everything queued before the last chunk has run
  }

  std::shared_ptr<Context> context_;
  std::string arch_;
  std::unique_ptr<Cublas> cublas_;
  std::string cublasMissing_; // why there is no cuBLAS
  std::unique_ptr<Nccl> nccl_;
  std::string ncclMissing_; // why there is no NCCL
  bool ncclTried_ = false;
  std::map<std::string, CUfunction> functions_;
  std::vector<CUmodule> modules_;
  std::vector<Staging> staging_;
  bool stagingTried_ = false;
  double ptxSeconds_ = 0, loadSeconds_ = 0; // making and loading the modules so far
};

} // namespace

std::unique_ptr<Device> openCudaDevice(int ordinal) {
  return std::make_unique<CudaDevice>(openContext(ordinal));
}

} // namespace tg::runtime::cuda
