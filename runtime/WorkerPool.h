// The host's worker threads: created once, kept for the life of the process, and woken for each parallel
// launch, so that a kernel split across threads creates none and makes no system call but the futex that
// wakes the workers and the one that waits for them.
//
//   caller: publish task, parts ──> generation++ (wake) ──> run parts itself ──> wait until all are done
//   worker: wait for generation ──> take parts (one atomic counter, shared with the caller) ──> count them
#pragma once

#include <cstdint>
#include <functional>

namespace tg::runtime {

// How much work a thread must get before a host kernel, a simulated device's grid or a matrix product is
// split across threads: below it, waking a worker and joining it costs more than the thread saves.
//
// Elements: tanh(a) * b + c over f32 vectors through the Python module (best of 7 x 20 calls, a 2-core Xeon),
// at 70,000 and 100,000 elements: one thread 30 and 42 us on the host, 57 and 79 us on the simulated device;
// split in two (a threshold of 2**15) 46 and 55 us, 88 and 110 us. From 140,000 elements on, two threads win.
constexpr int64_t kElementsPerThread = 1 << 16;
/// Multiply-adds, for the products of runtime/Blas.cpp and runtime/SmallGemm.cpp (the value both used when
/// they were written; not measured since).
constexpr double kMultiplyAddsPerThread = 1 << 20;

/// How many threads a host kernel may split its elements across (default: the cores the process may run on,
/// its affinity mask's).
void setHostThreads(int threads);
int hostThreads();

/// Runs task(0), ..., task(parts - 1) on the calling thread and up to hostThreads() - 1 pool workers, and
/// returns when every one has run. Tasks must not throw. One launch uses the pool at a time: a launch from
/// another thread meanwhile (or from inside a task) runs its parts on its own thread.
void parallelFor(int64_t parts, const std::function<void(int64_t)> &task);

} // namespace tg::runtime
