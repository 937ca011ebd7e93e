#pragma once
// The OpenMP runtime's API, as far as tgc calls it: oneDNN's threads are libgomp's (Debian builds oneDNN with
// OpenMP), and tgc sets their count around each call (runtime/Blas.cpp, runtime/ConvKernels.cpp). Declared
// here, as gcc's omp.h declares them, because clang finds no omp.h without its own runtime (libomp), which is
// not the one oneDNN uses. CMakeLists.txt links libgomp itself.
extern "C" {
int omp_get_max_threads() noexcept;
void omp_set_num_threads(int threads) noexcept;
}

namespace tg::runtime {

/// Sets the calling thread's OpenMP thread count to one while it lives, so that a oneDNN call made meanwhile
/// runs on this thread alone; then restores the count it had (the caller's own OpenMP code keeps it).
class OneOpenMpThread {
public:
  OneOpenMpThread() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneOpenMpThread() { omp_set_num_threads(saved_); }
  OneOpenMpThread(const OneOpenMpThread &) = delete;
  OneOpenMpThread &operator=(const OneOpenMpThread &) = delete;

private:
  int saved_;
};

} // namespace tg::runtime
