// KernelSupply: where the runtime gets its generated kernels. In tgc itself they come from codegen's JIT,
// which compiles each one when first asked (Kernel.h: compileHostKernel, emitPtx, ...); in a library made
// ahead of time (`tgc compile --emit=lib`), from a table of kernels compiled before (runtime/aot/). The
// runtime asks only through kernelSupply(), and so links no LLVM: which supply a program has is decided when
// it is linked (defaultKernelSupply), or for a while by a ScopedKernelSupply.
#pragma once

#include "codegen/Kernel.h"

#include <string>

namespace tg::codegen {

class KernelSupply {
public:
  virtual ~KernelSupply() = default;

  /// The host kernel for `spec`. A supply without that very kernel may make `spec` more general (a layout or
  /// inner strides that every launch of the body can use) and give that one's kernel: the caller launches it
  /// with `spec` as it is on return. Throws ir::UserError where it has none that fits.
  virtual HostKernel host(KernelSpec &spec) = 0;

  // The simulated device's kernels (Kernel.h).
  virtual SimDeviceKernel simDevice(const KernelSpec &spec) = 0;
  virtual SimMatmulKernel simMatmul(ir::DType dtype) = 0;
  virtual SimCreationKernel simCreation(ir::OpKind kind, ir::DType dtype) = 0;
  virtual SimIndexKernel simIndex(IndexKernel kind, ir::DType dtype) = 0;
  virtual SimWindowKernel simWindow(WindowKernel kind, ir::DType dtype) = 0;

  // PTX for `gpuArch`, one module holding the kernel (its entry named as Kernel.h names it).
  virtual std::string ptx(const KernelSpec &spec, const std::string &gpuArch) = 0;
  virtual std::string matmulPtx(ir::DType dtype, const std::string &gpuArch) = 0;
  virtual std::string creationPtx(ir::OpKind kind, ir::DType dtype, const std::string &gpuArch) = 0;
  virtual std::string indexPtx(IndexKernel kind, ir::DType dtype, const std::string &gpuArch) = 0;
  virtual std::string windowPtx(WindowKernel kind, ir::DType dtype, const std::string &gpuArch) = 0;
};

/// The supply a program is linked with: codegen's JIT (codegen/JitKernelSupply.cpp, in tg_codegen), or an
/// ahead-of-time library's table (runtime/aot/, in tgc's AOT runtime). Exactly one is linked.
KernelSupply &defaultKernelSupply();

/// The supply the runtime asks: the innermost ScopedKernelSupply's, else defaultKernelSupply().
KernelSupply &kernelSupply();

/// Makes `supply` the process's kernelSupply() while it lives (nests; not for use by several threads at
/// once): `tgc compile --emit=lib` records the kernels a run asks for this way.
class ScopedKernelSupply {
public:
  explicit ScopedKernelSupply(KernelSupply &supply);
  ~ScopedKernelSupply();
  ScopedKernelSupply(const ScopedKernelSupply &) = delete;
  ScopedKernelSupply &operator=(const ScopedKernelSupply &) = delete;

private:
  KernelSupply *previous_;
};

} // namespace tg::codegen
