// PassPipeline: the LLVM passes that finish a kernel module, for the host JIT (HostJit.cpp) and for NVPTX
// (PtxEmitter.cpp). Internal to codegen.
#pragma once

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace tg::codegen {

/// Which of glibc's libmvec variants host kernels may call: those of an instruction set the target CPU has
/// and whose vector arguments its calling convention passes as the variant expects, in one register: SSE
/// ("b", 128 bits), AVX2 ("d", 256 bits), AVX-512 ("e", 512 bits, with 512-bit vectors preferred). A variant
/// beyond the target's (an AVX-512 one called from AVX2 code) receives its argument in the wrong registers.
enum class VectorMath { None, Sse, Avx2, Avx512 };

/// Optimizes `module` for `machine` (verified first: a broken module is a compiler bug). NVPTX modules get
/// LLVM's O3 pipeline. Host modules get the passes generated loops need (registers for the builder's
/// variables, the usual cleanups, loop-invariant code motion, the loop vectorizer with the vector math
/// library mapped onto calls): the same vector loops as O3 in a fraction of the compile time, which is most
/// of a kernel's first-run latency (bench/kernels: cold JIT). Loops over math functions may call the glibc
/// vector variants `vectorMath` allows (the process must be able to resolve them: libmvec.so.1 loaded).
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine, VectorMath vectorMath);

} // namespace tg::codegen
