#include "runtime/Collectives.h"

#include "ir/Assert.h"
#include "ir/SourceLoc.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <memory>

namespace tg::runtime {

namespace {

/// The one rank of a run without mpirun: every collective is a copy, or nothing.
class SingleRank final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "rank 0 of 1"; }
  void allreduce(void *, size_t, ir::DType, ir::OpKind) override {}
  void allgather(const void *local, void *all, const std::vector<size_t> &counts) override {
    std::memcpy(all, local, counts.at(0));
  }
  void broadcast(void *, size_t, int) override {}
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

std::unique_ptr<Communicator> &current() {
  static std::unique_ptr<Communicator> communicator = std::make_unique<SingleRank>();
  return communicator;
}

CollectiveStats stats;

/// libtgc_mpi.so's path: $TGC_MPI_LIBRARY, else beside the file that holds this code (tgc, libtgc.so or the
/// Python module) or in a lib folder near it (a build tree, an installed prefix).
std::string mpiLibraryPath() {
  if (const char *path = std::getenv("TGC_MPI_LIBRARY")) return path;
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&openDistributed), &info) || !info.dli_fname) return "libtgc_mpi.so";
  std::filesystem::path here = std::filesystem::path(info.dli_fname).parent_path();
  if (!info.dli_fname[0] || here.empty())
    here = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  for (const char *folder : {".", "lib", "../lib", "../../lib"}) {
    std::filesystem::path candidate = here / folder / "libtgc_mpi.so";
    if (std::filesystem::exists(candidate)) return candidate.lexically_normal().string();
  }
  return "libtgc_mpi.so"; // the loader's own search, last
}

/// Times one collective of `bytes` bytes.
template <typename F>
void timed(size_t bytes, F &&call) {
  auto start = std::chrono::steady_clock::now();
  call();
  recordCollective(bytes, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

size_t bytesOf(const Tensor &tensor) {
  return static_cast<size_t>(tensor.numElements()) * ir::dtypeSize(tensor.dtype());
}

/// A contiguous copy of `input` in a buffer of its own, to be written in place.
Tensor ownCopy(const Tensor &input) {
  Tensor copy = Tensor::empty(input.dtype(), input.shape());
  copy.copyFrom(input);
  return copy;
}

Tensor allgatherAlong(const Tensor &input, size_t axis) {
  Communicator &ranks = communicator();
  const std::vector<int64_t> &shape = input.shape();
  std::vector<int64_t> extents = blockExtents(shape[axis]);
  int64_t outer = 1, inner = static_cast<int64_t>(ir::dtypeSize(input.dtype())), total = 0;
  for (size_t i = 0; i < axis; ++i)
    outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i)
    inner *= shape[i];
  std::vector<size_t> counts;
  for (int64_t extent : extents) {
    counts.push_back(static_cast<size_t>(outer * extent * inner));
    total += extent;
  }
  std::vector<int64_t> joinedShape = shape;
  joinedShape[axis] = total;
  Tensor joined = Tensor::empty(input.dtype(), joinedShape);
  Tensor local = input.contiguous();
  if (outer == 1) { // the blocks lie one after the other: gathered in place
    timed(bytesOf(joined), [&] { ranks.allgather(local.rawData(), joined.rawData(), counts); });
    return joined;
  }
  // Rank r's block is outer runs of extents[r] * inner bytes: gathered whole, then interleaved.
  std::vector<std::byte> gathered(static_cast<size_t>(outer * total * inner));
  timed(gathered.size(), [&] { ranks.allgather(local.rawData(), gathered.data(), counts); });
  auto *out = static_cast<std::byte *>(joined.rawData());
  const std::byte *block = gathered.data();
  int64_t before = 0;
  for (int64_t extent : extents) {
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out + (o * total + before) * inner, block + o * extent * inner,
                  static_cast<size_t>(extent * inner));
    block += outer * extent * inner;
    before += extent;
  }
  return joined;
}

} // namespace

Communicator &communicator() {
  return *current();
}

const CollectiveStats &collectiveStats() {
  return stats;
}

void recordCollective(size_t bytes, double seconds) {
  stats.calls += 1;
  stats.bytes += bytes;
  stats.seconds += seconds;
}

bool startedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

void openDistributed() {
  if (!startedByMpirun() || communicator().size() > 1) return;
  std::string path = mpiLibraryPath();
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!library)
    throw ir::UserError("mpirun started tgc, but MPI cannot be loaded: " + std::string(dlerror()) +
                        " (install openmpi-bin and libopenmpi-dev, or set TGC_MPI_LIBRARY)");
  using Open = Communicator *(*)(std::string *);
  auto open = reinterpret_cast<Open>(dlsym(library, "tgc_open_mpi"));
  if (!open) throw ir::UserError(path + " is not tgc's MPI library (it has no tgc_open_mpi)");
  std::string error;
  Communicator *opened = open(&error);
  if (!opened) throw ir::UserError("mpirun started tgc, but MPI does not start: " + error);
  current().reset(opened);
}

std::pair<int64_t, int64_t> blockOf(int64_t n, int rank, int size) {
  int64_t base = n / size, extra = n % size, r = rank;
  int64_t begin = r * base + std::min(r, extra);
  return {begin, begin + base + (r < extra ? 1 : 0)};
}

std::vector<int64_t> blockExtents(int64_t own) {
  Communicator &ranks = communicator();
  std::vector<int64_t> extents(static_cast<size_t>(ranks.size()));
  timed(sizeof own,
        [&] { ranks.allgather(&own, extents.data(), std::vector<size_t>(extents.size(), sizeof own)); });
  return extents;
}

Tensor ownBlock(const Tensor &tensor, size_t axis) {
  auto [begin, end] = blockOf(tensor.shape()[axis], communicator().rank(), communicator().size());
  std::vector<int64_t> shape = tensor.shape();
  shape[axis] = end - begin;
  return tensor.view(shape, tensor.strides(), tensor.offset() + begin * tensor.strides()[axis]);
}

Tensor collectiveKernel(const ir::Op &op, const Tensor &input) {
  Communicator &ranks = communicator();
  switch (op.kind()) {
  case ir::OpKind::Allreduce: {
    Tensor result = ownCopy(input);
    timed(bytesOf(result), [&] {
      ranks.allreduce(result.rawData(), static_cast<size_t>(result.numElements()), result.dtype(),
                      op.attrs().combine);
    });
    return result;
  }
  case ir::OpKind::Allgather:
    return allgatherAlong(input, static_cast<size_t>(op.attrs().axes.at(0)));
  case ir::OpKind::Shard:
    return ownBlock(input, static_cast<size_t>(op.attrs().axes.at(0)));
  case ir::OpKind::Broadcast: {
    Tensor result = ownCopy(input);
    timed(bytesOf(result), [&] { ranks.broadcast(result.rawData(), bytesOf(result), 0); });
    return result;
  }
  default:
    TG_ASSERT(false) << op.name() << " is not a collective";
    return {};
  }
}

} // namespace tg::runtime
