// A caching allocator of device memory, for every device: a freed block goes back to a free list by its
// rounded size and is handed out again for that size (a graph allocates the same sizes step after step; a
// GPU's cuMemAlloc and cuMemFree synchronize the device, and the simulated device's large blocks would come
// from the kernel and fault their pages in again every step). When the device is out of memory, the cached
// blocks are freed and the allocation retried once; then it is a clear ir::UserError.
#pragma once

#include "runtime/DeviceLayer.h"

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tg::runtime {

class DeviceAllocator {
public:
  /// The device's own allocation calls.
  class Backend {
  public:
    virtual ~Backend() = default;
    /// A new block of `bytes` bytes, or nullopt when the device has no room (other failures throw).
    virtual std::optional<DeviceAddress> allocate(size_t bytes) = 0;
    virtual void free(DeviceAddress block) = 0;
    /// How much memory the device has left, for the out-of-memory message: "1 MiB free of 1 MiB".
    virtual std::string freeMemory() const = 0;
  };

  explicit DeviceAllocator(std::unique_ptr<Backend> backend) : backend_(std::move(backend)) {}
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator &) = delete;
  DeviceAllocator &operator=(const DeviceAllocator &) = delete;

  /// A device block of at least `bytes` bytes (a zero-size request gets a small block). Blocks are reused
  /// only in stream order: the caller uses one stream for everything.
  DeviceAddress allocate(size_t bytes);
  /// Returns a block from allocate() to the cache.
  void release(DeviceAddress block);
  /// Frees every cached block.
  void releaseCached();

  struct Stats {
    size_t deviceAllocations = 0; // the backend's allocations that succeeded
    size_t reused = 0;            // requests served from the cache
    size_t bytesInUse = 0, bytesCached = 0, peakBytesInUse = 0;
  };
  Stats stats() const;

  /// The size class of a request: 512-byte granules up to 1 MiB, then 2 MiB granules.
  static size_t roundUp(size_t bytes);

private:
  void freeCached(); // releaseCached() with the lock held

  std::unique_ptr<Backend> backend_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<DeviceAddress>> free_; // by size class
  std::map<DeviceAddress, size_t> sizes_;             // every block handed out or cached, by address
  Stats stats_;
};

/// Megabytes as the out-of-memory messages say them, rounded up: "4 MiB".
std::string mebibytes(size_t bytes);

} // namespace tg::runtime
