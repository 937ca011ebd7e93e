// The host worker pool: every part of a launch runs once, launch after launch, from several threads at once
// and from inside a task, whatever the thread count.
#include "runtime/WorkerPool.h"

#include <atomic>
#include <gtest/gtest.h>
#include <thread>
#include <vector>

namespace {

using tg::runtime::parallelFor;

/// How many times each of `parts` parts ran in one launch.
std::vector<int> timesEachPartRuns(int64_t parts) {
  std::vector<std::atomic<int>> runs(static_cast<size_t>(parts));
  parallelFor(parts, [&](int64_t part) { runs[static_cast<size_t>(part)].fetch_add(1); });
  std::vector<int> counts;
  for (const std::atomic<int> &count : runs)
    counts.push_back(count.load());
  return counts;
}

TEST(WorkerPoolTest, EveryPartRunsOnceLaunchAfterLaunch) {
  for (int threads : {0, 1, 2, 3, 8}) {
    tg::runtime::setHostThreads(threads);
    for (int launch = 0; launch < 2000; ++launch) {
      int64_t parts = launch % 9;
      EXPECT_EQ(timesEachPartRuns(parts), std::vector<int>(static_cast<size_t>(parts), 1))
          << parts << " parts on " << threads << " threads";
    }
  }
  tg::runtime::setHostThreads(0);
}

TEST(WorkerPoolTest, LaunchesFromSeveralThreadsAndFromInsideATask) {
  tg::runtime::setHostThreads(4);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> launchers;
  for (int t = 0; t < 4; ++t)
    launchers.emplace_back([&] {
      for (int launch = 0; launch < 300; ++launch)
        parallelFor(4, [&](int64_t) { parallelFor(3, [&](int64_t part) { total += part + 1; }); });
    });
  for (std::thread &launcher : launchers)
    launcher.join();
  EXPECT_EQ(total.load(), 4 * 300 * 4 * (1 + 2 + 3));
  tg::runtime::setHostThreads(0);
}

} // namespace
