// The JIT's kernel supply: each kernel compiled (or read from the disk cache) when first asked, for this
// machine's CPU or the one --host-cpu names. Linked into tgc and everything built with LLVM.
#include "codegen/KernelSupply.h"

namespace tg::codegen {

namespace {

class JitKernelSupply final : public KernelSupply {
public:
  HostKernel host(KernelSpec &spec) override { return compileHostKernel(spec); }
  SimDeviceKernel simDevice(const KernelSpec &spec) override { return compileSimDeviceKernel(spec); }
  SimMatmulKernel simMatmul(ir::DType dtype) override { return compileSimMatmulKernel(dtype); }
  SimCreationKernel simCreation(ir::OpKind kind, ir::DType dtype) override {
    return compileSimCreationKernel(kind, dtype);
  }
  SimIndexKernel simIndex(IndexKernel kind, ir::DType dtype) override {
    return compileSimIndexKernel(kind, dtype);
  }
  SimWindowKernel simWindow(WindowKernel kind, ir::DType dtype) override {
    return compileSimWindowKernel(kind, dtype);
  }
  std::string ptx(const KernelSpec &spec, const std::string &gpuArch) override {
    return emitPtx(spec, gpuArch);
  }
  std::string matmulPtx(ir::DType dtype, const std::string &gpuArch) override {
    return emitMatmulPtx(dtype, gpuArch);
  }
  std::string creationPtx(ir::OpKind kind, ir::DType dtype, const std::string &gpuArch) override {
    return emitCreationPtx(kind, dtype, gpuArch);
  }
  std::string indexPtx(IndexKernel kind, ir::DType dtype, const std::string &gpuArch) override {
    return emitIndexPtx(kind, dtype, gpuArch);
  }
  std::string windowPtx(WindowKernel kind, ir::DType dtype, const std::string &gpuArch) override {
    return emitWindowPtx(kind, dtype, gpuArch);
  }
};

} // namespace

KernelSupply &defaultKernelSupply() {
  static JitKernelSupply supply;
  return supply;
}

} // namespace tg::codegen
