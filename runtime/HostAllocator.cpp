#include "runtime/HostAllocator.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

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

/// A pool's free lists. The deleter of each buffer it handed out holds it, so that a buffer outliving the
/// pool (an output the caller keeps) is freed then rather than returned.
struct HostBufferPoolState {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void *>> free; // by rounded size, the most recently freed last
  std::unordered_map<size_t, size_t> taken;             // since the last trim
  bool closed = false;                                  // the pool is gone

  void *take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    ++taken[bytes];
    auto found = free.find(bytes);
    if (found == free.end() || found->second.empty()) return nullptr;
    void *memory = found->second.back();
    found->second.pop_back();
    return memory;
  }
  void give(void *memory, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    if (closed) {
      std::free(memory);
      return;
    }
    free[bytes].push_back(memory);
  }
};

namespace {

thread_local const std::shared_ptr<HostBufferPoolState> *currentPool = nullptr;

} // namespace

HostBufferPool::HostBufferPool() : state_(std::make_shared<HostBufferPoolState>()) {}

HostBufferPool::~HostBufferPool() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->closed = true;
  for (auto &[bytes, blocks] : state_->free)
    for (void *block : blocks)
      std::free(block);
  state_->free.clear();
}

void HostBufferPool::trim() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (auto &[bytes, blocks] : state_->free) {
    auto taken = state_->taken.find(bytes);
    size_t keep = taken == state_->taken.end() ? 0 : taken->second;
    // The oldest go first: the newest are the likeliest to be in the cache.
    size_t drop = blocks.size() > keep ? blocks.size() - keep : 0;
    for (size_t i = 0; i < drop; ++i)
      std::free(blocks[i]);
    blocks.erase(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(drop));
  }
  std::erase_if(state_->free, [](const auto &entry) { return entry.second.empty(); });
  state_->taken.clear();
}

size_t HostBufferPool::freeBuffers() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  size_t count = 0;
  for (const auto &[bytes, blocks] : state_->free)
    count += blocks.size();
  return count;
}

HostBufferPool::Scope::Scope(HostBufferPool &pool) : previous_(currentPool) {
  currentPool = &pool.state_;
}

HostBufferPool::Scope::~Scope() {
  currentPool = previous_;
}

void setHostBufferLimit(size_t bytes) {
  bufferLimit = bytes;
}

std::shared_ptr<std::byte> allocateHostBuffer(size_t bytes) {
  if (bytes > bufferLimit) return nullptr;
  // aligned_alloc wants a multiple of the alignment; a zero-size request still gets a buffer.
  size_t rounded = bytes ? (bytes + kAlignment - 1) / kAlignment * kAlignment : kAlignment;
  if (currentPool) {
    std::shared_ptr<HostBufferPoolState> pool = *currentPool;
    void *memory = pool->take(rounded);
    if (!memory) memory = std::aligned_alloc(kAlignment, rounded);
    if (!memory) return nullptr;
    return std::shared_ptr<std::byte>(
        static_cast<std::byte *>(memory),
        [rounded, pool = std::move(pool)](std::byte *block) { pool->give(block, rounded); });
  }
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
