#include "runtime/cuda/Cublas.h"

#include "ir/Assert.h"
#include "ir/SourceLoc.h"

#include <cstdlib>
#include <dlfcn.h>
#include <vector>

namespace tg::runtime::cuda {

namespace {

constexpr int kOpN = 0, kOpT = 1; // cublasOperation_t

/// Where cuBLAS is looked for, in order: $TGC_CUBLAS alone when it is set (a path, or a file name for the
/// loader to find); else each version tgc knows by file name (on the loader's path: LD_LIBRARY_PATH,
/// ld.so.conf), then in the CUDA toolkit's folder, which the loader searches only where configured to.
std::vector<std::string> cublasCandidates() {
  if (const char *overridden = std::getenv("TGC_CUBLAS"); overridden && *overridden) return {overridden};
  std::vector<std::string> names{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"};
  std::vector<std::string> candidates = names;
  for (const std::string &name : names)
    candidates.push_back("/usr/local/cuda/lib64/" + name);
  return candidates;
}

} // namespace

std::unique_ptr<Cublas> Cublas::open(CUstream stream, std::string &why) {
  if (const char *overridden = std::getenv("TGC_CUBLAS"); overridden && std::string(overridden) == "none") {
    why = "cuBLAS turned off by TGC_CUBLAS=none";
    return nullptr;
  }
  std::vector<std::string> candidates = cublasCandidates();
  std::unique_ptr<Cublas> cublas(new Cublas());
  std::string failure; // why a library that exists did not load (a missing libcublasLt, say)
  for (const std::string &candidate : candidates) {
    cublas->library_handle_ = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (cublas->library_handle_) {
      cublas->library_ = candidate;
      break;
    }
    const char *reason = dlerror();
    if (reason && failure.empty() && !std::string(reason).ends_with("No such file or directory"))
      failure = reason;
  }
  if (!cublas->library_handle_) {
    why = "cuBLAS not found (tried " + candidates.front() +
          (candidates.size() > 1 ? " and " + std::to_string(candidates.size() - 1) + " others" : "") + ")" +
          (failure.empty() ? "" : ": " + failure);
    return nullptr;
  }
  void *library = cublas->library_handle_;
  auto create = reinterpret_cast<int (*)(void **)>(dlsym(library, "cublasCreate_v2"));
  auto setStream = reinterpret_cast<int (*)(void *, CUstream)>(dlsym(library, "cublasSetStream_v2"));
  cublas->destroy_ = reinterpret_cast<int (*)(void *)>(dlsym(library, "cublasDestroy_v2"));
  cublas->sgemm_ = reinterpret_cast<decltype(cublas->sgemm_)>(dlsym(library, "cublasSgemm_v2"));
  cublas->dgemm_ = reinterpret_cast<decltype(cublas->dgemm_)>(dlsym(library, "cublasDgemm_v2"));
  if (!create || !setStream || !cublas->destroy_ || !cublas->sgemm_ || !cublas->dgemm_) {
    why = cublas->library_ + " lacks the cublas*_v2 functions tgc calls";
    return nullptr;
  }
  if (int status = create(&cublas->handle_); status != 0) {
    why = "cublasCreate failed with status " + std::to_string(status);
    cublas->handle_ = nullptr;
    return nullptr;
  }
  if (int status = setStream(cublas->handle_, stream); status != 0) {
    why = "cublasSetStream failed with status " + std::to_string(status);
    return nullptr;
  }
  return cublas;
}

Cublas::~Cublas() {
  if (handle_) destroy_(handle_);
  if (library_handle_) dlclose(library_handle_);
}

void Cublas::gemm(ir::DType dtype, int n, int m, int k, const Operand &a, const Operand &b, CUdeviceptr c) {
  // cuBLAS is column-major: a row-major matrix is its transpose there. So C (n x m, row-major) is computed as
  // C^T = B^T A^T (m x n, column-major), each operand read as stored (N) or transposed (T).
  int opB = b.transposed ? kOpT : kOpN, opA = a.transposed ? kOpT : kOpN;
  auto *bData = reinterpret_cast<const void *>(b.data), *aData = reinterpret_cast<const void *>(a.data);
  auto *cData = reinterpret_cast<void *>(c);
  int status = 0;
  if (dtype == ir::DType::F32) {
    float one = 1, zero = 0;
    status = sgemm_(handle_, opB, opA, m, n, k, &one, bData, b.leading, aData, a.leading, &zero, cData,
                    std::max(1, m));
  } else {
    TG_ASSERT(dtype == ir::DType::F64) << "cuBLAS gemm of " << ir::dtypeName(dtype);
    double one = 1, zero = 0;
    status = dgemm_(handle_, opB, opA, m, n, k, &one, bData, b.leading, aData, a.leading, &zero, cData,
                    std::max(1, m));
  }
  if (status != 0)
    throw ir::UserError(std::string(dtype == ir::DType::F32 ? "cublasSgemm" : "cublasDgemm") +
                        " failed with status " + std::to_string(status));
}

} // namespace tg::runtime::cuda
