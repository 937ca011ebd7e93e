#include "runtime/HostAllocator.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

namespace tg::runtime {

namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kCachedFrom = size_t(1) << 20;     // smaller blocks are malloc's business
constexpr size_t kMaxCachedBytes = size_t(1) << 30; // free bytes kept at most

class BufferCache {
public:
  void *take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = free_.find(bytes);
    if (found == free_.end()) return nullptr;
    void *memory = found->second;
    free_.erase(found);
    cachedBytes_ -= bytes;
    return memory;
  }
  void give(void *memory, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Keep the newest; drop the largest blocks first when over the bound (they are the rarest sizes).
    free_.emplace(bytes, memory);
    cachedBytes_ += bytes;
    while (cachedBytes_ > kMaxCachedBytes) {
      auto largest = std::prev(free_.end());
      cachedBytes_ -= largest->first;
      std::free(largest->second);
      free_.erase(largest);
    }
  }

private:
  std::mutex mutex_;
  std::multimap<size_t, void *> free_;
  size_t cachedBytes_ = 0;
};

std::atomic<size_t> bufferLimit{SIZE_MAX};

/// Never destroyed: tensors held by static objects may be freed after main returns.
BufferCache &cache() {
  static BufferCache *instance = new BufferCache;
  return *instance;
}

} // namespace

void setHostBufferLimit(size_t bytes) {
  bufferLimit = bytes;
}

std::shared_ptr<std::byte> allocateHostBuffer(size_t bytes) {
  if (bytes > bufferLimit) return nullptr;
  // aligned_alloc wants a multiple of the alignment; a zero-size request still gets a buffer.
  size_t rounded = bytes ? (bytes + kAlignment - 1) / kAlignment * kAlignment : kAlignment;
  if (rounded < kCachedFrom) {
    void *memory = std::aligned_alloc(kAlignment, rounded);
    return memory ? std::shared_ptr<std::byte>(static_cast<std::byte *>(memory), std::free) : nullptr;
  }
  void *memory = cache().take(rounded);
  if (!memory) memory = std::aligned_alloc(kAlignment, rounded);
  if (!memory) return nullptr;
  return std::shared_ptr<std::byte>(static_cast<std::byte *>(memory),
                                    [rounded](std::byte *block) { cache().give(block, rounded); });
}

} // namespace tg::runtime
