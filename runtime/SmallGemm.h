// Matrix products too small for BLAS: where a gemm call's fixed cost (argument checks, packing both operands
// into its panel layout, zeroing the result) exceeds the arithmetic, as in a small MLP's layers (300 x 2 @
// 2 x 64, 300 x 64 @ 64 x 3), a direct kernel reads the operands through their strides and computes the
// product in one pass. Compiled for AVX-512, for AVX2 with FMA and for baseline x86-64, chosen once from the
// CPU's features.
#pragma once

#include <cstdint>

namespace tg::runtime {

/// Whether an n x k @ k x m product goes to smallGemm rather than BLAS (bench/blas.py --small measures where
/// the two cross).
bool isSmallGemm(int64_t n, int64_t m, int64_t k);

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
