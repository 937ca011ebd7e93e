#include "runtime/DeviceAllocator.h"

#include "ir/Assert.h"
#include "ir/SourceLoc.h"

#include <algorithm>

namespace tg::runtime {

std::string mebibytes(size_t bytes) {
  return std::to_string((bytes + (size_t(1) << 20) - 1) >> 20) + " MiB";
}

size_t DeviceAllocator::roundUp(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t(2) << 20, kSmallLimit = size_t(1) << 20;
  bytes = std::max<size_t>(bytes, 1);
  size_t granule = bytes <= kSmallLimit ? kSmall : kLarge;
  return (bytes + granule - 1) / granule * granule;
}

DeviceAllocator::~DeviceAllocator() {
  releaseCached();
}

DeviceAddress DeviceAllocator::allocate(size_t bytes) {
  size_t size = roundUp(bytes);
  std::lock_guard lock(mutex_);
  if (auto cached = free_.find(size); cached != free_.end() && !cached->second.empty()) {
    DeviceAddress block = cached->second.back();
    cached->second.pop_back();
    ++stats_.reused;
    stats_.bytesCached -= size;
    stats_.bytesInUse += size;
    stats_.peakBytesInUse = std::max(stats_.peakBytesInUse, stats_.bytesInUse);
    return block;
  }
  std::optional<DeviceAddress> block = backend_->allocate(size);
  if (!block && stats_.bytesCached > 0) {
    freeCached();
    block = backend_->allocate(size);
  }
  if (!block)
    throw ir::UserError("out of device memory: cannot allocate " + mebibytes(size) + " (" +
                        backend_->freeMemory() + ", " + mebibytes(stats_.bytesInUse) + " held by tgc)");
  sizes_[*block] = size;
  ++stats_.deviceAllocations;
  stats_.bytesInUse += size;
  stats_.peakBytesInUse = std::max(stats_.peakBytesInUse, stats_.bytesInUse);
  return *block;
}

void DeviceAllocator::release(DeviceAddress block) {
  std::lock_guard lock(mutex_);
  auto found = sizes_.find(block);
  TG_ASSERT(found != sizes_.end()) << "releasing a device block this allocator did not hand out";
  free_[found->second].push_back(block);
  stats_.bytesInUse -= found->second;
  stats_.bytesCached += found->second;
}

void DeviceAllocator::releaseCached() {
  std::lock_guard lock(mutex_);
  freeCached();
}

void DeviceAllocator::freeCached() {
  for (auto &[size, blocks] : free_)
    for (DeviceAddress block : blocks) {
      backend_->free(block);
      sizes_.erase(block);
    }
  free_.clear();
  stats_.bytesCached = 0;
}

DeviceAllocator::Stats DeviceAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

} // namespace tg::runtime
