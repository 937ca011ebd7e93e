// cuBLAS, opened at run time like the driver: matmul on a CUDA device goes through its gemm when the library
// is there (libcublas.so.13, .12 or .11 on the loader's path or in /usr/local/cuda/lib64, or $TGC_CUBLAS: a
// path, or `none` for the generated matmul kernel).
#pragma once

#include "ir/Type.h"
#include "runtime/cuda/Driver.h"

#include <memory>
#include <string>

namespace tg::runtime::cuda {

class Cublas {
public:
  /// cuBLAS bound to `stream`, or nullptr with `why` saying what is missing.
  static std::unique_ptr<Cublas> open(CUstream stream, std::string &why);
  ~Cublas();
  Cublas(const Cublas &) = delete;
  Cublas &operator=(const Cublas &) = delete;

  const std::string &library() const { return library_; }

  /// One row-major matrix operand: a row-major matrix with leading dimension `leading`, or (transposed) the
  /// transpose of one.
  struct Operand {
    CUdeviceptr data;
    bool transposed;
    int leading;
  };
  /// c (n x m, row-major, leading dimension m) = a (n x k) @ b (k x m), in f32 or f64, queued on the stream.
  /// Throws ir::UserError naming the failed call.
  void gemm(ir::DType dtype, int n, int m, int k, const Operand &a, const Operand &b, CUdeviceptr c);

private:
  Cublas() = default;
  void *library_handle_ = nullptr;
  std::string library_;
  void *handle_ = nullptr; // cublasHandle_t
  int (*destroy_)(void *) = nullptr;
  int (*sgemm_)(void *, int, int, int, int, int, const float *, const void *, int, const void *, int,
                const float *, void *, int) = nullptr;
  int (*dgemm_)(void *, int, int, int, int, int, const double *, const void *, int, const void *, int,
                const double *, void *, int) = nullptr;
};

} // namespace tg::runtime::cuda
