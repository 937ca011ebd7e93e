// PassPipeline: the LLVM passes that finish every kernel module, host and NVPTX (optimizeModule), and the
// tables of glibc's libmvec vector variants that the host pipeline maps math calls onto.
#include "codegen/PassPipeline.h"

#include "ir/Assert.h"

#include <dlfcn.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>
#include <mutex>
#include <string>
#include <vector>

namespace tg::codegen {

namespace {

/// A libmvec variant: glibc's vector ABI names it _ZGV<isa>N<lanes><a 'v' per argument>_<scalar name>, with
/// isa b (SSE), d (AVX2) or e (AVX-512); its lanes fill the register (2 doubles or 4 floats in SSE's).
struct Variant {
  std::string scalar, vector, abi;
  unsigned lanes;
  VectorMath isa;
};

/// The variants of the math functions kernels call: every MATH_OP's libm function (ir/Ops.def) and pow, for
/// f64 and f32 (`name`f), in each instruction set.
std::vector<Variant> libmvecVariants() {
  const std::pair<const char *, size_t> functions[] = {
#define MATH_OP(Enum, name, libm) {#libm, 1},
#include "ir/Ops.def"
      {"pow", 2}};
  const std::pair<char, VectorMath> isas[] = {
      {'b', VectorMath::Sse}, {'d', VectorMath::Avx2}, {'e', VectorMath::Avx512}};
  std::vector<Variant> variants;
  for (const auto &[name, arity] : functions)
    for (size_t width = 0; width < std::size(isas); ++width)
      for (bool single : {false, true}) {
        unsigned lanes = (2u << width) * (single ? 2 : 1);
        std::string arguments = std::to_string(lanes) + std::string(arity, 'v');
        std::string scalar = std::string(name) + (single ? "f" : "");
        variants.push_back({scalar,
                            "_ZGV" + std::string(1, isas[width].first) + "N" + arguments + "_" + scalar,
                            "_ZGV_LLVM_N" + arguments, lanes, isas[width].second});
      }
  return variants;
}

/// The libmvec variants host kernels may call with `allowed`: those that need no more than that instruction
/// set and that the installed libmvec exports (a kernel must never call a symbol the JIT cannot find).
const std::vector<llvm::VecDesc> &libmvecFunctions(VectorMath allowed) {
  static const std::vector<Variant> exported = [] {
    std::vector<Variant> found;
    void *library = dlopen("libmvec.so.1", RTLD_LAZY);
    if (!library) return found;
    for (Variant &variant : libmvecVariants())
      if (dlsym(library, variant.vector.c_str())) found.push_back(std::move(variant));
    return found; // the library stays loaded: the JIT links kernels against it
  }();
  static std::vector<llvm::VecDesc> byIsa[4]; // VecDescs name the strings of `exported`, which stay
  static std::once_flag split;
  std::call_once(split, [] {
    for (int isa = 0; isa < 4; ++isa)
      for (const Variant &variant : exported)
        if (variant.isa <= static_cast<VectorMath>(isa))
          byIsa[isa].emplace_back(variant.scalar, variant.vector, llvm::ElementCount::getFixed(variant.lanes),
                                  false, variant.abi);
  });
  return byIsa[static_cast<int>(allowed)];
}

} // namespace

/// The host kernels' passes (optimizeModule): inferattrs marks libm's functions as pure and
/// inject-tli-mappings names their vector variants on each call, without which the vectorizer keeps a loop
/// that calls tanhf scalar. The loops the vectorizer takes are built bottom-tested over one induction
/// variable, so loop-rotate and indvars are not needed; on the row walk of a strided kernel they rotated and
/// rewrote the outer loops, a fifth of its compile, for the same vector loop.
constexpr const char *kHostKernelPipeline =
    "inferattrs,function("
    "sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,"
    "loop-mssa(licm),"
    "inject-tli-mappings,loop-vectorize,"
    "instcombine<no-verify-fixpoint>,simplifycfg)";

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine, VectorMath vectorMath) {
  std::string problems;
  llvm::raw_string_ostream problemStream(problems);
  TG_ASSERT(!llvm::verifyModule(module, &problemStream)) << "codegen built a broken module:\n" << problems;

  // Declared in this order so that they are destroyed in the reverse one (PassBuilder's documented usage).
  llvm::LoopAnalysisManager loopAnalyses;
  llvm::FunctionAnalysisManager functionAnalyses;
  llvm::CGSCCAnalysisManager sccAnalyses;
  llvm::ModuleAnalysisManager moduleAnalyses;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder passes(&machine, tuning);
  llvm::Triple triple(module.getTargetTriple());
  llvm::TargetLibraryInfoImpl libraryInfo(triple);
  if (vectorMath != VectorMath::None) libraryInfo.addVectorizableFunctions(libmvecFunctions(vectorMath));
  // Registered before the defaults, so that it replaces theirs.
  functionAnalyses.registerPass([&] { return llvm::TargetLibraryAnalysis(libraryInfo); });
  passes.registerModuleAnalyses(moduleAnalyses);
  passes.registerCGSCCAnalyses(sccAnalyses);
  passes.registerFunctionAnalyses(functionAnalyses);
  passes.registerLoopAnalyses(loopAnalyses);
  passes.crossRegisterProxies(loopAnalyses, functionAnalyses, sccAnalyses, moduleAnalyses);
  if (triple.isNVPTX()) {
    passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, moduleAnalyses);
    return;
  }
  static std::once_flag hostOptions;
  std::call_once(hostOptions, [] {
    // A vectorized epilogue for the last few elements (under one vector times the interleave) doubles the
    // machine code of each loop and its compile time; the scalar remainder loop does that work instead.
    auto &options = llvm::cl::getRegisteredOptions();
    if (auto found = options.find("enable-epilogue-vectorization"); found != options.end())
      found->second->addOccurrence(0, "enable-epilogue-vectorization", "false");
  });
  llvm::ModulePassManager pipeline;
  llvm::Error error = passes.parsePassPipeline(pipeline, kHostKernelPipeline);
  TG_ASSERT(!error) << "bad host kernel pipeline: " << llvm::toString(std::move(error));
  pipeline.run(module, moduleAnalyses);
}

} // namespace tg::codegen
