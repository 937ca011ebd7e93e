// libtgc_mpi.so: the communicator of a run under mpirun, on MPI (runtime/Collectives.h loads it). It is the
// only part of tgc that links MPI, so the MPI is the one the machine's mpirun belongs to, and tgc without
// mpirun needs none. Each collective is MPI's non-blocking one, waited for with a deadline: a rank that died
// or hangs makes the others stop with an error naming the collective (mpirun names the rank), not wait
// forever. The deadline is $TGC_COLLECTIVE_TIMEOUT seconds, 300 unless set.
#include "runtime/Collectives.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mpi.h>
#include <string>
#include <thread>
#include <vector>

namespace {

using tg::ir::DType;
using tg::ir::OpKind;

class MpiCommunicator final : public tg::runtime::Communicator {
public:
  MpiCommunicator() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(host, &length);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    MPI_Get_library_version(version, &length);
    std::string library = version;
    library = library.substr(0, library.find(','));
    description_ = "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " on " + host + " (" +
                   library + ")";
    if (const char *timeout = std::getenv("TGC_COLLECTIVE_TIMEOUT")) timeoutSeconds_ = std::atof(timeout);
    if (timeoutSeconds_ <= 0) timeoutSeconds_ = 300;
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override { return description_; }

  void allreduce(void *data, size_t count, DType dtype, OpKind combine) override {
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), datatype(dtype), reduction(dtype, combine),
                   MPI_COMM_WORLD, &request);
    wait(request, "allreduce");
  }

  void allgather(const void *local, void *all, const std::vector<size_t> &counts) override {
    std::vector<int> sizes, offsets;
    int offset = 0;
    for (size_t count : counts) {
      sizes.push_back(static_cast<int>(count));
      offsets.push_back(offset);
      offset += static_cast<int>(count);
    }
    MPI_Request request;
    MPI_Iallgatherv(local, sizes[static_cast<size_t>(rank_)], MPI_BYTE, all, sizes.data(), offsets.data(),
                    MPI_BYTE, MPI_COMM_WORLD, &request);
    wait(request, "allgather");
  }

  void broadcast(void *data, size_t bytes, int root) override {
    MPI_Request request;
    MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &request);
    wait(request, "broadcast");
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
  }

private:
  static MPI_Datatype datatype(DType dtype) {
    switch (dtype) {
    case DType::F32:
      return MPI_FLOAT;
    case DType::F64:
      return MPI_DOUBLE;
    case DType::I32:
      return MPI_INT32_T;
    case DType::I64:
      return MPI_INT64_T;
    case DType::Bool:
      return MPI_UINT8_T; // 0 or 1: max is `or`, min is `and`
    }
    return MPI_BYTE;
  }

  static MPI_Op reduction(DType dtype, OpKind combine) {
    switch (combine) {
    case OpKind::Max:
      return dtype == DType::Bool ? MPI_BOR : MPI_MAX;
    case OpKind::Min:
      return dtype == DType::Bool ? MPI_BAND : MPI_MIN;
    case OpKind::Prod:
      return MPI_PROD;
    default:
      return dtype == DType::Bool ? MPI_BOR : MPI_SUM;
    }
  }

  /// Waits for `request`, polling (then napping, after the first 10 ms) until the deadline; past it,
  /// says which collective waited and ends the whole run.
  void wait(MPI_Request &request, const char *what) {
    auto start = std::chrono::steady_clock::now();
    for (;;) {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done) return;
      double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited > timeoutSeconds_) {
        std::fprintf(
            stderr,
            "tgc: error: rank %d of %d: %s waited %.0f s for the other ranks (one has died or hangs; "
            "TGC_COLLECTIVE_TIMEOUT sets the limit)\n",
            rank_, size_, what, waited);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
        std::exit(1);
      }
      if (waited < 0.01)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  int rank_ = 0, size_ = 1;
  double timeoutSeconds_ = 300;
  std::string description_;
};

} // namespace

/// Starts MPI (thread support: only the main thread calls it) and returns the communicator of its world;
/// null with `error` set when it does not start.
extern "C" __attribute__((visibility("default"))) tg::runtime::Communicator *
tgc_open_mpi(std::string *error) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      *error = "MPI_Init_thread failed";
      return nullptr;
    }
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  return new MpiCommunicator();
}
