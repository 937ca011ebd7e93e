// The libraries that host matrix products call (runtime/MatmulKernel.cpp, and the simulated device's gemm):
// oneDNN's sgemm for f32 and the system BLAS (OpenBLAS) for f64; which ones they are, and which kernels they
// run on this CPU.
//
// f32 products run on tgc's worker pool: the product is cut into panels of rows (or columns), one per
// thread, and each panel is one single-threaded oneDNN call. So there is one set of threads in the process,
// and nothing spins between products: OpenBLAS's own threads yield in a loop for a while after each call,
// and oneDNN's OpenMP threads spin, each taking a core from the next kernel on a 2-core machine (about a
// third of the large MLP's step in bench/train). OpenBLAS cannot run one call on one thread without setting
// its thread count for the whole process (NumPy's products included); oneDNN's count is the calling thread's
// OpenMP setting. oneDNN also dispatches on the CPU's features itself, where OpenBLAS keeps the core that
// $OPENBLAS_CORETYPE names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tg::runtime {

/// A row-major matrix as gemm reads it: the operand's element (i, j) is data[i * leading + j], or
/// data[j * leading + i] when it is transposed.
template <typename T>
struct GemmMatrix {
  const T *data;
  int64_t leading;
  bool transposed;
};

/// c (n x m, C order) = a (n x k) @ b (k x m): small products (isSmallGemm) by tgc's direct kernel, the
/// others by libraryGemm. The host's matmul and the simulated device's gemm both come here, so that they sum
/// alike.
void hostGemm(GemmMatrix<float> a, GemmMatrix<float> b, float *c, int64_t n, int64_t m, int64_t k);
void hostGemm(GemmMatrix<double> a, GemmMatrix<double> b, double *c, int64_t n, int64_t m, int64_t k);

/// The same product by the library whatever its size: f32 by oneDNN on tgc's threads, f64 by OpenBLAS on
/// its own (bench/small_gemm compares it with the direct kernel).
void libraryGemm(GemmMatrix<float> a, GemmMatrix<float> b, float *c, int64_t n, int64_t m, int64_t k);
void libraryGemm(GemmMatrix<double> a, GemmMatrix<double> b, double *c, int64_t n, int64_t m, int64_t k);

/// The libraries and the kernels they chose, for `tgc run -v`: "f32 oneDNN 2.6.3 (avx512_core_bf16
/// kernels) on tgc's 2 threads; f64 OpenBLAS 0.3.21 ... (core SkylakeX)".
std::string describeBlas();

/// OpenBLAS picks its kernels when it loads, from $OPENBLAS_CORETYPE or from its own detection, which falls
/// back to kernels without AVX2 on a CPU model it does not know (Prescott's SSE3 kernels on a 5th-generation
/// Xeon: 5x slower sgemm, measured by bench/blas.py). This is the core the CPU's features call for in that
/// case: "SkylakeX" with AVX-512, "Haswell" with AVX2 and FMA; nothing when the chosen kernels already use
/// AVX2, when the CPU has neither, or when the library is not OpenBLAS.
std::optional<std::string> betterBlasCore();

/// Whether the BLAS has kernels of its own for small f64 products: OpenBLAS's AVX-512 cores (SkylakeX,
/// Cooperlake, Sapphire Rapids), which beat tgc's direct kernel up to 96^3 (bench/small_gemm), where its
/// other cores are 2-5x slower than it.
bool blasHasSmallMatrixKernels();

} // namespace tg::runtime
