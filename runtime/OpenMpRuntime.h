#pragma once
// The OpenMP runtime's API, as far as tgc calls it: oneDNN's threads are libgomp's (Debian builds oneDNN with
// OpenMP), and tgc sets their count around each call (runtime/Blas.cpp). Declared here, as gcc's omp.h
// declares them, because clang finds no omp.h without its own runtime (libomp), which is not the one oneDNN
// uses. CMakeLists.txt links libgomp itself.
extern "C" {
int omp_get_max_threads() noexcept;
void omp_set_num_threads(int threads) noexcept;
}
