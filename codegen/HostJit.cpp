// The host side of the code generator: one ORC LLJIT for the process, the in-memory kernel caches, and the
// host LLVM IR for --emit=llvm. Kernels are compiled for this CPU (its name and features) through the host
// pipeline of optimizeModule (PassPipeline.h), with glibc's libmvec registered so that loops over exp, log,
// sin, ... vectorize. Their object code goes to the disk cache (KernelCache.h), which a later process links
// instead of building and compiling the module.
#include "codegen/Kernel.h"
#include "codegen/KernelBuilder.h"
#include "codegen/KernelCache.h"
#include "codegen/PassPipeline.h"
#include "ir/Assert.h"
#include "ir/SourceLoc.h"

#include <llvm/ExecutionEngine/ObjectCache.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SmallVectorMemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/X86TargetParser.h>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace tg::codegen {

namespace {

/// setHostCpu's choice ("native" until it is called), read when the host compiler is created.
std::string &chosenHostCpu() {
  static std::string name = "native";
  return name;
}
bool hostCompilerCreated = false; // after which the choice no longer changes anything

/// The instruction-set features of an x86-64 CPU named as LLVM names them, with every feature they imply;
/// nullopt for a name LLVM does not know.
std::optional<llvm::StringMap<bool>> x86Features(const std::string &cpu) {
  llvm::SmallVector<llvm::StringRef, 128> known;
  llvm::X86::fillValidCPUArchList(known, /*Only64Bit=*/true);
  if (std::find(known.begin(), known.end(), cpu) == known.end()) return std::nullopt;
  llvm::SmallVector<llvm::StringRef, 64> direct;
  llvm::X86::getFeaturesForCPU(cpu, direct);
  llvm::StringMap<bool> features;
  for (llvm::StringRef feature : direct) {
    features[feature] = true;
    llvm::X86::updateImpliedFeatures(feature, true, features); // those it implies (not itself)
  }
  return features;
}

/// The features `cpu` needs that this machine lacks (x87 and the 64-bit mode every x86-64 has aside: the
/// host's feature list does not name them).
std::vector<std::string> missingOnThisMachine(const llvm::StringMap<bool> &features) {
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> missing;
  for (const auto &feature : features)
    if (feature.second && !host.lookup(feature.first()) && feature.first() != "x87" &&
        feature.first() != "64bit")
      missing.push_back(feature.first().str());
  std::sort(missing.begin(), missing.end());
  return missing;
}

template <typename T>
T orAbort(llvm::Expected<T> value, const char *what) {
  if (!value) {
    std::string message = llvm::toString(value.takeError());
    TG_ASSERT(false) << what << ": " << message;
  }
  return std::move(*value);
}

/// The host JIT's compiler: LLVM's code generator, its passes built once and run on every module (ORC's
/// SimpleCompiler builds them anew for each, an eighth of a small kernel's compile), with loop strength
/// reduction off. For these kernels that pass rewrote address arithmetic x86's addressing modes take as it
/// is (one lea per 64 elements in a vector loop), and cost a third of the compile (callgrind, a 3-input
/// strided kernel: 69 M instructions with it, 49 M without; contiguous 23 M / 15 M). LLVM reads the flag
/// when it builds the passes, so it is set for that moment; PTX is compiled as LLVM has it.
class HostObjectCompiler : public llvm::orc::IRCompileLayer::IRCompiler {
public:
  HostObjectCompiler(std::unique_ptr<llvm::TargetMachine> machine, llvm::ObjectCache *cache)
      : IRCompiler(llvm::orc::irManglingOptionsFromTargetOptions(machine->Options)),
        machine(std::move(machine)), cache(cache) {}

  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> operator()(llvm::Module &module) override {
    if (!passes) {
      llvm::cl::opt<bool> *flag = disableLsrFlag();
      bool previous = flag && flag->getValue();
      if (flag) flag->setValue(true);
      passes = std::make_unique<llvm::legacy::PassManager>();
      llvm::MCContext *context = nullptr;
      bool unsupported = machine->addPassesToEmitMC(*passes, context, stream);
      if (flag) flag->setValue(previous);
      if (unsupported) {
        passes.reset();
        return llvm::make_error<llvm::StringError>("the host target cannot emit object code",
                                                   llvm::inconvertibleErrorCode());
      }
    }
    passes->run(module); // each run initializes and finishes its own object (AsmPrinter's doFinalization)
    auto object = std::make_unique<llvm::SmallVectorMemoryBuffer>(
        std::move(bytes), module.getModuleIdentifier() + "-jitted-objectbuffer", false);
    bytes.clear();
    if (cache) cache->notifyObjectCompiled(&module, object->getMemBufferRef());
    return object;
  }

private:
  static llvm::cl::opt<bool> *disableLsrFlag() {
    auto &options = llvm::cl::getRegisteredOptions();
    auto found = options.find("disable-lsr"); // a cl::opt<bool> of LLVM's TargetPassConfig
    return found == options.end() ? nullptr : static_cast<llvm::cl::opt<bool> *>(found->second);
  }

