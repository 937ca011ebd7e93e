// KernelBuilder: the kernel functions around the scalar body (ScalarEmitter.h): loads, index arithmetic and
// stores for each target. Elementwise kernels are built in KernelBuilder.cpp, reductions in
// ReductionBuilder.cpp, both on LoopEmitter.h; PassPipeline.h optimizes the finished module. Internal to
// codegen.
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
// signatures, over OUTPUT elements (pictures of their loops in ReductionBuilder.cpp).
#pragma once

#include "codegen/Kernel.h"

#include <functional>
#include <set>
#include <string>

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

} // namespace tg::codegen
