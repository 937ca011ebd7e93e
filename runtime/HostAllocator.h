// Host memory for tensors. Large buffers are kept when freed and handed out again for the same size: a graph
// runs the same sizes step after step, and a fresh large block costs a page fault per 4 KiB on first touch,
// which is a good part of a memory-bound kernel's time (16M floats: 16k faults).
#pragma once

#include <cstddef>
#include <memory>

namespace tg::runtime {

/// A buffer of at least `bytes` bytes, aligned to 64 bytes; nullptr when memory is exhausted. Buffers of 1
/// MiB and more come from, and return to, a cache holding at most 1 GiB. Thread-safe.
std::shared_ptr<std::byte> allocateHostBuffer(size_t bytes);

} // namespace tg::runtime
