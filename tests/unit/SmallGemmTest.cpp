// The direct kernel for small matrix products (runtime/SmallGemm.h) against a long-double reference, over
// every form it picks between: wide and narrow results, operands in C order, transposed and strided, sizes
// around its tiles' edges, an empty inner dimension; and a batched matmul through it.
#include "runtime/SmallGemm.h"

#include "runtime/Blas.h"
#include "runtime/Kernels.h"

#include <cmath>
#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace {

using tg::runtime::StridedMatrix;

/// A rows x cols matrix stored in `storage` with the given strides (storage sized to fit).
template <typename T>
StridedMatrix<T> matrix(std::vector<T> &storage, int64_t rows, int64_t cols, int64_t rowStride,
                        int64_t colStride, std::mt19937 &random) {
  std::uniform_real_distribution<double> uniform(-1, 1);
  storage.assign(
      static_cast<size_t>(std::max<int64_t>(1, (rows - 1) * rowStride + (cols - 1) * colStride + 1)), T(0));
  for (T &x : storage)
    x = static_cast<T>(uniform(random));
  return {storage.data(), rowStride, colStride};
}

/// The strides of a rows x cols operand laid out as `layout`: 0 C order, 1 transposed (Fortran order), 2
/// every other column of a wider C-order matrix, 3 every other row of a transposed one.
std::pair<int64_t, int64_t> strides(int layout, int64_t rows, int64_t cols) {
  switch (layout) {
  case 0:
    return {cols, 1};
  case 1:
    return {1, rows};
  case 2:
    return {2 * cols, 2};
  default:
    return {2, 2 * rows};
  }
}

template <typename T>
void expectProduct(int64_t n, int64_t m, int64_t k, int layoutA, int layoutB, double tolerance) {
  std::mt19937 random(static_cast<uint32_t>(n * 10007 + m * 101 + k * 7 + layoutA * 3 + layoutB));
  std::vector<T> storageA, storageB;
  auto [rowA, colA] = strides(layoutA, n, k);
  auto [rowB, colB] = strides(layoutB, k, m);
  StridedMatrix<T> a = matrix(storageA, n, k, rowA, colA, random);
  StridedMatrix<T> b = matrix(storageB, k, m, rowB, colB, random);
  std::vector<T> c(static_cast<size_t>(n * m), T(-7));
  tg::runtime::smallGemm(a, b, c.data(), n, m, k);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      long double want = 0;
      for (int64_t p = 0; p < k; ++p)
        want += static_cast<long double>(a.data[i * rowA + p * colA]) * b.data[p * rowB + j * colB];
      ASSERT_NEAR(static_cast<double>(c[static_cast<size_t>(i * m + j)]), static_cast<double>(want),
                  tolerance * static_cast<double>(std::max<int64_t>(k, 1)))
          << n << "x" << k << " @ " << k << "x" << m << ", layouts " << layoutA << " and " << layoutB
          << ", element (" << i << ", " << j << ")";
    }
}

TEST(SmallGemmTest, EveryFormAndLayoutMatchesTheReference) {
  const int64_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 17, 33};
  for (int64_t n : sizes)
    for (int64_t m : sizes)
      for (int64_t k : {1, 3, 8, 19})
        for (int layoutA = 0; layoutA < 4; ++layoutA)
          for (int layoutB = 0; layoutB < 4; ++layoutB) {
            expectProduct<float>(n, m, k, layoutA, layoutB, 1e-6);
            expectProduct<double>(n, m, k, layoutA, layoutB, 1e-14);
          }
}

TEST(SmallGemmTest, ExamplesShapesAndAnEmptyInnerDimension) {
  // examples/mlp.tg's products: 300 x 2 @ 2 x 64, 300 x 64 @ 64 x 3 and the gradient's transposed ones.
  expectProduct<float>(300, 64, 2, 0, 0, 1e-6);
  expectProduct<float>(300, 3, 64, 0, 0, 1e-6);
  expectProduct<float>(64, 3, 300, 1, 0, 1e-6);
  expectProduct<float>(300, 64, 3, 0, 1, 1e-6);
  expectProduct<float>(2, 64, 300, 1, 0, 1e-6);
  expectProduct<double>(5, 9, 0, 0, 0, 0);
  // Large enough for its rows to be split between threads: a short inner dimension, either layout.
  expectProduct<float>(700, 300, 8, 0, 1, 1e-6);
  expectProduct<double>(701, 33, 16, 1, 2, 1e-14);
}

TEST(SmallGemmTest, SmallAndLargeProductsGoWhereTheyRunFastest) {
  using tg::ir::DType;
  using tg::runtime::isSmallGemm;
  // Small volumes, unless the library has kernels of its own for them (OpenBLAS's AVX-512 cores, for f64).
  EXPECT_TRUE(isSmallGemm(DType::F32, 300, 3, 64));
  EXPECT_TRUE(isSmallGemm(DType::F32, 64, 64, 64));
  bool small = !tg::runtime::blasHasSmallMatrixKernels();
  EXPECT_EQ(isSmallGemm(DType::F64, 300, 3, 64), small);
  EXPECT_EQ(isSmallGemm(DType::F64, 64, 64, 64), small);
  for (DType dtype : {DType::F32, DType::F64}) {
    EXPECT_FALSE(isSmallGemm(dtype, 256, 256, 256));
    EXPECT_TRUE(isSmallGemm(dtype, 4096, 1024, 10)) << "a short inner dimension: writing c is the work";
    EXPECT_FALSE(isSmallGemm(dtype, 4096, 10, 1024));
    EXPECT_FALSE(isSmallGemm(dtype, int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31)); // no overflow
  }
}

TEST(SmallGemmTest, BatchedMatmulRunsItOnEachBatch) {
  // A batch of three small products (the direct kernel, once per batch) sharing the right operand.
  std::mt19937 random(5);
  std::uniform_real_distribution<double> uniform(-1, 1);
  tg::ir::TensorData left(tg::ir::DType::F32, {3, 40, 6}), right(tg::ir::DType::F32, {6, 5});
  for (int64_t i = 0; i < left.numElements(); ++i)
    left.set(i, uniform(random));
  for (int64_t i = 0; i < right.numElements(); ++i)
    right.set(i, uniform(random));
  tg::ir::TensorType type{tg::ir::DType::F32, {}, tg::ir::Place::Host};
  tg::ir::Op matmul(tg::ir::OpKind::Matmul);
  tg::runtime::Tensor a = tg::runtime::Tensor::fromData(left), b = tg::runtime::Tensor::fromData(right);
  tg::ir::TensorData batched = tg::runtime::runOp(matmul, {a, b}, {type})[0].toData();
  ASSERT_EQ(batched.shape, (std::vector<int64_t>{3, 40, 5}));
  // Each batch's product, checked element by element against sums in double.
  for (int64_t batch = 0; batch < 3; ++batch)
    for (int64_t i = 0; i < 40; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        double want = 0;
        for (int64_t p = 0; p < 6; ++p)
          want += left.get((batch * 40 + i) * 6 + p) * right.get(p * 5 + j);
        ASSERT_NEAR(batched.get((batch * 40 + i) * 5 + j), want, 1e-5);
      }
}

} // namespace
