#include "runtime/Blas.h"

#include "ir/Assert.h"
#include "runtime/OpenMpRuntime.h"
#include "runtime/SmallGemm.h"
#include "runtime/WorkerPool.h"

#include <algorithm>
#include <atomic>
#include <cblas.h>
#include <cctype>
#include <cstdlib>
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
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

/// The ISA oneDNN's kernels use, by the name of its enumerator without the "dnnl_cpu_isa_" prefix.
const char *oneDnnIsa() {
  switch (dnnl_get_effective_cpu_isa()) {
  case dnnl_cpu_isa_sse41:
    return "sse41";
  case dnnl_cpu_isa_avx:
    return "avx";
  case dnnl_cpu_isa_avx2:
    return "avx2";
  case dnnl_cpu_isa_avx2_vnni:
    return "avx2_vnni";
  case dnnl_cpu_isa_avx512_core:
    return "avx512_core";
  case dnnl_cpu_isa_avx512_core_vnni:
    return "avx512_core_vnni";
  case dnnl_cpu_isa_avx512_core_bf16:
    return "avx512_core_bf16";
  case dnnl_cpu_isa_avx512_core_amx:
    return "avx512_core_amx";
  default:
    return "generic";
  }
}

std::string describeOpenBlas() {
  std::optional<std::string> config = askOpenBlas("openblas_get_config");
  if (!config) return "a BLAS that does not say which kernels it runs (not OpenBLAS)";
  std::string text = *config + " (core " + askOpenBlas("openblas_get_corename").value_or("?");
  if (const char *named = std::getenv("OPENBLAS_CORETYPE"))
    text += std::string(", named by $OPENBLAS_CORETYPE=") + named;
  return text + ")";
}

/// The same matrix as the direct kernel reads it.
template <typename T>
StridedMatrix<T> strided(GemmMatrix<T> matrix) {
  return {matrix.data, matrix.transposed ? 1 : matrix.leading, matrix.transposed ? matrix.leading : 1};
}

} // namespace

void libraryGemm(GemmMatrix<float> a, GemmMatrix<float> b, float *c, int64_t n, int64_t m, int64_t k) {
  // Panels across the larger side of c: each thread then reads the other operand whole, the smaller copy.
  bool byRows = n >= m;
  int64_t side = byRows ? n : m;
  double work =
      static_cast<double>(n) * static_cast<double>(m) * static_cast<double>(std::max<int64_t>(k, 1));
  int64_t panels = std::clamp<int64_t>(std::min<double>(hostThreads(), work / kMultiplyAddsPerThread), 1,
                                       std::max<int64_t>(side, 1));
  std::atomic<int> failure{dnnl_success};
  parallelFor(panels, [&](int64_t panel) {
    int64_t begin = side * panel / panels, end = side * (panel + 1) / panels;
    if (begin == end) return;
    // The panel's first row of a and of c, or first column of b and of c.
    const float *panelA = a.data, *panelB = b.data;
    if (byRows)
      panelA += a.transposed ? begin : begin * a.leading;
    else
      panelB += b.transposed ? begin * b.leading : begin;
    float *panelC = c + (byRows ? begin * m : begin);
    OneOpenMpThread oneThread;
    dnnl_status_t status = dnnl_sgemm(a.transposed ? 'T' : 'N', b.transposed ? 'T' : 'N',
                                      byRows ? end - begin : n, byRows ? m : end - begin, k, 1.0f, panelA,
                                      a.leading, panelB, b.leading, 0.0f, panelC, std::max<int64_t>(m, 1));
    if (status != dnnl_success) failure = status;
  });
  TG_ASSERT(failure == dnnl_success) << "oneDNN's sgemm failed (status " << failure.load() << ") on " << n
                                     << " x " << k << " @ " << k << " x " << m;
}

void libraryGemm(GemmMatrix<double> a, GemmMatrix<double> b, double *c, int64_t n, int64_t m, int64_t k) {
  cblas_dgemm(CblasRowMajor, a.transposed ? CblasTrans : CblasNoTrans,
              b.transposed ? CblasTrans : CblasNoTrans, static_cast<int>(n), static_cast<int>(m),
              static_cast<int>(k), 1.0, a.data, static_cast<int>(a.leading), b.data,
              static_cast<int>(b.leading), 0.0, c, static_cast<int>(std::max<int64_t>(m, 1)));
}

void hostGemm(GemmMatrix<float> a, GemmMatrix<float> b, float *c, int64_t n, int64_t m, int64_t k) {
  if (isSmallGemm(ir::DType::F32, n, m, k)) return smallGemm(strided(a), strided(b), c, n, m, k);
  libraryGemm(a, b, c, n, m, k);
}

void hostGemm(GemmMatrix<double> a, GemmMatrix<double> b, double *c, int64_t n, int64_t m, int64_t k) {
  if (isSmallGemm(ir::DType::F64, n, m, k)) return smallGemm(strided(a), strided(b), c, n, m, k);
  libraryGemm(a, b, c, n, m, k);
}

std::string describeBlas() {
  const dnnl_version_t *version = dnnl_version();
  return "f32 oneDNN " + std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
         std::to_string(version->patch) + " (" + oneDnnIsa() + " kernels) on tgc's " +
         std::to_string(hostThreads()) + " threads; f64 " + describeOpenBlas();
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
