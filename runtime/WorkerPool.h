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

/// How many threads a host kernel may split its elements across (default: the machine's cores).
void setHostThreads(int threads);
int hostThreads();

/// Runs task(0), ..., task(parts - 1) on the calling thread and up to hostThreads() - 1 pool workers, and
/// returns when every one has run. Tasks must not throw. One launch uses the pool at a time: a launch from
/// another thread meanwhile (or from inside a task) runs its parts on its own thread.
void parallelFor(int64_t parts, const std::function<void(int64_t)> &task);

} // namespace tg::runtime
