// A fake NCCL for the fake CUDA driver (FakeCudaDriver.cpp), whose device memory is host memory: each
// collective runs at once on MPI (the run's own, which tgc has started), so that tgc's NCCL path (unique id
// exchange, communicator, calls and their arguments) runs on machines without GPUs, with real numbers for
// the collectives themselves. TGC_FAKE_NCCL_LOG=FILE appends each call, one line, to FILE.
#define OMPI_SKIP_MPICXX 1
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mpi.h>
#include <string>
#include <unistd.h>

namespace {

struct Comm {
  int rank, size;
};

struct UniqueId { // ncclUniqueId, passed by value as NCCL's API does
  char internal[128];
};

void log(const std::string &line) {
  if (const char *path = std::getenv("TGC_FAKE_NCCL_LOG")) {
    if (std::FILE *file = std::fopen(path, "a")) {
      std::fprintf(file, "%s\n", line.c_str());
      std::fclose(file);
    }
  }
}

MPI_Datatype datatype(int type) {
  switch (type) {
  case 2:
    return MPI_INT32_T;
  case 4:
    return MPI_INT64_T;
  case 7:
    return MPI_FLOAT;
  case 8:
    return MPI_DOUBLE;
  default:
    return MPI_UINT8_T;
  }
}

MPI_Op operation(int op) {
  switch (op) {
  case 1:
    return MPI_PROD;
  case 2:
    return MPI_MAX;
  case 3:
    return MPI_MIN;
  default:
    return MPI_SUM;
  }
}

} // namespace

extern "C" {

int ncclGetUniqueId(UniqueId *id) {
  std::memset(id->internal, 0, sizeof id->internal);
  std::snprintf(id->internal, sizeof id->internal, "fake nccl id of pid %d", static_cast<int>(getpid()));
  log("ncclGetUniqueId");
  return 0;
}

int ncclCommInitRank(void **comm, int size, UniqueId id, int rank) {
  *comm = new Comm{rank, size};
  log("ncclCommInitRank rank " + std::to_string(rank) + " of " + std::to_string(size) + ": " + id.internal);
  return 0;
}

int ncclCommDestroy(void *comm) {
  delete static_cast<Comm *>(comm);
  return 0;
}

int ncclAllReduce(const void *send, void *receive, size_t count, int type, int op, void *, void *) {
  log("ncclAllReduce " + std::to_string(count) + " type " + std::to_string(type) + " op " +
      std::to_string(op));
  return MPI_Allreduce(send == receive ? MPI_IN_PLACE : send, receive, static_cast<int>(count),
                       datatype(type), operation(op), MPI_COMM_WORLD);
}

int ncclBroadcast(const void *send, void *receive, size_t count, int type, int root, void *comm, void *) {
  log("ncclBroadcast " + std::to_string(count) + " root " + std::to_string(root));
  if (static_cast<Comm *>(comm)->rank == root && send != receive) std::memcpy(receive, send, count);
  return MPI_Bcast(receive, static_cast<int>(count), datatype(type), root, MPI_COMM_WORLD);
}

int ncclGroupStart() {
  return 0;
}
int ncclGroupEnd() {
  return 0;
}

const char *ncclGetErrorString(int result) {
  return result == 0 ? "no error" : "fake NCCL error";
}
}
