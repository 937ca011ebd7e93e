#include "runtime/cuda/DeviceAllocator.h"

#include "ir/Assert.h"
#include "ir/SourceLoc.h"

#include <algorithm>

namespace tg::runtime::cuda {

namespace {

std::string mebibytes(size_t bytes) {
  return std::to_string((bytes + (size_t(1) << 20) - 1) >> 20) + " MiB";
}

} // namespace

size_t DeviceAllocator::roundUp(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t(2) << 20, kSmallLimit = size_t(1) << 20;
  bytes = std::max<size_t>(bytes, 1);
  size_t granule = bytes <= kSmallLimit ? kSmall : kLarge;
  return (bytes + granule - 1) / granule * granule;
}

DeviceAllocator::~DeviceAllocator() {
  releaseCached();
}

CUdeviceptr DeviceAllocator::allocate(size_t bytes) {
  size_t size = roundUp(bytes);
  std::lock_guard lock(mutex_);
  if (auto cached = free_.find(size); cached != free_.end() && !cached->second.empty()) {
    CUdeviceptr block = cached->second.back();
    cached->second.pop_back();
    ++stats_.reused;
    stats_.bytesCached -= size;
    stats_.bytesInUse += size;
    stats_.peakBytesInUse = std::max(stats_.peakBytesInUse, stats_.bytesInUse);
    return block;
  }
  CUdeviceptr block = 0;
  CUresult result = driver_.api().cuMemAlloc(&block, size);
  if (result == CUDA_ERROR_OUT_OF_MEMORY && stats_.bytesCached > 0) {
    for (auto &[cachedSize, blocks] : free_)
      for (CUdeviceptr cachedBlock : blocks) {
        driver_.api().cuMemFree(cachedBlock);
        sizes_.erase(cachedBlock);
      }
    free_.clear();
    stats_.bytesCached = 0;
    result = driver_.api().cuMemAlloc(&block, size);
  }
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t free = 0, total = 0;
    driver_.api().cuMemGetInfo(&free, &total);
    throw ir::UserError("out of device memory: cannot allocate " + mebibytes(size) + " (" + mebibytes(free) +
                        " free of " + mebibytes(total) + ", " + mebibytes(stats_.bytesInUse) +
                        " held by tgc)");
  }
  driver_.check(result, "cuMemAlloc");
  sizes_[block] = size;
  ++stats_.driverAllocations;
  stats_.bytesInUse += size;
  stats_.peakBytesInUse = std::max(stats_.peakBytesInUse, stats_.bytesInUse);
  return block;
}

void DeviceAllocator::release(CUdeviceptr block) {
  std::lock_guard lock(mutex_);
  auto found = sizes_.find(block);
  TG_ASSERT(found != sizes_.end()) << "releasing a device block this allocator did not hand out";
  free_[found->second].push_back(block);
  stats_.bytesInUse -= found->second;
  stats_.bytesCached += found->second;
}

void DeviceAllocator::releaseCached() {
  std::lock_guard lock(mutex_);
  for (auto &[size, blocks] : free_)
    for (CUdeviceptr block : blocks) {
      driver_.api().cuMemFree(block); // at exit: a failure here has no one to tell
      sizes_.erase(block);
    }
  free_.clear();
  stats_.bytesCached = 0;
}

DeviceAllocator::Stats DeviceAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

} // namespace tg::runtime::cuda
