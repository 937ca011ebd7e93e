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
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
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

/// The CPU that host kernels are compiled for, as LLVM describes it: "native" (this machine's CPU with the
/// features it reports) or an x86-64 CPU name LLVM knows (its own features, none of this machine's others),
/// and the vector math variants its code may call (PassPipeline.h): none beyond its instruction set.
struct HostTarget {
  llvm::orc::JITTargetMachineBuilder builder;
  std::string cpuName,
      cpuFeatures;          // features: the native CPU's; empty for a named one (its name implies them)
  bool wideVectors = false; // AVX-512: 512-bit vectors preferred
  llvm::Triple triple;
  std::unique_ptr<llvm::TargetMachine> machine;
  VectorMath vectorMath = VectorMath::None;

  /// `positionIndependent`: code for an object file that shared libraries and PIE executables link (the
  /// JIT's code is placed in memory and needs none).
  explicit HostTarget(const std::string &cpu, bool positionIndependent = false) : builder(hostBuilder()) {
    builder.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    if (positionIndependent) builder.setRelocationModel(llvm::Reloc::PIC_);
    if (cpu == "native") {
      cpuName = llvm::sys::getHostCPUName().str();
      cpuFeatures = builder.getFeatures().getString();
      wideVectors = cpuFeatures.find("+avx512f") != std::string::npos;
    } else {
      cpuName = cpu;
      builder.setCPU(cpuName);
      builder.getFeatures() = llvm::SubtargetFeatures();
      wideVectors = x86Features(cpuName).value_or(llvm::StringMap<bool>()).lookup("avx512f");
    }
    triple = builder.getTargetTriple();
    machine = orAbort(builder.createTargetMachine(), "cannot create the host target machine");
  }

  /// Lets the code call libmvec's vector variants where `available` (the program links libmvec).
  void useVectorMath(bool available) {
    if (!available) return;
    const llvm::MCSubtargetInfo &subtarget = *machine->getMCSubtargetInfo();
    vectorMath = wideVectors && subtarget.checkFeatures("+avx512f") ? VectorMath::Avx512
                 : subtarget.checkFeatures("+avx2")                 ? VectorMath::Avx2
                                                                    : VectorMath::Sse;
  }

  std::unique_ptr<llvm::Module> newModule(const std::string &name, llvm::LLVMContext &context) const {
    auto module = std::make_unique<llvm::Module>(name, context);
    module->setTargetTriple(triple.str());
    module->setDataLayout(machine->createDataLayout());
    return module;
  }

