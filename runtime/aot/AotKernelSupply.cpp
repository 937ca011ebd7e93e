#include "runtime/aot/AotKernelSupply.h"

#include "ir/SourceLoc.h"

namespace tg::runtime::aot {

namespace {

[[noreturn]] void noSimulatedDevice() {
  throw ir::UserError("a library made by tgc compile --emit=lib has no code for the simulated device");
}

} // namespace

void AotKernelSupply::add(const LibraryImage &image, void *const *kernels) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < image.hostKernels.size(); ++i)
    host_.emplace(image.hostKernels[i], kernels[i]);
  for (const auto &[name, text] : image.ptx)
    ptx_.emplace(name, text);
}

void *AotKernelSupply::hostOf(const std::string &name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = host_.find(name);
  return found == host_.end() ? nullptr : found->second;
}

std::string AotKernelSupply::ptxOf(const std::string &name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = ptx_.find(name);
  if (found == ptx_.end())
    throw ir::UserError("the library has no device kernel " + name +
                        " (was it compiled with --device=cuda or auto?)");
  return found->second;
}

codegen::HostKernel AotKernelSupply::host(codegen::KernelSpec &spec) {
  if (void *kernel = hostOf(codegen::kernelName(spec))) return reinterpret_cast<codegen::HostKernel>(kernel);
  // A Strided launch (its arguments carry strides) may take the Strided kernel for any inner strides, in the
  // usual order of outputs, which tgc compile includes for every body (and the Contiguous one where the body
  // allows it, so a Contiguous launch finds its own).
  if (spec.layout == codegen::Layout::Strided && (!spec.innerStrides.empty() || spec.blockedOutputs)) {
    spec.innerStrides.clear();
    spec.blockedOutputs = false;
    if (void *kernel = hostOf(codegen::kernelName(spec)))
      return reinterpret_cast<codegen::HostKernel>(kernel);
  }
  throw ir::UserError("the library has no host kernel for " + codegen::kernelName(spec) +
                      ": was it made by tgc compile --emit=lib from this script?");
}

codegen::SimDeviceKernel AotKernelSupply::simDevice(const codegen::KernelSpec &) {
  noSimulatedDevice();
}
codegen::SimMatmulKernel AotKernelSupply::simMatmul(ir::DType) {
  noSimulatedDevice();
}
codegen::SimCreationKernel AotKernelSupply::simCreation(ir::OpKind, ir::DType) {
  noSimulatedDevice();
}
codegen::SimIndexKernel AotKernelSupply::simIndex(codegen::IndexKernel, ir::DType) {
  noSimulatedDevice();
}
codegen::SimWindowKernel AotKernelSupply::simWindow(codegen::WindowKernel, ir::DType) {
  noSimulatedDevice();
}

std::string AotKernelSupply::ptx(const codegen::KernelSpec &spec, const std::string &) {
  return ptxOf(codegen::kernelName(spec));
}
std::string AotKernelSupply::matmulPtx(ir::DType dtype, const std::string &) {
  return ptxOf(codegen::matmulKernelName(dtype));
}
std::string AotKernelSupply::creationPtx(ir::OpKind kind, ir::DType dtype, const std::string &) {
  return ptxOf(codegen::creationKernelName(kind, dtype));
}
std::string AotKernelSupply::indexPtx(codegen::IndexKernel kind, ir::DType dtype, const std::string &) {
  return ptxOf(codegen::indexKernelName(kind, dtype));
}
std::string AotKernelSupply::windowPtx(codegen::WindowKernel kind, ir::DType dtype, const std::string &) {
  return ptxOf(codegen::windowKernelName(kind, dtype));
}

AotKernelSupply &aotKernelSupply() {
  static AotKernelSupply supply;
  return supply;
}

} // namespace tg::runtime::aot
