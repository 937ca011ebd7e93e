// The device side of the code generator: the NVPTX module of a kernel (with the libdevice functions it calls)
// and its PTX. libdevice's bytes are read once; each kernel links a lazily loaded copy with LinkOnlyNeeded
// and internalizes it, which costs a few milliseconds where parsing the whole library would cost ~30 ms.
// PTX is kept in the disk cache (KernelCache.h).
#include "codegen/Kernel.h"
#include "codegen/KernelBuilder.h"
#include "codegen/KernelCache.h"
#include "codegen/PassPipeline.h"
#include "ir/Assert.h"
#include "ir/SourceLoc.h"

#include <cstdlib>
#include <dlfcn.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/Internalize.h>
#include <memory>
#include <mutex>
#include <set>
#include <sys/stat.h>

namespace tg::codegen {

namespace {

const char *const kTriple = "nvptx64-nvidia-cuda";

/// $TGC_LIBDEVICE; else the CUDA toolkit's; else, where that is absent, the one beside the binary that holds
/// this code (a bundle's lib/libtgc.so: tools/bundle.sh puts libdevice there).
std::string libdevicePath() {
  const char *path = std::getenv("TGC_LIBDEVICE");
  if (path && *path) return path;
  const std::string toolkit = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  struct stat info;
  if (stat(toolkit.c_str(), &info) == 0) return toolkit;
  Dl_info self;
  if (dladdr(reinterpret_cast<void *>(&libdevicePath), &self) && self.dli_fname) {
    std::string binary = self.dli_fname;
    std::string beside = binary.substr(0, binary.rfind('/') + 1) + "libdevice.10.bc";
    if (stat(beside.c_str(), &info) == 0) return beside;
  }
  return toolkit;
}

/// libdevice's bytes, read on first use and kept for the process. Throws UserError when unreadable.
const llvm::MemoryBuffer &libdeviceBytes() {
  static std::mutex mutex;
  static std::unique_ptr<llvm::MemoryBuffer> bytes;
  std::lock_guard<std::mutex> lock(mutex);
  if (bytes) return *bytes;
  std::string path = libdevicePath();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    throw ir::UserError("cannot read libdevice at " + path + " (" + file.getError().message() +
                        "): install the CUDA toolkit or set TGC_LIBDEVICE");
  bytes = std::move(*file);
  return *bytes;
}

/// libdevice as the PTX depends on it, for the disk cache's key: its path, size and modification time (read
/// without reading the file, so that a disk hit costs no more than the entry).
std::string libdeviceIdentity() {
  std::string path = libdevicePath();
  struct stat info;
  if (stat(path.c_str(), &info) != 0) return "no libdevice";
  return "libdevice " + path + " " + std::to_string(info.st_size) + " " +
         std::to_string(info.st_mtim.tv_sec) + "." + std::to_string(info.st_mtim.tv_nsec);
}

/// A target machine for `gpuArch`; throws UserError for an architecture LLVM does not know.
std::unique_ptr<llvm::TargetMachine> createMachine(const std::string &gpuArch) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string problem;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(kTriple, problem);
  TG_ASSERT(target) << "LLVM has no NVPTX target: " << problem;
  // Asked of the default processor: creating one for an unknown name would print a warning to stderr.
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(target->createMCSubtargetInfo(kTriple, "", ""));
  if (!subtarget || !subtarget->isCPUStringValid(gpuArch))
    throw ir::UserError("unknown GPU architecture '" + gpuArch + "' (expected one like sm_80 or sm_90)");
  // Default options: no FMA contraction (AllowFPOpFusion is Standard), IEEE division and square root, no
  // flush to zero, so that device results match the CPU kernels'.
  llvm::TargetOptions options;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      kTriple, gpuArch, "", options, std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

/// Links the libdevice functions that `module` calls (__nv_expf, ...) into it.
void linkLibdevice(llvm::Module &module) {
  bool needed = false;
  for (const llvm::Function &function : module)
    needed |= function.isDeclaration() && function.getName().starts_with("__nv_");
  if (!needed) return;
  llvm::Expected<std::unique_ptr<llvm::Module>> library =
      llvm::getLazyBitcodeModule(libdeviceBytes().getMemBufferRef(), module.getContext());
  if (!library)
    throw ir::UserError("cannot load libdevice at " + libdevicePath() + ": " + toString(library.takeError()));
  // libdevice says nvptx64-nvidia-gpulibs; the same layout under our triple keeps the linker from warning.
  (*library)->setTargetTriple(module.getTargetTriple());
  (*library)->setDataLayout(module.getDataLayout());
  TG_ASSERT(!llvm::Linker::linkModules(module, std::move(*library), llvm::Linker::LinkOnlyNeeded))
      << "cannot link libdevice into " << module.getName().str();
}

/// The optimized NVPTX module of the kernels `names` that `build` adds: the kernels, the libdevice functions
/// they use (internal, mostly inlined), nvvm-reflect-ftz = 0 (libdevice keeps denormals, as the CPU does).
std::unique_ptr<llvm::Module> buildDeviceModule(llvm::LLVMContext &context,
                                                const std::set<std::string> &names,
                                                llvm::TargetMachine &machine,
                                                const std::function<void(llvm::Module &)> &build) {
  auto module = std::make_unique<llvm::Module>(*names.begin(), context);
  module->setTargetTriple(kTriple);
  module->setDataLayout(machine.createDataLayout());
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  build(*module);
  linkLibdevice(*module);
  llvm::internalizeModule(
      *module, [&](const llvm::GlobalValue &value) { return names.count(value.getName().str()) > 0; });
  optimizeModule(*module, machine, VectorMath::None);
  return module;
}

std::unique_ptr<llvm::Module> buildDeviceModule(llvm::LLVMContext &context, const KernelSpec &spec,
                                                llvm::TargetMachine &machine) {
  TG_ASSERT(spec.body && (!spec.body->body.empty() || (spec.body->reduction && spec.body->numInputs() == 1)))
      << "a kernel needs a scalar body (or a reduction of one input)";
  std::string name = kernelName(spec);
  return buildDeviceModule(context, {name}, machine,
                           [&](llvm::Module &module) { buildPtxKernel(module, spec, name); });
}

std::string printPtx(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream stream(ptx);
  llvm::legacy::PassManager passes;
  TG_ASSERT(!machine.addPassesToEmitFile(passes, stream, nullptr, llvm::CodeGenFileType::AssemblyFile))
      << "the NVPTX target cannot emit PTX";
  passes.run(module);
  return ptx.str().str();
}

} // namespace

std::string emitDeviceLlvm(const KernelSpec &spec, const std::string &gpuArch) {
  std::unique_ptr<llvm::TargetMachine> machine = createMachine(gpuArch);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = buildDeviceModule(context, spec, *machine);
  std::string text;
  llvm::raw_string_ostream stream(text);
  module->print(stream, nullptr);
  return text;
}

std::string emitPtx(const KernelSpec &spec, const std::string &gpuArch) {
  TG_ASSERT(spec.body && (!spec.body->body.empty() || (spec.body->reduction && spec.body->numInputs() == 1)))
      << "a kernel needs a scalar body (or a reduction of one input)";
  KernelCacheKey key = kernelCacheKey(spec, CachedCode::Ptx, gpuArch + " " + libdeviceIdentity());
  if (std::optional<std::string> cached = readKernelCacheEntry(key)) return *cached;
  std::unique_ptr<llvm::TargetMachine> machine = createMachine(gpuArch);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = buildDeviceModule(context, spec, *machine);
  std::string ptx = printPtx(*module, *machine);
  writeKernelCacheEntry(key, ptx);
  return ptx;
}

std::string emitPtxModule(const std::set<std::string> &names, const std::string &gpuArch,
                          const std::function<void(llvm::Module &)> &build) {
  std::unique_ptr<llvm::TargetMachine> machine = createMachine(gpuArch);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = buildDeviceModule(context, names, *machine, build);
  return printPtx(*module, *machine);
}

std::string emitPtx(const PtxModuleKernels &kernels, const std::string &gpuArch) {
  std::set<std::string> names;
  std::vector<std::function<void(llvm::Module &)>> builders;
  for (const KernelSpec &spec : kernels.fused)
    if (std::string name = kernelName(spec); names.insert(name).second)
      builders.push_back([&spec, name](llvm::Module &module) { buildPtxKernel(module, spec, name); });
  for (ir::DType dtype : kernels.matmuls)
    if (std::string name = matmulKernelName(dtype); names.insert(name).second)
      builders.push_back([dtype, name](llvm::Module &module) { buildMatmulPtxKernel(module, dtype, name); });
  for (auto [kind, dtype] : kernels.creations)
    if (std::string name = creationKernelName(kind, dtype); names.insert(name).second)
      builders.push_back(
          [kind, dtype, name](llvm::Module &module) { buildCreationPtxKernel(module, kind, dtype, name); });
  for (auto [kind, dtype] : kernels.indexing)
    if (std::string name = indexKernelName(kind, dtype); names.insert(name).second)
      builders.push_back(
          [kind, dtype, name](llvm::Module &module) { buildIndexPtxKernel(module, kind, dtype, name); });
  for (auto [kind, dtype] : kernels.windows)
    if (std::string name = windowKernelName(kind, dtype); names.insert(name).second)
      builders.push_back(
          [kind, dtype, name](llvm::Module &module) { buildWindowPtxKernel(module, kind, dtype, name); });
  TG_ASSERT(!names.empty()) << "a PTX module of no kernel";
  return emitPtxModule(names, gpuArch, [&](llvm::Module &module) {
    for (const auto &build : builders)
      build(module);
  });
}

} // namespace tg::codegen