  std::unique_ptr<llvm::TargetMachine> machine;
  llvm::ObjectCache *cache;
  llvm::SmallVector<char, 0> bytes;        // the object of the module being compiled
  llvm::raw_svector_ostream stream{bytes}; // what the passes write it to
  std::unique_ptr<llvm::legacy::PassManager> passes;
};

enum class HostKind : uint8_t { Host, SimDevice };

/// What a compiled kernel is looked up by: the spec's parts and the kind of code. The map holds its own copy
/// of the body; a lookup reads the spec's in place (CacheKeyRef), so that a launch copies nothing.
struct CacheKey {
  ir::ScalarGraph body;
  Layout layout;
  HostKind kind;
  std::vector<InnerStride> innerStrides;
  bool blockedOutputs;
};
struct CacheKeyRef {
  const ir::ScalarGraph &body;
  Layout layout;
  HostKind kind;
  const std::vector<InnerStride> &innerStrides;
  bool blockedOutputs;
  CacheKeyRef(const CacheKey &key) // NOLINT: a key is its own reference
      : body(key.body), layout(key.layout), kind(key.kind), innerStrides(key.innerStrides),
        blockedOutputs(key.blockedOutputs) {}
  CacheKeyRef(const KernelSpec &spec, HostKind kind)
      : body(*spec.body), layout(spec.layout), kind(kind), innerStrides(spec.innerStrides),
        blockedOutputs(spec.blockedOutputs) {}
};
struct CacheKeyHash {
  using is_transparent = void;
  size_t operator()(CacheKeyRef key) const {
    size_t hash = key.body.hash() * 31 + static_cast<size_t>(key.layout) * 2 + static_cast<size_t>(key.kind);
    for (InnerStride stride : key.innerStrides)
      hash = hash * 3 + static_cast<size_t>(stride);
    return hash * 2 + key.blockedOutputs;
  }
};
struct CacheKeyEqual {
  using is_transparent = void;
  bool operator()(CacheKeyRef a, CacheKeyRef b) const {
    return a.layout == b.layout && a.kind == b.kind && a.innerStrides == b.innerStrides &&
           a.blockedOutputs == b.blockedOutputs && a.body == b.body;
  }
};

/// Writes the object code of each module the JIT compiles that has a disk-cache key to the disk cache. The
/// JIT compiles on the thread that looks a kernel up, under HostCompiler's mutex, which guards `keys` too.
class ObjectRecorder : public llvm::ObjectCache {
public:
  /// The keys of modules to record, by module name (the kernel's symbol).
  std::unordered_map<std::string, KernelCacheKey> keys;

  void notifyObjectCompiled(const llvm::Module *module, llvm::MemoryBufferRef object) override {
    auto found = keys.find(module->getModuleIdentifier());
    if (found == keys.end()) return;
    writeKernelCacheEntry(found->second, std::string_view(object.getBufferStart(), object.getBufferSize()));
    keys.erase(found);
  }

  /// The disk is asked before a module is built (HostCompiler::compile), so the compiler never needs to.
  std::unique_ptr<llvm::MemoryBuffer> getObject(const llvm::Module *) override { return nullptr; }
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
    TG_ASSERT(spec.body &&
              (!spec.body->body.empty() || (spec.body->reduction && spec.body->numInputs() == 1)))
        << "a kernel needs a scalar body (or a reduction of one input)";
    std::lock_guard<std::mutex> lock(mutex);
    if (auto found = cache.find(CacheKeyRef(spec, kind)); found != cache.end()) return found->second;
    CacheKey key{*spec.body, spec.layout, kind, spec.innerStrides, spec.blockedOutputs};

