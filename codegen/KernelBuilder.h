// KernelBuilder: a fused kernel's function for each target, around the scalar body that ScalarEmitter.h
// emits: its signature, and the loads, index arithmetic and stores of its loops. Elementwise kernels are
// built in KernelBuilder.cpp, reductions in ReductionBuilder.cpp, both on LoopEmitter.h; PassPipeline.h
// optimizes the finished module. Internal to codegen.
//
// A fused kernel is one function per target (`args` points to a KernelArgs, Kernel.h):
//
//   host               i32  name(ptr args, i64 begin, i64 end)
//   simulated device   i32  name(ptr args, i64 count, i64 block, i64 blockSize, i64 gridSize)
//   NVPTX, elementwise void name(i64 count, i64 rank, ptr shape, ptr inputs, ptr strides, ptr output,
//                                ptr errorFlag)
//   NVPTX, reduction   void name(i64 count, i64 rank, ptr shape, ptr inputs, ptr strides, ptr output,
//                                ptr errorFlag, i64 reducedRank)
//
// and does, for an elementwise body (count: the output's elements)
//
//   host               elements [begin, end): Contiguous reads inputs[k][i]; Strided walks the rows of the
//                      one plane (the last two axes) the caller points args at (runHostKernel walks the
//                      planes). Returns the largest error code of the elements, kKernelOk when none
//                      failed (no early exit, so that the loops vectorize).
//   simulated device   the elements the NVPTX kernel's threads of block `block` cover, in memory order:
//                      rounds base = block * blockSize, then + gridSize * blockSize, ... below count, each
//                      the elements base .. base + blockSize - 1 (one per thread). Returns a failing
//                      element's error code, else kKernelOk.
//   NVPTX              this thread's grid-stride loop: elements blockIdx.x * blockDim.x + threadIdx.x, then
//                      + gridDim.x * blockDim.x, ... below count; a failing element stores its code in
//                      *errorFlag.
//
// and for a reduction body (count: the OUTPUT's elements; KernelArgs puts the reduced axes last)
//
//   host               outputs [begin, end), each the reduction of its sub-space: Contiguous in one flat
//                      loop, Strided row by row along the innermost reduced axis. Returns as above.
//   simulated device   outputs block, block + gridSize, ... below count, each by the NVPTX kernel's algorithm
//                      with the block's threads run one after another. Returns as above.
//   NVPTX              outputs blockIdx.x, then + gridDim.x, ... below count: the block's threads stride over
//                      the output's reduced elements and combine their partials by warp shuffles and shared
//                      memory (blockDim.x a multiple of 32); errorFlag as above.
//
// The two device kernels of an elementwise body visit the same elements per block (the simulated one a round
// of the grid-stride loop at a time) and find a Strided element's offsets the same way, by dividing its
// linear index by the shape. The two devices combine a reduction's partials in the same tree, in the same
// order (pictures in ReductionBuilder.cpp).
#pragma once

#include "codegen/Kernel.h"

#include <functional>
#include <llvm/IR/IRBuilder.h>
#include <set>
#include <string>
#include <vector>

namespace llvm {
class Function;
class Module;
} // namespace llvm

namespace tg::codegen {

/// Adds the host kernel (Kernel.h's HostKernel) named `name` to `module`.
llvm::Function *buildHostKernel(llvm::Module &module, const KernelSpec &spec, const std::string &name);

/// Adds the simulated-device kernel (Kernel.h's SimDeviceKernel) named `name` to `module`, with host math.
llvm::Function *buildSimDeviceKernel(llvm::Module &module, const KernelSpec &spec, const std::string &name);

/// Adds the PTX kernel (parameters in Kernel.h) named `name` to `module`, calling libdevice's __nv_* math
/// functions, which the caller links.
llvm::Function *buildPtxKernel(llvm::Module &module, const KernelSpec &spec, const std::string &name);

/// The body of a reduction kernel that buildHostKernel, buildSimDeviceKernel or buildPtxKernel declared
/// with its target's parameters, from the entry block on (ReductionBuilder.cpp).
void emitHostReduction(llvm::Function &function, const KernelSpec &spec);
void emitSimDeviceReduction(llvm::Function &function, const KernelSpec &spec);
void emitPtxReduction(llvm::Function &function, const KernelSpec &spec);

/// Adds the matmul kernel for `dtype` (Kernel.h's matmul section) to `module`: the PTX entry, or the
/// simulated-device function, both from one body of index math.
llvm::Function *buildMatmulPtxKernel(llvm::Module &module, ir::DType dtype, const std::string &name);
llvm::Function *buildMatmulSimKernel(llvm::Module &module, ir::DType dtype, const std::string &name);

/// Grid-stride kernels (GridStrideKernel.cpp): `element` emits the work of element `index` (i64) from the
/// parameters' values, in a loop over the elements [0, count) that a thread's grid-stride loop covers. The
/// parameters are the 8-byte fields of a parameter buffer, each of a kind:
///   NVPTX              void name(fields...), pointers to global memory
///   simulated device   void name(ptr buffer, i64 block, i64 blockSize, i64 gridSize): the loops of the
///   threads of
///                      `block`, one after the other
enum class ParameterKind { Integer, Pointer, Double };
using GridStrideBody = std::function<void(llvm::IRBuilder<> &b, const std::vector<llvm::Value *> &parameters,
                                          llvm::Value *index)>;
llvm::Function *buildGridStridePtxKernel(llvm::Module &module, const std::string &name,
                                         const std::vector<ParameterKind> &parameters, size_t countParameter,
                                         const GridStrideBody &element);
llvm::Function *buildGridStrideSimKernel(llvm::Module &module, const std::string &name,
                                         const std::vector<ParameterKind> &parameters, size_t countParameter,
                                         const GridStrideBody &element);

/// Adds the PTX entry of the creation kernel of `kind` and `dtype` (Kernel.h) to `module`.
llvm::Function *buildCreationPtxKernel(llvm::Module &module, ir::OpKind kind, ir::DType dtype,
                                       const std::string &name);

/// Adds the PTX entry of the index kernel of `kind` and `dtype` (Kernel.h) to `module`.
llvm::Function *buildIndexPtxKernel(llvm::Module &module, IndexKernel kind, ir::DType dtype,
                                    const std::string &name);

/// Adds the PTX entry of the window kernel of `kind` and `dtype` (Kernel.h) to `module`.
llvm::Function *buildWindowPtxKernel(llvm::Module &module, WindowKernel kind, ir::DType dtype,
                                     const std::string &name);

/// PTX for `gpuArch` of the module `build` fills (the kernels `names`, libdevice linked where they call it,
/// optimized). Throws ir::UserError for an unknown architecture.
std::string emitPtxModule(const std::set<std::string> &names, const std::string &gpuArch,
                          const std::function<void(llvm::Module &)> &build);

/// The host function `name` of the module `build` fills, compiled by the process's JIT for this CPU and kept
/// in memory by name (not in the disk cache). Thread-safe.
void *compileHostFunction(const std::string &name, const std::function<void(llvm::Module &)> &build);

} // namespace tg::codegen