  /// Compiles `kernel` for this CPU.
  void decorate(llvm::Function &kernel) const {
    kernel.addFnAttr("target-cpu", cpuName);
    if (!cpuFeatures.empty()) kernel.addFnAttr("target-features", cpuFeatures);
    // LLVM prefers 256-bit vectors on AVX-512 CPUs (clock throttling on some); for these math-heavy loops
    // over libmvec's 16-wide variants, 512 bits measured ~1.3x faster on the 10-op chain of bench/kernels.
    if (wideVectors) kernel.addFnAttr("prefer-vector-width", "512");
  }

private:
  static llvm::orc::JITTargetMachineBuilder hostBuilder() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return orAbort(llvm::orc::JITTargetMachineBuilder::detectHost(), "cannot describe the host CPU");
  }
};

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
    auto module = host.newModule(name, *context);
    build(*module);
    llvm::Function *function = module->getFunction(name);
    TG_ASSERT(function) << "the module of " << name << " does not define it";
    function->addFnAttr("target-cpu", host.cpuName);
    if (!host.cpuFeatures.empty()) function->addFnAttr("target-features", host.cpuFeatures);
    optimizeModule(*module, *host.machine, host.vectorMath);
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

  HostCompiler() : host(chosenHostCpu()) {
    hostCompilerCreated = true;
    jit =
        orAbort(llvm::orc::LLJITBuilder()
                    .setJITTargetMachineBuilder(host.builder)
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
    bool hasLibmvec = false;
    if (host.triple.isX86() && host.triple.isOSLinux()) {
      auto vectorMath = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix);
      if (vectorMath) {
        library.addGenerator(std::move(*vectorMath));
        hasLibmvec = true;
      } else {
        llvm::consumeError(vectorMath.takeError());
      }
    }
    host.useVectorMath(hasLibmvec);
    static const char *const kVectorMathNames[] = {"", " libmvec-sse", " libmvec-avx2", " libmvec-avx512"};
    target = host.triple.str() + " " + host.cpuName + " " + host.cpuFeatures +
             kVectorMathNames[static_cast<int>(host.vectorMath)];
  }

  std::unique_ptr<llvm::Module> buildModule(llvm::LLVMContext &context, const KernelSpec &spec, HostKind kind,
                                            const std::string &name) {
    auto module = host.newModule(name, context);
    llvm::Function *function = kind == HostKind::Host ? buildHostKernel(*module, spec, name)
                                                      : buildSimDeviceKernel(*module, spec, name);
    host.decorate(*function);
    optimizeModule(*module, *host.machine, host.vectorMath);
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
  HostTarget host;
  std::string target;      // what the code depends on besides the kernel, for the disk cache's keys
  ObjectRecorder recorder; // before the JIT, whose compiler points to it
  std::unique_ptr<llvm::orc::LLJIT> jit;
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

std::string compileLibraryObject(const std::string &symbol, const std::vector<KernelSpec> &specs,
                                 const std::string &image, const std::string &cpu) {
  if (cpu != "native" && !x86Features(cpu))
    throw ir::UserError("unknown host CPU '" + cpu +
                        "'; expected native, or an x86-64 CPU name as LLVM spells it, such as x86-64-v2, "
                        "x86-64-v3 or x86-64-v4");
  HostTarget host(cpu, /*positionIndependent=*/true);
  host.useVectorMath(host.triple.isX86() && host.triple.isOSLinux()); // the library links libmvec
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = host.newModule(symbol, context);
  // The kernels are internal: two libraries that hold the same kernel link side by side.
  std::vector<llvm::Constant *> kernels;
  for (const KernelSpec &spec : specs) {
    llvm::Function *kernel = buildHostKernel(*module, spec, kernelName(spec));
    kernel->setLinkage(llvm::GlobalValue::InternalLinkage);
    host.decorate(*kernel);
    kernels.push_back(kernel);
  }
  // The tgc_library (runtime/aot/tgc_aot.h): {image, image_size, kernels, kernel_count}, each 8 bytes.
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::PointerType *pointer = llvm::PointerType::getUnqual(context);
  auto *imageData = new llvm::GlobalVariable(
      *module, llvm::ArrayType::get(llvm::Type::getInt8Ty(context), image.size()), true,
      llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantDataArray::getRaw(image, image.size(), llvm::Type::getInt8Ty(context)),
      symbol + "_image");
  imageData->setAlignment(llvm::Align(8));
  auto *kernelType = llvm::ArrayType::get(pointer, kernels.size());
  auto *kernelTable =
      new llvm::GlobalVariable(*module, kernelType, true, llvm::GlobalValue::PrivateLinkage,
                               llvm::ConstantArray::get(kernelType, kernels), symbol + "_kernels");
  auto *libraryType = llvm::StructType::get(context, {pointer, i64, pointer, i64});
  new llvm::GlobalVariable(
      *module, libraryType, true, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantStruct::get(libraryType, {imageData, llvm::ConstantInt::get(i64, image.size()),
                                              kernelTable, llvm::ConstantInt::get(i64, kernels.size())}),
      symbol);
  optimizeModule(*module, *host.machine, host.vectorMath);

  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream stream(object);
  llvm::legacy::PassManager passes;
  TG_ASSERT(!host.machine->addPassesToEmitFile(passes, stream, nullptr, llvm::CodeGenFileType::ObjectFile))
      << "the host target cannot emit object files";
  passes.run(*module);
  return std::string(object.begin(), object.end());
}

} // namespace tg::codegen
