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
#include <vector>

namespace tg::codegen {

namespace {

using llvm::ElementCount; // for VecFuncs.def's FIXED

/// LLVM's table of libmvec's variants (SSE and AVX2 ones of the common math functions).
const llvm::VecDesc kLlvmLibmvecFunctions[] = {
#define TLI_DEFINE_LIBMVEC_X86_VECFUNCS
#include <llvm/Analysis/VecFuncs.def>
#undef TLI_DEFINE_LIBMVEC_X86_VECFUNCS
};

/// The variants LLVM 19's table lacks, for the math functions of tgc's ops: SSE and AVX2 ones of those glibc
/// 2.35 added, and AVX-512 ones of all.
struct Variant {
  const char *scalar, *vector;
  unsigned lanes;
  const char *abi;
};
const Variant kMoreLibmvecFunctions[] = {
    {"tanhf", "_ZGVbN4v_tanhf", 4, "_ZGV_LLVM_N4v"},
    {"tanhf", "_ZGVdN8v_tanhf", 8, "_ZGV_LLVM_N8v"},
    {"tanh", "_ZGVbN2v_tanh", 2, "_ZGV_LLVM_N2v"},
    {"tanh", "_ZGVdN4v_tanh", 4, "_ZGV_LLVM_N4v"},
    {"log1pf", "_ZGVbN4v_log1pf", 4, "_ZGV_LLVM_N4v"},
    {"log1pf", "_ZGVdN8v_log1pf", 8, "_ZGV_LLVM_N8v"},
    {"log1p", "_ZGVbN2v_log1p", 2, "_ZGV_LLVM_N2v"},
    {"log1p", "_ZGVdN4v_log1p", 4, "_ZGV_LLVM_N4v"},
    {"expm1f", "_ZGVbN4v_expm1f", 4, "_ZGV_LLVM_N4v"},
    {"expm1f", "_ZGVdN8v_expm1f", 8, "_ZGV_LLVM_N8v"},
    {"expm1", "_ZGVbN2v_expm1", 2, "_ZGV_LLVM_N2v"},
    {"expm1", "_ZGVdN4v_expm1", 4, "_ZGV_LLVM_N4v"},
    {"erff", "_ZGVbN4v_erff", 4, "_ZGV_LLVM_N4v"},
    {"erff", "_ZGVdN8v_erff", 8, "_ZGV_LLVM_N8v"},
    {"erf", "_ZGVbN2v_erf", 2, "_ZGV_LLVM_N2v"},
    {"erf", "_ZGVdN4v_erf", 4, "_ZGV_LLVM_N4v"},
    {"tanhf", "_ZGVeN16v_tanhf", 16, "_ZGV_LLVM_N16v"},
    {"tanh", "_ZGVeN8v_tanh", 8, "_ZGV_LLVM_N8v"},
    {"log1pf", "_ZGVeN16v_log1pf", 16, "_ZGV_LLVM_N16v"},
    {"log1p", "_ZGVeN8v_log1p", 8, "_ZGV_LLVM_N8v"},
    {"expm1f", "_ZGVeN16v_expm1f", 16, "_ZGV_LLVM_N16v"},
    {"expm1", "_ZGVeN8v_expm1", 8, "_ZGV_LLVM_N8v"},
    {"erff", "_ZGVeN16v_erff", 16, "_ZGV_LLVM_N16v"},
    {"erf", "_ZGVeN8v_erf", 8, "_ZGV_LLVM_N8v"},
    {"expf", "_ZGVeN16v_expf", 16, "_ZGV_LLVM_N16v"},
    {"exp", "_ZGVeN8v_exp", 8, "_ZGV_LLVM_N8v"},
    {"llvm.exp.f32", "_ZGVeN16v_expf", 16, "_ZGV_LLVM_N16v"},
    {"llvm.exp.f64", "_ZGVeN8v_exp", 8, "_ZGV_LLVM_N8v"},
    {"logf", "_ZGVeN16v_logf", 16, "_ZGV_LLVM_N16v"},
    {"log", "_ZGVeN8v_log", 8, "_ZGV_LLVM_N8v"},
    {"llvm.log.f32", "_ZGVeN16v_logf", 16, "_ZGV_LLVM_N16v"},
    {"llvm.log.f64", "_ZGVeN8v_log", 8, "_ZGV_LLVM_N8v"},
    {"sinf", "_ZGVeN16v_sinf", 16, "_ZGV_LLVM_N16v"},
    {"sin", "_ZGVeN8v_sin", 8, "_ZGV_LLVM_N8v"},
    {"llvm.sin.f32", "_ZGVeN16v_sinf", 16, "_ZGV_LLVM_N16v"},
    {"llvm.sin.f64", "_ZGVeN8v_sin", 8, "_ZGV_LLVM_N8v"},
    {"cosf", "_ZGVeN16v_cosf", 16, "_ZGV_LLVM_N16v"},
    {"cos", "_ZGVeN8v_cos", 8, "_ZGV_LLVM_N8v"},
    {"llvm.cos.f32", "_ZGVeN16v_cosf", 16, "_ZGV_LLVM_N16v"},
    {"llvm.cos.f64", "_ZGVeN8v_cos", 8, "_ZGV_LLVM_N8v"},
    {"powf", "_ZGVeN16vv_powf", 16, "_ZGV_LLVM_N16vv"},
    {"pow", "_ZGVeN8vv_pow", 8, "_ZGV_LLVM_N8vv"},
    {"llvm.pow.f32", "_ZGVeN16vv_powf", 16, "_ZGV_LLVM_N16vv"},
    {"llvm.pow.f64", "_ZGVeN8vv_pow", 8, "_ZGV_LLVM_N8vv"},
};

/// The instruction set a libmvec variant is for, from its name's ISA letter ("_ZGVdN8v_expf": AVX2).
VectorMath variantIsa(llvm::StringRef vectorName) {
  char isa = vectorName.size() > 4 ? vectorName[4] : '?';
  return isa == 'b' ? VectorMath::Sse : isa == 'd' ? VectorMath::Avx2 : VectorMath::Avx512;
}

/// The libmvec variants host kernels may call with `allowed`: those of LLVM's table and tgc's that need no
/// more than that instruction set and that the installed libmvec exports (a kernel must never call a symbol
/// the JIT cannot find).
const std::vector<llvm::VecDesc> &libmvecFunctions(VectorMath allowed) {
  static const std::vector<llvm::VecDesc> exported = [] {
    std::vector<llvm::VecDesc> found;
    void *library = dlopen("libmvec.so.1", RTLD_LAZY);
    if (!library) return found;
    for (const llvm::VecDesc &function : kLlvmLibmvecFunctions)
      if (dlsym(library, function.getVectorFnName().str().c_str())) found.push_back(function);
    for (const Variant &variant : kMoreLibmvecFunctions)
      if (dlsym(library, variant.vector))
        found.emplace_back(variant.scalar, variant.vector, llvm::ElementCount::getFixed(variant.lanes), false,
                           variant.abi);
    return found; // the library stays loaded: the JIT links kernels against it
  }();
  static std::vector<llvm::VecDesc> byIsa[4];
  static std::once_flag split;
  std::call_once(split, [] {
    for (int isa = 0; isa < 4; ++isa)
      for (const llvm::VecDesc &function : exported)
        if (variantIsa(function.getVectorFnName()) <= static_cast<VectorMath>(isa))
          byIsa[isa].push_back(function);
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
