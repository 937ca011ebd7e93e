// Matrix products too small for a library's gemm: where a call's fixed cost (argument checks, packing both
// operands into its panel layout, zeroing the result) exceeds the arithmetic, as in a small MLP's layers (300
// x 2 @ 2 x 64, 300 x 64 @ 64 x 3), or where a short inner dimension makes the product a matter of writing
// the result (4096 x 10 @ 10 x 1024, which a gemm writes twice: zeros, then sums), a direct kernel reads the
// operands through their strides and computes the product in one pass, its rows split between the host
// threads when it is large. Compiled for AVX-512, for AVX2 with FMA and for baseline x86-64, chosen once
// from the CPU's features.
#pragma once

#include "ir/DType.h"

#include <cstdint>

namespace tg::runtime {

/// Whether an n x k @ k x m product of `dtype` (f32 or f64) goes to smallGemm rather than the library
/// (libraryGemm in Blas.h): at most 96^3 multiply-adds (for f64 unless OpenBLAS has small-matrix kernels of
/// its own: blasHasSmallMatrixKernels), or an inner dimension of at most 16 with 16 columns or more
/// (bench/small_gemm times both).
bool isSmallGemm(ir::DType dtype, int64_t n, int64_t m, int64_t k);

/// A matrix operand: element (i, j) at data[i * rowStride + j * colStride].
template <typename T>
struct StridedMatrix {
  const T *data;
  int64_t rowStride, colStride;
};

/// c (n x m, C order) = a (n x k) @ b (k x m), each sum in order of p except for the lanes of a vector
/// accumulator; k may be 0 (zeros).
void smallGemm(StridedMatrix<float> a, StridedMatrix<float> b, float *c, int64_t n, int64_t m, int64_t k);
void smallGemm(StridedMatrix<double> a, StridedMatrix<double> b, double *c, int64_t n, int64_t m, int64_t k);

} // namespace tg::runtime
