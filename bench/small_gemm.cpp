// bench/small_gemm: where tgc's direct kernel for small matrix products (runtime/SmallGemm.h) and BLAS's
// sgemm cross, side by side in one run: examples/mlp.tg's five products (with their operands' layouts:
// a transposed operand is a view, read in place by both) and cubes from 16 to 128. Prints microseconds per
// product, the best of --repeat rounds, and the ratio; runtime/SmallGemm.cpp's isSmallGemm draws the line.
//
//   build/bench/small_gemm [--repeat 5]
#include "runtime/Blas.h"
#include "runtime/SmallGemm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  std::string name;
  int n, k, m;
  bool transposeA, transposeB; // the operand is the transpose of a C-order matrix
};

/// Microseconds per call of `run`, the best of `repeat` rounds of enough calls to take about 20 ms.
template <typename Run>
double microseconds(Run run, int repeat) {
  int calls = 1;
  for (;;) {
    auto start = Clock::now();
    for (int i = 0; i < calls; ++i)
      run();
    if (std::chrono::duration<double>(Clock::now() - start).count() > 0.02 || calls > (1 << 24)) break;
    calls *= 2;
  }
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    auto start = Clock::now();
    for (int i = 0; i < calls; ++i)
      run();
    best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - start).count() / calls);
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  int repeat = 5;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
  std::vector<Shape> shapes = {{"X @ W1", 300, 2, 64, false, false},
                               {"hidden @ W2", 300, 64, 3, false, false},
                               {"hidden^T @ g", 64, 300, 3, true, false},
                               {"g @ W2^T", 300, 3, 64, false, true},
                               {"X^T @ gh", 2, 300, 64, true, false}};
  // The large MLP of bench/train.py: its products with a short inner dimension write more than they compute.
  shapes.push_back({"large: g @ W2^T", 4096, 10, 1024, false, true});
  shapes.push_back({"large: h @ W2", 4096, 1024, 10, false, false});
  for (int size : {16, 32, 48, 64, 96, 128})
    shapes.push_back({std::to_string(size) + "^3", size, size, size, false, false});
  std::mt19937 random(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::printf("BLAS: %s\n", tg::runtime::describeBlas().c_str());
  std::printf("%-16s %12s %12s %10s %s\n", "n x k @ k x m", "small (us)", "sgemm (us)", "small/sgemm", "");
  for (const Shape &shape : shapes) {
    int n = shape.n, k = shape.k, m = shape.m;
    std::vector<float> a(static_cast<size_t>(n) * k), b(static_cast<size_t>(k) * m),
        c(static_cast<size_t>(n) * m);
    for (float &x : a)
      x = uniform(random);
    for (float &x : b)
      x = uniform(random);
    // A transposed operand is stored as its C-order transpose: element (i, j) at [j * rows + i].
    tg::runtime::StridedMatrix<float> sa{a.data(), shape.transposeA ? 1 : k, shape.transposeA ? n : 1};
    tg::runtime::StridedMatrix<float> sb{b.data(), shape.transposeB ? 1 : m, shape.transposeB ? k : 1};
    double small = microseconds([&] { tg::runtime::smallGemm(sa, sb, c.data(), n, m, k); }, repeat);
    double blas = microseconds(
        [&] {
          tg::runtime::libraryGemm({a.data(), shape.transposeA ? n : k, shape.transposeA},
                                   {b.data(), shape.transposeB ? k : m, shape.transposeB}, c.data(), n, m, k);
        },
        repeat);
    std::string label =
        std::to_string(n) + "x" + std::to_string(k) + "@" + std::to_string(k) + "x" + std::to_string(m);
    std::printf("%-16s %12.2f %12.2f %10.2f  %s%s\n", label.c_str(), small, blas, small / blas,
                shape.name.c_str(),
                tg::runtime::isSmallGemm(tg::ir::DType::F32, n, m, k) ? "" : " (library in tgc)");
  }
}