    // An object from the disk defines kernelName's symbol: when another body in this process holds that name
    // (a hash collision), this kernel is compiled under a new name and kept off the disk.
    std::string stableName = kernelName(spec) + (kind == HostKind::SimDevice ? "_sim" : "");
    std::optional<KernelCacheKey> diskKey;
    if (!names.count(stableName)) {
      diskKey = kernelCacheKey(
          spec, kind == HostKind::Host ? CachedCode::HostObject : CachedCode::SimDeviceObject, target);
      if (void *code = loadCachedObject(*diskKey, stableName)) {
        cache.emplace(std::move(key), code);
        return code;
      }
    }

    std::string name = uniqueName(stableName);
    if (diskKey && name == stableName) recorder.keys.emplace(name, *diskKey);
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

  void *compileFunction(const std::string &name, const std::function<void(llvm::Module &)> &build) {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto found = functions.find(name); found != functions.end()) return found->second;
    TG_ASSERT(names.insert(name).second) << "two host functions named " << name;
    auto context = std::make_unique<llvm::LLVMContext>();
    auto module = std::make_unique<llvm::Module>(name, *context);
    module->setTargetTriple(triple.str());
    module->setDataLayout(machine->createDataLayout());
    build(*module);
    llvm::Function *function = module->getFunction(name);
    TG_ASSERT(function) << "the module of " << name << " does not define it";
    function->addFnAttr("target-cpu", cpuName);
    if (!cpuFeatures.empty()) function->addFnAttr("target-features", cpuFeatures);
    optimizeModule(*module, *machine, vectorMath);
    if (llvm::Error error =
            jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(context)))) {
      std::string message = llvm::toString(std::move(error));
      TG_ASSERT(false) << "cannot add " << name << " to the JIT: " << message;
    }
    void *code = orAbort(jit->lookup(name), "cannot compile a host function").toPtr<void *>();
    functions.emplace(name, code);
    return code;
  }

