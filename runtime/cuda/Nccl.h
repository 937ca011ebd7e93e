// NCCL, opened at run time like the driver and cuBLAS: the collectives of a distributed run on CUDA device
// memory (libnccl.so.2 on the loader's path or in /usr/local/cuda/lib64, or $TGC_NCCL: a path, or `none` to
// stage collectives through host memory). Its communicator joins the run's ranks: rank 0 makes the unique
// id and the run's communicator (MPI) hands it to the others.
#pragma once

#include "ir/Op.h"
#include "runtime/cuda/Driver.h"

#include <memory>
#include <string>
#include <vector>

namespace tg::runtime::cuda {

class Nccl {
public:
  /// NCCL's communicator of every rank of the run (a collective: every rank calls it), its work queued on
  /// `stream`; or nullptr with `why` saying what is missing.
  static std::unique_ptr<Nccl> open(CUstream stream, std::string &why);
  ~Nccl();
  Nccl(const Nccl &) = delete;
  Nccl &operator=(const Nccl &) = delete;

  const std::string &library() const { return library_; }

  // Queued on the stream; each throws ir::UserError naming the failed call.
  void allreduce(CUdeviceptr data, size_t count, ir::DType dtype, ir::OpKind combine);
  void broadcast(CUdeviceptr data, size_t bytes);
  /// Rank r's counts[r] bytes (this rank's from `local`) in rank order at `all`: one broadcast per rank in
  /// a group, since the blocks may differ in size.
  void allgather(CUdeviceptr local, CUdeviceptr all, const std::vector<size_t> &counts);

private:
  Nccl() = default;
  void check(int result, const char *call) const;

  void *libraryHandle_ = nullptr;
  std::string library_;
  void *comm_ = nullptr; // ncclComm_t
  CUstream stream_ = nullptr;
  int rank_ = 0;
  int (*commDestroy_)(void *) = nullptr;
  int (*allReduce_)(const void *, void *, size_t, int, int, void *, CUstream) = nullptr;
  int (*broadcast_)(const void *, void *, size_t, int, int, void *, CUstream) = nullptr;
  int (*groupStart_)() = nullptr;
  int (*groupEnd_)() = nullptr;
  const char *(*errorString_)(int) = nullptr;
};

} // namespace tg::runtime::cuda
