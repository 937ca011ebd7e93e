// The BLAS library that host matmuls call (runtime/MatmulKernel.cpp), as it loaded: which one, and which
// kernels it runs on this CPU.
#pragma once

#include <optional>
#include <string>

namespace tg::runtime {

/// The library and the kernels it chose, for `tgc run -v`: "OpenBLAS 0.3.21 ... (core SkylakeX)".
std::string describeBlas();

/// OpenBLAS picks its kernels when it loads, from $OPENBLAS_CORETYPE or from its own detection, which falls
/// back to kernels without AVX2 on a CPU model it does not know (Prescott's SSE3 kernels on a 5th-generation
/// Xeon: 5x slower sgemm, measured by bench/blas.py). This is the core the CPU's features call for in that
/// case: "SkylakeX" with AVX-512, "Haswell" with AVX2 and FMA; nothing when the chosen kernels already use
/// AVX2, when the CPU has neither, or when the library is not OpenBLAS.
std::optional<std::string> betterBlasCore();

/// Whether the BLAS has kernels of its own for small products: OpenBLAS's AVX-512 cores (SkylakeX,
/// Cooperlake, Sapphire Rapids), which beat tgc's direct kernel up to 96^3 (bench/small_gemm), where its
/// other cores are 2-5x slower than it.
bool blasHasSmallMatrixKernels();

} // namespace tg::runtime
