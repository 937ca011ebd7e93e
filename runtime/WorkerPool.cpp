#include "runtime/WorkerPool.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <sched.h>
#include <thread>
#include <vector>

namespace tg::runtime {

namespace {

std::atomic<int> configuredThreads{0}; // 0: the cores this process may run on

/// The cores this process may run on, asked once: those of its affinity mask (mpirun binds each rank to its
/// own; taskset and container limits narrow it too), else the machine's.
int machineThreads() {
  static const int threads = [] {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) return std::max(1, CPU_COUNT(&allowed));
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return threads;
}

/// One parallel launch: its task and its counters, on the launching thread's stack.
struct Launch {
  const std::function<void(int64_t)> &task;
  int64_t parts;
  std::atomic<int64_t> next{0}; // the next part to take
  std::atomic<int64_t> done{0}; // parts finished
};

/// Runs the parts of `launch` that are left; whoever finishes the last one wakes the launching thread.
void drain(Launch &launch) {
  for (int64_t part; (part = launch.next.fetch_add(1)) < launch.parts;) {
    launch.task(part);
    if (launch.done.fetch_add(1) + 1 == launch.parts) launch.done.notify_all();
  }
}

class Pool {
public:
  static Pool &instance() {
    static Pool *pool = new Pool; // never destroyed: its workers wait until the process ends
    return *pool;
  }

  void run(int64_t parts, const std::function<void(int64_t)> &task) {
    std::unique_lock<std::mutex> launching(launchMutex_, std::try_to_lock);
    int helpers = std::min<int64_t>(hostThreads(), parts) - 1;
    if (!launching.owns_lock() || helpers <= 0) {
      for (int64_t part = 0; part < parts; ++part)
        task(part);
      return;
    }
    while (static_cast<int>(workers_.size()) < helpers)
      workers_.emplace_back([this] { work(); });
    Launch launch{task, parts};
    current_.store(&launch);
    generation_.fetch_add(1);
    generation_.notify_all();
    drain(launch);
    for (int64_t done; (done = launch.done.load()) < parts;)
      launch.done.wait(done);
    // A worker may still be between finding the launch and leaving it: wait until none is inside, so that
    // none reads `launch` after it is gone (a worker that enters after this store finds no launch).
    current_.store(nullptr);
    for (int inside; (inside = inside_.load()) != 0;)
      inside_.wait(inside);
  }

private:
  void work() {
    uint64_t seen = 0;
    for (;;) {
      generation_.wait(seen);
      seen = generation_.load();
      inside_.fetch_add(1);
      if (Launch *launch = current_.load()) drain(*launch);
      if (inside_.fetch_sub(1) == 1) inside_.notify_all();
    }
  }

  std::mutex launchMutex_; // one launch at a time uses the workers
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0}; // counts launches: workers wait for it to change
  std::atomic<Launch *> current_{nullptr};
  std::atomic<int> inside_{0}; // workers looking at current_
};

} // namespace

void setHostThreads(int threads) {
  configuredThreads = std::max(threads, 0);
}

int hostThreads() {
  int threads = configuredThreads;
  return threads > 0 ? threads : machineThreads();
}

void parallelFor(int64_t parts, const std::function<void(int64_t)> &task) {
  if (parts <= 0) return;
  if (parts == 1) {
    task(0);
    return;
  }
  Pool::instance().run(parts, task);
}

} // namespace tg::runtime