private:
  /// The kernel `name` from the disk cache's entry `key`, linked into the JIT; null when the disk has no
  /// usable entry. An object the JIT rejects is removed again, and its name left taken so that the compile
  /// that follows picks another.
  void *loadCachedObject(const KernelCacheKey &key, const std::string &name) {
    std::optional<std::string> object = readKernelCacheEntry(key);
    if (!object) return nullptr;
    names.insert(name);
    llvm::orc::ResourceTrackerSP tracker = jit->getMainJITDylib().createResourceTracker();
    llvm::Error error = jit->addObjectFile(tracker, llvm::MemoryBuffer::getMemBufferCopy(*object, name));
    if (!error) {
      llvm::Expected<llvm::orc::ExecutorAddr> address = jit->lookup(name);
      if (address) return address->toPtr<void *>();
      error = address.takeError();
    }
    llvm::consumeError(std::move(error));
    llvm::consumeError(tracker->remove());
    return nullptr;
  }

  HostCompiler() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    hostCompilerCreated = true;
    llvm::orc::JITTargetMachineBuilder machineBuilder =
        orAbort(llvm::orc::JITTargetMachineBuilder::detectHost(), "cannot describe the host CPU");
    machineBuilder.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    if (chosenHostCpu() == "native") {
      cpuName = llvm::sys::getHostCPUName().str();
      cpuFeatures = machineBuilder.getFeatures().getString();
      wideVectors = cpuFeatures.find("+avx512f") != std::string::npos;
    } else { // a named CPU (setHostCpu checked it): its own features, none of this machine's others
      cpuName = chosenHostCpu();
      machineBuilder.setCPU(cpuName);
      machineBuilder.getFeatures() = llvm::SubtargetFeatures();
      wideVectors = x86Features(cpuName).value_or(llvm::StringMap<bool>()).lookup("avx512f");
    }
    triple = machineBuilder.getTargetTriple();
    machine = orAbort(machineBuilder.createTargetMachine(), "cannot create the host target machine");
    jit =
        orAbort(llvm::orc::LLJITBuilder()
                    .setJITTargetMachineBuilder(machineBuilder)
                    .setCompileFunctionCreator(
                        [this](llvm::orc::JITTargetMachineBuilder builder)
                            -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                          auto compileMachine = builder.createTargetMachine();
                          if (!compileMachine) return compileMachine.takeError();
                          return std::make_unique<HostObjectCompiler>(std::move(*compileMachine), &recorder);
                        })
                    .create(),
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
    // The vector math variants this CPU's code may call (PassPipeline.h): none beyond its instruction set.
    if (hasLibmvec) {
      const llvm::MCSubtargetInfo &subtarget = *machine->getMCSubtargetInfo();
      vectorMath = wideVectors && subtarget.checkFeatures("+avx512f") ? VectorMath::Avx512
                   : subtarget.checkFeatures("+avx2")                 ? VectorMath::Avx2
                                                                      : VectorMath::Sse;
    }
    static const char *const kVectorMathNames[] = {"", " libmvec-sse", " libmvec-avx2", " libmvec-avx512"};
    target =
        triple.str() + " " + cpuName + " " + cpuFeatures + kVectorMathNames[static_cast<int>(vectorMath)];
  }

  std::unique_ptr<llvm::Module> buildModule(llvm::LLVMContext &context, const KernelSpec &spec, HostKind kind,
                                            const std::string &name) {
    auto module = std::make_unique<llvm::Module>(name, context);
    module->setTargetTriple(triple.str());
    module->setDataLayout(machine->createDataLayout());
    llvm::Function *function = kind == HostKind::Host ? buildHostKernel(*module, spec, name)
                                                      : buildSimDeviceKernel(*module, spec, name);
    function->addFnAttr("target-cpu", cpuName);
    if (!cpuFeatures.empty()) function->addFnAttr("target-features", cpuFeatures);
    // LLVM prefers 256-bit vectors on AVX-512 CPUs (clock throttling on some); for these math-heavy loops
    // over libmvec's 16-wide variants, 512 bits measured ~1.3x faster on the 10-op chain of bench/kernels.
    if (wideVectors) function->addFnAttr("prefer-vector-width", "512");
    optimizeModule(*module, *machine, vectorMath);
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
  std::string cpuName,
      cpuFeatures;          // features: the native CPU's; empty for a named one (its name implies them)
  bool wideVectors = false; // AVX-512: 512-bit vectors preferred
  std::string target;       // what the code depends on besides the kernel, for the disk cache's keys
  llvm::Triple triple;
  std::unique_ptr<llvm::TargetMachine> machine;
  ObjectRecorder recorder; // before the JIT, whose compiler points to it
  std::unique_ptr<llvm::orc::LLJIT> jit;
  bool hasLibmvec = false;
  VectorMath vectorMath = VectorMath::None;
  std::unordered_map<CacheKey, void *, CacheKeyHash, CacheKeyEqual> cache;
  std::unordered_set<std::string> names;             // symbols defined in the JIT
  std::unordered_map<std::string, void *> functions; // compileFunction's, by name
};

} // namespace

std::string emitHostLlvm(const KernelSpec &spec) {
  return HostCompiler::instance().llvmText(spec);
}

HostKernel compileHostKernel(const KernelSpec &spec) {
  return reinterpret_cast<HostKernel>(HostCompiler::instance().compile(spec, HostKind::Host));
}

void *compileHostFunction(const std::string &name, const std::function<void(llvm::Module &)> &build) {
  return HostCompiler::instance().compileFunction(name, build);
}

void setHostCpu(const std::string &name) {
  TG_ASSERT(!hostCompilerCreated || name == chosenHostCpu())
      << "setHostCpu(" << name << ") after the first host kernel was compiled for " << chosenHostCpu();
  if (name != "native") {
    std::optional<llvm::StringMap<bool>> features = x86Features(name);
    if (!features || !llvm::Triple(llvm::sys::getProcessTriple()).isX86())
      throw ir::UserError("unknown host CPU '" + name +
                          "'; expected native, or an x86-64 CPU name as LLVM spells it, such as x86-64-v2, "
                          "x86-64-v3 or x86-64-v4");
    std::vector<std::string> missing = missingOnThisMachine(*features);
    if (!missing.empty()) {
      std::string list;
      for (const std::string &feature : missing)
        list += (list.empty() ? "" : ", ") + feature;
      throw ir::UserError("host CPU '" + name + "': this machine (" + llvm::sys::getHostCPUName().str() +
                          ") lacks " + list + ", so code for it would not run here");
    }
  }
  chosenHostCpu() = name;
}

SimDeviceKernel compileSimDeviceKernel(const KernelSpec &spec) {
  return reinterpret_cast<SimDeviceKernel>(HostCompiler::instance().compile(spec, HostKind::SimDevice));
}

} // namespace tg::codegen
