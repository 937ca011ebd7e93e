// The kernel supply of libraries made ahead of time (the AOT runtime's defaultKernelSupply): the host
// kernels of every library opened in the process, looked up by name (codegen::kernelName, a hash of what the
// kernel computes, so one name is one kernel whichever library holds it), and the PTX of their images. No
// kernel is compiled: a launch whose exact kernel the library lacks (operands of a layout the dry run of
// `tgc compile --emit=lib` did not see) gets the general one of its body, which every library holds.
#pragma once

#include "codegen/KernelSupply.h"
#include "runtime/aot/LibraryImage.h"

#include <mutex>
#include <string>
#include <unordered_map>

namespace tg::runtime::aot {

class AotKernelSupply final : public codegen::KernelSupply {
public:
  /// Adds the kernels of `image`, whose host functions are `kernels` (in its order). Thread-safe.
  void add(const LibraryImage &image, void *const *kernels);

  /// The kernel of `spec`, else, for a Strided one, the Strided kernel of any inner strides and the usual
  /// order of outputs. ir::UserError when the library has none (a library of another script).
  codegen::HostKernel host(codegen::KernelSpec &spec) override;
  codegen::SimDeviceKernel simDevice(const codegen::KernelSpec &spec) override;
  codegen::SimMatmulKernel simMatmul(ir::DType dtype) override;
  codegen::SimCreationKernel simCreation(ir::OpKind kind, ir::DType dtype) override;
  codegen::SimIndexKernel simIndex(codegen::IndexKernel kind, ir::DType dtype) override;
  codegen::SimWindowKernel simWindow(codegen::WindowKernel kind, ir::DType dtype) override;
  std::string ptx(const codegen::KernelSpec &spec, const std::string &gpuArch) override;
  std::string matmulPtx(ir::DType dtype, const std::string &gpuArch) override;
  std::string creationPtx(ir::OpKind kind, ir::DType dtype, const std::string &gpuArch) override;
  std::string indexPtx(codegen::IndexKernel kind, ir::DType dtype, const std::string &gpuArch) override;
  std::string windowPtx(codegen::WindowKernel kind, ir::DType dtype, const std::string &gpuArch) override;

private:
  void *hostOf(const std::string &name);
  std::string ptxOf(const std::string &name);

  std::mutex mutex_;
  std::unordered_map<std::string, void *> host_;
  std::unordered_map<std::string, std::string> ptx_;
};

/// The process's supply (defaultKernelSupply in the AOT runtime).
AotKernelSupply &aotKernelSupply();

} // namespace tg::runtime::aot
