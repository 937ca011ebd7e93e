#include "runtime/cuda/Nccl.h"

#include "ir/Assert.h"
#include "ir/SourceLoc.h"
#include "runtime/Collectives.h"

#include <cstdlib>
#include <dlfcn.h>

namespace tg::runtime::cuda {

namespace {

// nccl.h's values (stable since NCCL 2.0).
constexpr int kInt8 = 0, kUint8 = 1, kInt32 = 2, kInt64 = 4, kFloat32 = 7, kFloat64 = 8;
constexpr int kSum = 0, kProd = 1, kMax = 2, kMin = 3;
struct UniqueId {
  char internal[128];
};
using UniqueIdFunction = int (*)(UniqueId *);
using InitRankFunction = int (*)(void **, int, UniqueId, int);

int ncclType(ir::DType dtype) {
  switch (dtype) {
  case ir::DType::F32:
    return kFloat32;
  case ir::DType::F64:
    return kFloat64;
  case ir::DType::I32:
    return kInt32;
  case ir::DType::I64:
    return kInt64;
  case ir::DType::Bool:
    return kUint8; // 0 or 1: max is `or`, min `and`
  }
  return kInt8;
}

int ncclOp(ir::OpKind combine) {
  switch (combine) {
  case ir::OpKind::Prod:
    return kProd;
  case ir::OpKind::Max:
    return kMax;
  case ir::OpKind::Min:
    return kMin;
  default:
    return kSum;
  }
}

/// Where NCCL is looked for: $TGC_NCCL alone when set, else libnccl.so.2 for the loader, then in the CUDA
/// toolkit's folder (where cuBLAS is found).
std::vector<std::string> ncclCandidates() {
  if (const char *overridden = std::getenv("TGC_NCCL"); overridden && *overridden) return {overridden};
  return {"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib64/libnccl.so.2"};
}

} // namespace

std::unique_ptr<Nccl> Nccl::open(CUstream stream, std::string &why) {
  std::unique_ptr<Nccl> nccl(new Nccl());
  std::vector<std::string> candidates = ncclCandidates();
  const char *overridden = std::getenv("TGC_NCCL");
  if (overridden && std::string(overridden) == "none") {
    why = "NCCL turned off by TGC_NCCL=none";
  } else {
    for (const std::string &candidate : candidates) {
      nccl->libraryHandle_ = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (nccl->libraryHandle_) {
        nccl->library_ = candidate;
        break;
      }
    }
    if (!nccl->libraryHandle_)
      why = "NCCL not found (tried " + candidates.front() +
            (candidates.size() > 1 ? " and " + std::to_string(candidates.size() - 1) + " others" : "") + ")";
  }
  UniqueIdFunction uniqueId = nullptr;
  InitRankFunction initRank = nullptr;
  if (void *library = nccl->libraryHandle_) {
    uniqueId = reinterpret_cast<UniqueIdFunction>(dlsym(library, "ncclGetUniqueId"));
    initRank = reinterpret_cast<InitRankFunction>(dlsym(library, "ncclCommInitRank"));
    nccl->commDestroy_ = reinterpret_cast<int (*)(void *)>(dlsym(library, "ncclCommDestroy"));
    nccl->allReduce_ = reinterpret_cast<decltype(nccl->allReduce_)>(dlsym(library, "ncclAllReduce"));
    nccl->broadcast_ = reinterpret_cast<decltype(nccl->broadcast_)>(dlsym(library, "ncclBroadcast"));
    nccl->groupStart_ = reinterpret_cast<int (*)()>(dlsym(library, "ncclGroupStart"));
    nccl->groupEnd_ = reinterpret_cast<int (*)()>(dlsym(library, "ncclGroupEnd"));
    nccl->errorString_ = reinterpret_cast<const char *(*)(int)>(dlsym(library, "ncclGetErrorString"));
    if (!uniqueId || !initRank || !nccl->commDestroy_ || !nccl->allReduce_ || !nccl->broadcast_ ||
        !nccl->groupStart_ || !nccl->groupEnd_ || !nccl->errorString_)
      why = nccl->library_ + " lacks the nccl* functions tgc calls";
  }
  // Every rank uses NCCL or none does (a rank without it would stage while the others wait in NCCL).
  Communicator &ranks = communicator();
  int everywhere = why.empty() ? 1 : 0;
  ranks.allreduce(&everywhere, 1, ir::DType::I32, ir::OpKind::Min);
  if (!everywhere) {
    if (why.empty()) why = "NCCL is missing on another rank";
    return nullptr;
  }
  nccl->rank_ = ranks.rank();
  nccl->stream_ = stream;
  UniqueId id{};
  int made = ranks.rank() == 0 ? uniqueId(&id) : 0;
  ranks.broadcast(&made, sizeof made, 0); // a failure on rank 0 is every rank's
  if (made != 0) {
    why = "ncclGetUniqueId failed on rank 0: " + std::string(nccl->errorString_(made));
    return nullptr;
  }
  ranks.broadcast(&id, sizeof id, 0);
  nccl->check(initRank(&nccl->comm_, ranks.size(), id, ranks.rank()), "ncclCommInitRank");
  return nccl;
}

Nccl::~Nccl() {
  if (comm_) commDestroy_(comm_);
  if (libraryHandle_) dlclose(libraryHandle_);
}

void Nccl::check(int result, const char *call) const {
  if (result != 0) throw ir::UserError(std::string(call) + " failed: " + errorString_(result));
}

void Nccl::allreduce(CUdeviceptr data, size_t count, ir::DType dtype, ir::OpKind combine) {
  auto *buffer = reinterpret_cast<void *>(data);
  check(allReduce_(buffer, buffer, count, ncclType(dtype), ncclOp(combine), comm_, stream_), "ncclAllReduce");
}

void Nccl::broadcast(CUdeviceptr data, size_t bytes) {
  auto *buffer = reinterpret_cast<void *>(data);
  check(broadcast_(buffer, buffer, bytes, kUint8, 0, comm_, stream_), "ncclBroadcast");
}

void Nccl::allgather(CUdeviceptr local, CUdeviceptr all, const std::vector<size_t> &counts) {
  check(groupStart_(), "ncclGroupStart");
  size_t offset = 0;
  for (size_t root = 0; root < counts.size(); ++root) {
    const void *send = static_cast<int>(root) == rank_ ? reinterpret_cast<const void *>(local) : nullptr;
    auto *receive = reinterpret_cast<void *>(all + offset);
    check(broadcast_(send, receive, counts[root], kUint8, static_cast<int>(root), comm_, stream_),
          "ncclBroadcast");
    offset += counts[root];
  }
  check(groupEnd_(), "ncclGroupEnd");
}

} // namespace tg::runtime::cuda
