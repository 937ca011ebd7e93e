// Host memory for tensors. Large buffers are kept when freed and handed out again for the same size: a graph
// runs the same sizes step after step, and a fresh large block costs a page fault per 4 KiB on first touch,
// which is a good part of a memory-bound kernel's time (16M floats: 16k faults). An executor goes further
// with a pool of its own (HostBufferPool): every buffer its kernels allocate returns there, so that its
// steps after the first allocate nothing.
#pragma once

#include <cstddef>
#include <memory>

namespace tg::runtime {

/// A buffer of at least `bytes` bytes, aligned to 64 bytes; nullptr when memory is exhausted, or when `bytes`
/// exceeds the limit of setHostBufferLimit. While a HostBufferPool::Scope is open on the calling thread the
/// buffer comes from, and returns to, that pool; otherwise buffers of 1 MiB and more come from, and return
/// to, a cache holding at most 1 GiB. Thread-safe: a buffer may be freed on any thread.
std::shared_ptr<std::byte> allocateHostBuffer(size_t bytes);

/// Refuses buffers larger than `bytes` from now on, as if memory were exhausted (a program that asks for
/// one gets tgc's "out of memory" error): for a process that runs untrusted programs and must keep its
/// memory, such as the REPL's fuzzer. There is no limit until it is called.
void setHostBufferLimit(size_t bytes);

struct HostBufferPoolState; // HostAllocator.cpp

/// Free host buffers by size, for one owner that asks for the same sizes again and again (an executor's
/// steps). Without it, the intermediates of each step are malloc'd and freed, and glibc's heap grows and
/// shrinks every step: a page fault per 4 KiB touched again, most of a small step's time. Bounded by trim().
class HostBufferPool {
public:
  HostBufferPool();
  /// Frees the free buffers; those still in use are freed when their last handle goes.
  ~HostBufferPool();
  HostBufferPool(const HostBufferPool &) = delete;
  HostBufferPool &operator=(const HostBufferPool &) = delete;

  /// Keeps, of each size, at most as many free buffers as were taken since the last trim (what one more
  /// step of the same sizes needs) and frees the others.
  void trim();
  /// Free buffers held, and their bytes (for tests).
  size_t freeBuffers() const;

  /// While alive, allocateHostBuffer on this thread takes from `pool` (scopes nest; the innermost wins).
  class Scope {
  public:
    explicit Scope(HostBufferPool &pool);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    const std::shared_ptr<HostBufferPoolState> *previous_;
  };

private:
  std::shared_ptr<HostBufferPoolState> state_; // shared with the deleters of the buffers handed out
};

} // namespace tg::runtime
