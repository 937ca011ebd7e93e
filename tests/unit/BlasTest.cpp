// The library products (runtime/Blas.h) against a long-double reference: f32 cut into panels of rows or of
// columns over tgc's threads (more panels than cores too, and sides that do not divide evenly), operands
// transposed or not and with padded rows, and f64 through OpenBLAS; and the caller's OpenMP setting kept.
#include "runtime/Blas.h"

#include "runtime/OpenMpRuntime.h"
#include "runtime/WorkerPool.h"

#include <cmath>
#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace {

using tg::runtime::GemmMatrix;

/// A rows x cols operand (as gemm reads it) stored row-major with `padding` unused elements after each row,
/// or transposed: its transpose stored that way.
template <typename T>
GemmMatrix<T> operand(std::vector<T> &storage, int64_t rows, int64_t cols, bool transposed, int64_t padding,
                      std::mt19937 &random) {
  std::uniform_real_distribution<double> uniform(-1, 1);
  int64_t storedRows = transposed ? cols : rows, leading = (transposed ? rows : cols) + padding;
  storage.resize(static_cast<size_t>(storedRows * leading));
  for (T &x : storage)
    x = static_cast<T>(uniform(random));
  return {storage.data(), leading, transposed};
}

template <typename T>
T element(GemmMatrix<T> matrix, int64_t i, int64_t j) {
  return matrix.transposed ? matrix.data[j * matrix.leading + i] : matrix.data[i * matrix.leading + j];
}

template <typename T>
void expectProduct(int64_t n, int64_t m, int64_t k, bool transposeA, bool transposeB, double tolerance) {
  std::mt19937 random(static_cast<uint32_t>(n * 7919 + m * 31 + k + transposeA * 2 + transposeB));
  std::vector<T> storageA, storageB;
  GemmMatrix<T> a = operand(storageA, n, k, transposeA, 3, random);
  GemmMatrix<T> b = operand(storageB, k, m, transposeB, 5, random);
  std::vector<T> c(static_cast<size_t>(n * m), T(-7));
  tg::runtime::libraryGemm(a, b, c.data(), n, m, k);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      long double want = 0;
      for (int64_t p = 0; p < k; ++p)
        want += static_cast<long double>(element(a, i, p)) * element(b, p, j);
      ASSERT_NEAR(static_cast<double>(c[static_cast<size_t>(i * m + j)]), static_cast<double>(want),
                  tolerance * static_cast<double>(k))
          << n << "x" << k << " @ " << k << "x" << m << (transposeA ? ", a transposed" : "")
          << (transposeB ? ", b transposed" : "") << ", element (" << i << ", " << j << ")";
    }
}

/// Runs the products with `threads` host threads, then restores the default.
void expectProducts(int threads) {
  tg::runtime::setHostThreads(threads);
  for (bool transposeA : {false, true})
    for (bool transposeB : {false, true}) {
      expectProduct<float>(301, 67, 129, transposeA, transposeB, 1e-6);  // panels of rows
      expectProduct<float>(45, 517, 301, transposeA, transposeB, 1e-6);  // panels of columns
      expectProduct<float>(3, 2, 100000, transposeA, transposeB, 1e-6);  // one panel: too little work
      expectProduct<double>(130, 70, 90, transposeA, transposeB, 1e-14); // OpenBLAS
    }
  tg::runtime::setHostThreads(0);
}

TEST(BlasTest, ProductsMatchTheReferenceWithAnyNumberOfThreads) {
  expectProducts(1);
  expectProducts(2);
  expectProducts(5);
}

TEST(BlasTest, TheCallersOpenMpThreadCountIsKept) {
  int before = omp_get_max_threads();
  omp_set_num_threads(3);
  std::vector<float> a(512 * 512, 1.0f), b(512 * 512, 0.5f), c(512 * 512);
  tg::runtime::libraryGemm(GemmMatrix<float>{a.data(), 512, false}, GemmMatrix<float>{b.data(), 512, false},
                           c.data(), 512, 512, 512);
  EXPECT_EQ(omp_get_max_threads(), 3);
  EXPECT_EQ(c[12345], 256.0f);
  omp_set_num_threads(before);
}

TEST(BlasTest, DescriptionNamesBothLibraries) {
  std::string text = tg::runtime::describeBlas();
  EXPECT_NE(text.find("f32 oneDNN "), std::string::npos) << text;
  EXPECT_NE(text.find("kernels) on tgc's "), std::string::npos) << text;
  EXPECT_NE(text.find("; f64 "), std::string::npos) << text;
}

} // namespace
