#include "runtime/Blas.h"

#include <cctype>
#include <cstdlib>
#include <dlfcn.h>
#include <set>

namespace tg::runtime {

namespace {

/// OpenBLAS's answer to `function` ("openblas_get_corename", "openblas_get_config"), or nothing when the
/// BLAS loaded is another library.
std::optional<std::string> askOpenBlas(const char *function) {
  auto ask = reinterpret_cast<char *(*)()>(dlsym(RTLD_DEFAULT, function));
  if (!ask) return std::nullopt;
  const char *answer = ask();
  return answer ? std::optional<std::string>(answer) : std::nullopt;
}

/// OpenBLAS's core, in lower case as openblas_get_corename gives it, or nothing for another library.
std::optional<std::string> openBlasCore() {
  std::optional<std::string> core = askOpenBlas("openblas_get_corename");
  if (!core) return std::nullopt;
  std::string name;
  for (char c : *core)
    name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

} // namespace

std::string describeBlas() {
  std::optional<std::string> config = askOpenBlas("openblas_get_config");
  if (!config) return "a BLAS that does not say which kernels it runs (not OpenBLAS)";
  std::string text = *config + " (core " + askOpenBlas("openblas_get_corename").value_or("?");
  if (const char *named = std::getenv("OPENBLAS_CORETYPE"))
    text += std::string(", named by $OPENBLAS_CORETYPE=") + named;
  return text + ")";
}

std::optional<std::string> betterBlasCore() {
  std::optional<std::string> core = openBlasCore();
  if (!core) return std::nullopt;
  // OpenBLAS's cores whose kernels use AVX2 or more.
  static const std::set<std::string> kAvx2Cores{"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"};
  if (kAvx2Cores.count(*core)) return std::nullopt;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return std::nullopt;
}

bool blasHasSmallMatrixKernels() {
  static const bool has = [] {
    std::optional<std::string> core = openBlasCore();
    return core && (*core == "skylakex" || *core == "cooperlake" || *core == "sapphirerapids");
  }();
  return has;
}

} // namespace tg::runtime
