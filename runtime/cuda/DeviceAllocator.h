// A caching allocator for CUDA device memory: a freed block goes back to a free list by its rounded size and
// is handed out again for that size (a graph allocates the same sizes step after step, and cuMemAlloc and
// cuMemFree synchronize the device). When the driver is out of memory, the cached blocks are freed and the
// allocation retried once; then it is a clear ir::UserError.
#pragma once

#include "runtime/cuda/Driver.h"

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace tg::runtime::cuda {

class DeviceAllocator {
public:
  explicit DeviceAllocator(const Driver &driver) : driver_(driver) {}
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator &) = delete;
  DeviceAllocator &operator=(const DeviceAllocator &) = delete;

  /// A device block of at least `bytes` bytes (a zero-size request gets a small block). Blocks are reused
  /// only in stream order: the caller uses one stream for everything.
  CUdeviceptr allocate(size_t bytes);
  /// Returns a block from allocate() to the cache.
  void release(CUdeviceptr block);
  /// Frees every cached block (cuMemFree).
  void releaseCached();

  struct Stats {
    size_t driverAllocations = 0; // cuMemAlloc calls that succeeded
    size_t reused = 0;            // requests served from the cache
    size_t bytesInUse = 0, bytesCached = 0, peakBytesInUse = 0;
  };
  Stats stats() const;

  /// The size class of a request: 512-byte granules up to 1 MiB, then 2 MiB granules.
  static size_t roundUp(size_t bytes);

private:
  const Driver &driver_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<CUdeviceptr>> free_; // by size class
  std::map<CUdeviceptr, size_t> sizes_;             // every block handed out or cached, by address
  Stats stats_;
};

} // namespace tg::runtime::cuda
