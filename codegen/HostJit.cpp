// The host side of the code generator: one ORC LLJIT for the process, the in-memory kernel caches, and the
// host LLVM IR for --emit=llvm. Kernels are compiled for this CPU (its name and features), at O3, with
// glibc's libmvec registered so that loops over exp, log, sin, ... vectorize.
#include "codegen/Kernel.h"
#include "codegen/KernelBuilder.h"
#include "ir/Assert.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace tg::codegen {

namespace {

template <typename T>
T orAbort(llvm::Expected<T> value, const char *what) {
  if (!value) {
    std::string message = llvm::toString(value.takeError());
    TG_ASSERT(false) << what << ": " << message;
  }
  return std::move(*value);
}

enum class HostKind : uint8_t { Host, SimDevice };

struct CacheKey {
  ir::ScalarGraph body;
  Layout layout;
  HostKind kind;
  bool operator==(const CacheKey &other) const {
    return layout == other.layout && kind == other.kind && body == other.body;
  }
};
struct CacheKeyHash {
  size_t operator()(const CacheKey &key) const {
    return key.body.hash() * 31 + static_cast<size_t>(key.layout) * 2 + static_cast<size_t>(key.kind);
  }
};

/// The process's host compiler: the JIT, the target machine the optimizer tunes for, and the caches. One
/// mutex serializes compiles and guards the caches (a cached lookup waits for a compile in progress).
class HostCompiler {
public:
  static HostCompiler &instance() {
    static HostCompiler compiler;
    return compiler;
  }

  std::string llvmText(const KernelSpec &spec) {
    std::lock_guard<std::mutex> lock(mutex);
    llvm::LLVMContext context;
    std::unique_ptr<llvm::Module> module = buildModule(context, spec, HostKind::Host, kernelName(spec));
    std::string text;
    llvm::raw_string_ostream stream(text);
    module->print(stream, nullptr);
    return text;
  }

  void *compile(const KernelSpec &spec, HostKind kind) {
    TG_ASSERT(spec.body && !spec.body->body.empty()) << "a kernel needs a scalar body";
    std::lock_guard<std::mutex> lock(mutex);
    CacheKey key{*spec.body, spec.layout, kind};
    if (auto found = cache.find(key); found != cache.end()) return found->second;

    std::string name = uniqueName(kernelName(spec) + (kind == HostKind::SimDevice ? "_sim" : ""));
    auto context = std::make_unique<llvm::LLVMContext>();
    std::unique_ptr<llvm::Module> module = buildModule(*context, spec, kind, name);
    llvm::orc::ThreadSafeModule threadSafe(std::move(module), std::move(context));
    if (llvm::Error error = jit->addIRModule(std::move(threadSafe))) {
      std::string message = llvm::toString(std::move(error));
      TG_ASSERT(false) << "cannot add kernel " << name << " to the JIT: " << message;
    }
    void *code = orAbort(jit->lookup(name), "cannot compile a host kernel").toPtr<void *>();
    cache.emplace(std::move(key), code);
    return code;
  }

private:
  HostCompiler() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::orc::JITTargetMachineBuilder machineBuilder =
        orAbort(llvm::orc::JITTargetMachineBuilder::detectHost(), "cannot describe the host CPU");
    machineBuilder.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    cpuName = llvm::sys::getHostCPUName().str();
    cpuFeatures = machineBuilder.getFeatures().getString();
    triple = machineBuilder.getTargetTriple();
    machine = orAbort(machineBuilder.createTargetMachine(), "cannot create the host target machine");
    jit = orAbort(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(machineBuilder)).create(),
                  "cannot create the host JIT");
    char prefix = jit->getDataLayout().getGlobalPrefix();
    llvm::orc::JITDylib &library = jit->getMainJITDylib();
    // libm and the rest of the process (expf, fmodf, ...).
    library.addGenerator(orAbort(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix),
                                 "cannot search the process for symbols"));
    // libmvec's vector variants (_ZGVdN8v_expf, ...): loaded here, since a linker with --as-needed drops it
    // from the executable (nothing but generated code calls it). Without it, loops over math calls stay
    // scalar.
    if (triple.isX86() && triple.isOSLinux()) {
      auto vectorMath = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix);
      if (vectorMath) {
        library.addGenerator(std::move(*vectorMath));
        hasLibmvec = true;
      } else {
        llvm::consumeError(vectorMath.takeError());
      }
    }
  }

  std::unique_ptr<llvm::Module> buildModule(llvm::LLVMContext &context, const KernelSpec &spec, HostKind kind,
                                            const std::string &name) {
    auto module = std::make_unique<llvm::Module>(name, context);
    module->setTargetTriple(triple.str());
    module->setDataLayout(machine->createDataLayout());
    llvm::Function *function = kind == HostKind::Host ? buildHostKernel(*module, spec, name)
                                                      : buildSimDeviceKernel(*module, spec, name);
    function->addFnAttr("target-cpu", cpuName);
    function->addFnAttr("target-features", cpuFeatures);
    optimizeModule(*module, *machine, hasLibmvec);
    return module;
  }

  /// `name`, or `name` with a suffix when another body already took it (a hash collision).
  std::string uniqueName(const std::string &name) {
    std::string unique = name;
    for (int suffix = 1; !names.insert(unique).second; ++suffix)
      unique = name + "_" + std::to_string(suffix);
    return unique;
  }

  std::mutex mutex;
  std::string cpuName, cpuFeatures;
  llvm::Triple triple;
  std::unique_ptr<llvm::TargetMachine> machine;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  bool hasLibmvec = false;
  std::unordered_map<CacheKey, void *, CacheKeyHash> cache;
  std::unordered_set<std::string> names; // symbols defined in the JIT
};

} // namespace

std::string emitHostLlvm(const KernelSpec &spec) {
  return HostCompiler::instance().llvmText(spec);
}

HostKernel compileHostKernel(const KernelSpec &spec) {
  return reinterpret_cast<HostKernel>(HostCompiler::instance().compile(spec, HostKind::Host));
}

SimDeviceKernel compileSimDeviceKernel(const KernelSpec &spec) {
  return reinterpret_cast<SimDeviceKernel>(HostCompiler::instance().compile(spec, HostKind::SimDevice));
}

} // namespace tg::codegen
