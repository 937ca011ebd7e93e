// The ranks of a distributed run and the collectives between them. A process started by `mpirun -np P` is one
// of P ranks; the shard pass (opt/Shard.cpp) splits the step along its batch dimension, one block per rank,
// and inserts allreduce, allgather and shard nodes where the ranks' parts meet. The host kernels of those
// nodes run on the process's communicator: MPI, loaded at run time from libtgc_mpi.so (runtime/mpi/) so that
// tgc itself links no MPI and a run without mpirun is what it always was: one rank, whose collectives copy.
#pragma once

#include "ir/DType.h"
#include "ir/Op.h"
#include "runtime/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tg::runtime {

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "rank 1 of 2 on HOST (Open MPI v4.1.4)", for -v.
  virtual std::string describe() const = 0;
  /// Combines the ranks' `count` elements of `dtype` at `data` elementwise by `combine` (sum, prod, max or
  /// min; of bools, max is `or` and min `and`), in place, on every rank.
  virtual void allreduce(void *data, size_t count, ir::DType dtype, ir::OpKind combine) = 0;
  /// Joins the ranks' bytes in rank order into `all` on every rank: rank r gives `counts[r]` bytes (this
  /// rank's from `local`).
  virtual void allgather(const void *local, void *all, const std::vector<size_t> &counts) = 0;
  /// Rank `root`'s `bytes` bytes at `data` to every rank's `data`.
  virtual void broadcast(void *data, size_t bytes, int root) = 0;
  /// Ends every rank's process with exit code `code`: the others must not wait for a rank that failed.
  [[noreturn]] virtual void abort(int code) = 0;
};

/// What the collectives of this process have cost so far (-v and the profile).
struct CollectiveStats {
  size_t calls = 0;
  size_t bytes = 0; // each call's payload: what this rank gives or gets
  double seconds = 0;
};

/// The process's communicator: a single rank, until openDistributed opens MPI.
Communicator &communicator();
/// Whether this process was started by mpirun (Open MPI's OMPI_COMM_WORLD_SIZE or PMIx's PMIX_RANK in its
/// environment).
bool startedByMpirun();
/// Under mpirun, opens MPI (libtgc_mpi.so beside tgc's library or program, or $TGC_MPI_LIBRARY) and makes it
/// the process's communicator; nothing otherwise, or when already open. A UserError saying why when mpirun
/// started the process but MPI does not open.
void openDistributed();
const CollectiveStats &collectiveStats();
/// Adds a collective run elsewhere (a device's) to collectiveStats.
void recordCollective(size_t bytes, double seconds);

/// Rank `rank`'s block of `n` elements split among `size` ranks, as [begin, end): np.array_split's part.
std::pair<int64_t, int64_t> blockOf(int64_t n, int rank, int size);

/// Every rank's extent of the axis an allgather joins, this rank's being `own` (a collective).
std::vector<int64_t> blockExtents(int64_t own);

/// This rank's block of `tensor` along `axis` (a view).
Tensor ownBlock(const Tensor &tensor, size_t axis);

/// Runs allreduce, allgather, shard or broadcast (ir/Ops.def) on a host tensor with the process's
/// communicator.
Tensor collectiveKernel(const ir::Op &op, const Tensor &input);

} // namespace tg::runtime
