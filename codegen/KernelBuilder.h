// KernelBuilder: the kernel functions around the scalar body (ScalarEmitter.h): loads, index arithmetic and
// stores for each target, and the pass pipelines that finish a module. Internal to codegen.
//
//   host          i32 name(ptr args, i64 begin, i64 end)          a loop over [begin, end): Contiguous reads
//                                                                  inputs[k][i]; Strided walks the rows of
//                                                                  one plane (the last two axes) the caller
//                                                                  points args at (runHostKernel walks the
//                                                                  planes)
//   simulated     i32 name(ptr args, i64 count, i64 block,        threads of one block in turn, each running
//   the device            i64 blockSize, i64 gridSize)                 device's grid-stride loop NVPTX void
//   name(i64 count, i64 rank, ptr shape, ptr inputs, ptr strides, ptr output, ptr errorFlag)
//                                                                  the grid-stride loop for this thread
//
// The two device kernels share one grid-stride loop, which finds a Strided element's offsets by dividing its
// linear index by the shape.
//
// Reduction kernels (a body with `reduction` set; KernelArgs puts the reduced axes last) have the same
// signatures, over OUTPUT elements. Host: for each output o in [begin, end), acc = identity, then the reduced
// sub-space row by row (Contiguous: one flat loop over inputs[k][o * R + r]), acc = combine(acc, program),
// then output[o] = finish(acc). The innermost loop is a plain reduction LLVM vectorizes (partial
// accumulators; float sums and products are marked reassociable). Devices, one block per output:
//
//   block b: o = b, b + gridDim, ...         R = reduced elements of o
//     thread t:  p_t = combine over r = t, t + blockDim, ... < R of program(o, r)
//     warp w:    shuffle-down levels 16, 8, 4, 2, 1: lane l += lane l + offset     -> lane 0 holds warp w's
//     shared[w] = lane 0's value; barrier                                          (blockDim % 32 == 0)
//     warp 0:    v = shared[lane] (identity past the last warp); the same 5 levels -> lane 0 stores finish(v)
//     barrier (shared[] is reused by the next output)
//
//   simulated device, threads run one after another:
//     partials[t] = p_t                     for t = 0 .. blockDim-1
//     for offset = 16, 8, 4, 2, 1:          for t in increasing order, where (t % 32) + offset < 32:
//       partials[t] = combine(partials[t], partials[t + offset])   (partials[t + offset] is still this
//                                                                     level's old value: a shuffle's read)
//     partials[w] = partials[32 w] for each warp w, identity up to 32; the 5 levels again over
//     partials[0..32)
//
// so both devices combine the same values in the same tree order.
#pragma once

#include "codegen/Kernel.h"

#include <functional>
#include <set>
#include <string>

namespace llvm {
class Function;
class Module;
class TargetMachine;
} // namespace llvm

namespace tg::codegen {

/// Adds the host kernel (Kernel.h's HostKernel) named `name` to `module`.
llvm::Function *buildHostKernel(llvm::Module &module, const KernelSpec &spec, const std::string &name);

/// Adds the simulated-device kernel (Kernel.h's SimDeviceKernel) named `name` to `module`, with host math.
llvm::Function *buildSimDeviceKernel(llvm::Module &module, const KernelSpec &spec, const std::string &name);

/// Adds the PTX kernel (parameters in Kernel.h) named `name` to `module`, calling libdevice's __nv_* math
/// functions, which the caller links.
llvm::Function *buildPtxKernel(llvm::Module &module, const KernelSpec &spec, const std::string &name);

/// Adds the matmul kernel for `dtype` (Kernel.h's matmul section) to `module`: the PTX entry, or the
/// simulated-device function, both from one body of index math.
llvm::Function *buildMatmulPtxKernel(llvm::Module &module, ir::DType dtype, const std::string &name);
llvm::Function *buildMatmulSimKernel(llvm::Module &module, ir::DType dtype, const std::string &name);

/// Adds the PTX entry of the creation kernel of `kind` and `dtype` (Kernel.h) to `module`.
llvm::Function *buildCreationPtxKernel(llvm::Module &module, ir::OpKind kind, ir::DType dtype,
                                       const std::string &name);

/// PTX for `gpuArch` of the module `build` fills (the kernels `names`, libdevice linked where they call it,
/// optimized). Throws ir::UserError for an unknown architecture.
std::string emitPtxModule(const std::set<std::string> &names, const std::string &gpuArch,
                          const std::function<void(llvm::Module &)> &build);

/// The host function `name` of the module `build` fills, compiled by the process's JIT for this CPU and kept
/// in memory by name (not in the disk cache). Thread-safe.
void *compileHostFunction(const std::string &name, const std::function<void(llvm::Module &)> &build);

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
