// The generated matmul kernel (codegen/MatmulKernel.cpp), the CUDA device's matmul without cuBLAS, run over
// a simulated grid on the CPU (the same IR as its PTX) and compared with the CPU runtime's BLAS matmul:
// partial tiles, transposed and strided operands, f32 and f64, an empty inner dimension.
#include "codegen/Kernel.h"
#include "runtime/Kernels.h"

#include <cmath>
#include <gtest/gtest.h>
#include <random>

namespace {

using tg::ir::DType;
using tg::runtime::Tensor;

Tensor randomMatrix(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  tg::ir::TensorData data(dtype, {rows, cols});
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (int64_t i = 0; i < data.numElements(); ++i)
    data.set(i, uniform(random));
  return Tensor::fromData(data);
}

/// a @ b by the generated kernel, block by block over the grid a launch would use.
Tensor generatedMatmul(const Tensor &a, const Tensor &b) {
  int64_t n = a.shape()[0], k = a.shape()[1], m = b.shape()[1];
  Tensor out = Tensor::empty(a.dtype(), {n, m});
  tg::codegen::MatmulArgs args{n,
                               m,
                               k,
                               a.rawData(),
                               a.strides()[0],
                               a.strides()[1],
                               b.rawData(),
                               b.strides()[0],
                               b.strides()[1],
                               out.rawData()};
  tg::codegen::SimMatmulKernel kernel = tg::codegen::compileSimMatmulKernel(a.dtype());
  auto blocks = [](int64_t size) { return (size + tg::codegen::kMatmulTile - 1) / tg::codegen::kMatmulTile; };
  for (int64_t y = 0; y < blocks(n); ++y)
    for (int64_t x = 0; x < blocks(m); ++x)
      kernel(&args, x, y);
  return out;
}

void expectMatches(const Tensor &a, const Tensor &b, double tolerance) {
  tg::ir::TensorType type{a.dtype(), {}, tg::ir::Place::Host};
  Tensor expected = tg::runtime::runOp(tg::ir::Op(tg::ir::OpKind::Matmul), {a, b}, {type})[0];
  tg::ir::TensorData got = generatedMatmul(a, b).toData(), want = expected.toData();
  ASSERT_EQ(got.shape, want.shape);
  int64_t k = a.shape()[1];
  for (int64_t i = 0; i < want.numElements(); ++i)
    ASSERT_NEAR(got.get(i), want.get(i), tolerance * std::max<int64_t>(k, 1)) << "element " << i;
}

TEST(MatmulKernelTest, PartialTilesInBothPrecisions) {
  for (DType dtype : {DType::F32, DType::F64}) {
    double tolerance = dtype == DType::F32 ? 1e-6 : 1e-14;
    expectMatches(randomMatrix(dtype, 70, 33, 1), randomMatrix(dtype, 33, 130, 2), tolerance);
    expectMatches(randomMatrix(dtype, 1, 5, 3), randomMatrix(dtype, 5, 1, 4), tolerance);
    expectMatches(randomMatrix(dtype, 64, 64, 5), randomMatrix(dtype, 64, 64, 6), tolerance);
  }
}

TEST(MatmulKernelTest, ReadsTransposedAndStridedOperandsInPlace) {
  Tensor at = randomMatrix(DType::F64, 40, 65, 7), b = randomMatrix(DType::F64, 40, 90, 8);
  Tensor strided = b.view({20, 90}, {2 * 90, 1}, 0); // every other row
  expectMatches(at.permuted({1, 0}), b, 1e-14);
  expectMatches(randomMatrix(DType::F64, 65, 20, 9), strided, 1e-14);
}

TEST(MatmulKernelTest, AnEmptyInnerDimensionGivesZeros) {
  Tensor a = Tensor::empty(DType::F32, {3, 0}), b = Tensor::empty(DType::F32, {0, 4});
  tg::ir::TensorData got = generatedMatmul(a, b).toData();
  for (int64_t i = 0; i < got.numElements(); ++i)
    EXPECT_EQ(got.get(i), 0.0);
}

} // namespace
