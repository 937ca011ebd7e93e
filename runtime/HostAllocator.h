// Host memory for tensors. Large buffers are kept when freed and handed out again for the same size: a graph
// runs the same sizes step after step, and a fresh large block costs a page fault per 4 KiB on first touch,
// which is a good part of a memory-bound kernel's time (16M floats: 16k faults).
#pragma once

#include <cstddef>
#include <memory>

namespace tg::runtime {

/// A buffer of at least `bytes` bytes, aligned to 64 bytes; nullptr when memory is exhausted, or when `bytes`
/// exceeds the limit of setHostBufferLimit. Buffers of 1 MiB and more come from, and return to, a cache
/// holding at most 1 GiB. Thread-safe.
std::shared_ptr<std::byte> allocateHostBuffer(size_t bytes);

/// Refuses buffers larger than `bytes` from now on, as if memory were exhausted (a program that asks for
/// one gets tgc's "out of memory" error): for a process that runs untrusted programs and must keep its
/// memory, such as the REPL's fuzzer. There is no limit until it is called.
void setHostBufferLimit(size_t bytes);

} // namespace tg::runtime
