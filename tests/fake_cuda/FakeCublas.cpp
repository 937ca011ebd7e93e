// A fake cuBLAS for the tests: gemm computed on the host, column-major as cuBLAS defines it. With the fake
// driver, device memory is host memory, so a matmul that tgc's CUDA device sends to "cuBLAS" gives real
// numbers, and the tests check the row-major to column-major argument mapping against NumPy.
#include <cstdint>

namespace {

template <typename T>
int gemm(int transA, int transB, int m, int n, int k, const T *alpha, const T *a, int lda, const T *b,
         int ldb, const T *beta, T *c, int ldc) {
  // C (m x n) = alpha op(A) op(B) + beta C, all column-major: element (i, j) of X with leading dimension ld
  // is X[i + j * ld].
  auto at = [](const T *x, int ld, bool transposed, int i, int j) {
    return transposed ? x[j + i * ld] : x[i + j * ld];
  };
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      T sum = 0;
      for (int p = 0; p < k; ++p)
        sum += at(a, lda, transA != 0, i, p) * at(b, ldb, transB != 0, p, j);
      c[i + j * ldc] = *alpha * sum + (*beta == 0 ? T(0) : *beta * c[i + j * ldc]);
    }
  return 0;
}

int handle;

} // namespace

extern "C" {

__attribute__((visibility("default"))) int cublasCreate_v2(void **created) {
  *created = &handle;
  return 0;
}

__attribute__((visibility("default"))) int cublasDestroy_v2(void *) {
  return 0;
}

__attribute__((visibility("default"))) int cublasSetStream_v2(void *, void *) {
  return 0;
}

__attribute__((visibility("default"))) int cublasSgemm_v2(void *, int transA, int transB, int m, int n, int k,
                                                          const float *alpha, const float *a, int lda,
                                                          const float *b, int ldb, const float *beta,
                                                          float *c, int ldc) {
  return gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

__attribute__((visibility("default"))) int cublasDgemm_v2(void *, int transA, int transB, int m, int n, int k,
                                                          const double *alpha, const double *a, int lda,
                                                          const double *b, int ldb, const double *beta,
                                                          double *c, int ldc) {
  return gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

} // extern "C"
