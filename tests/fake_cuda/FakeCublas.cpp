// A fake cuBLAS for the tests: gemm computed on the host by the host's BLAS, column-major as cuBLAS defines
// it (the same BLAS the simulated device calls, so that both give the same numbers). With the fake driver,
// device memory is host memory, so a matmul that tgc's CUDA device sends to "cuBLAS" gives real numbers, and
// the tests check the row-major to column-major argument mapping against NumPy.
#include <cblas.h>
#include <cstdint>

namespace {

CBLAS_TRANSPOSE transposed(int trans) {
  return trans != 0 ? CblasTrans : CblasNoTrans;
}

// C (m x n) = alpha op(A) op(B) + beta C, all column-major (C is not read where beta is 0, as in cuBLAS).
int gemm(int transA, int transB, int m, int n, int k, const float *alpha, const float *a, int lda,
         const float *b, int ldb, const float *beta, float *c, int ldc) {
  cblas_sgemm(CblasColMajor, transposed(transA), transposed(transB), m, n, k, *alpha, a, lda, b, ldb, *beta,
              c, ldc);
  return 0;
}

int gemm(int transA, int transB, int m, int n, int k, const double *alpha, const double *a, int lda,
         const double *b, int ldb, const double *beta, double *c, int ldc) {
  cblas_dgemm(CblasColMajor, transposed(transA), transposed(transB), m, n, k, *alpha, a, lda, b, ldb, *beta,
              c, ldc);
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
