// The code generator for fused kernels: one ScalarGraph (ir/ScalarGraph.h) becomes one kernel that runs the
// scalar program once per output element, or, for a reduction with a prologue, once per element of the
// iteration space, reducing into the outputs in the same kernel. The same generator targets the host (ORC
// LLJIT, a loop over a range of elements) and NVPTX (PTX for a CUDA GPU, a grid-stride loop); the simulated
// device runs the NVPTX kernel's index math compiled for the host. LLVM stays inside codegen's .cpp files:
// this header has none.
//
// Semantics are those of the CPU kernels (runtime/ElementwiseKernels.cpp, NumPy's): integer arithmetic wraps,
// `mod` takes the divisor's sign, integer `pow` of a negative exponent is an error (kNegativeIntegerPower),
// maximum/minimum/clip propagate NaN, casts follow scalar::Cast (codegen/ScalarOps.h). Host and
// simulated-device kernels call the same libm functions as the CPU kernels (or libmvec's vector variants, a
// few ulps apart); PTX kernels call libdevice's, within its documented error bounds. All else is bitwise the
// CPU kernels' result.
#pragma once

#include "ir/ScalarGraph.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tg::codegen {

/// How a kernel reads its inputs, fixed when it is compiled (part of any cache key).
enum class Layout : uint8_t {
  /// Every input has the output's element count and is C-contiguous: element i of input k is inputs[k][i].
  Contiguous,
  /// General: output multi-index (i_0 .. i_{r-1}) reads input k at sum_j i_j * strides[k * rank + j]
  /// (strides in elements, 0 along broadcast axes). Covers broadcasting and any views, and rank 0.
  Strided,
};

/// One input of a kernel, as far as its layout goes: its shape, and its strides in elements (one per axis),
/// or none where they are not known (a static type), which reads it as C-contiguous.
struct LayoutInput {
  std::span<const int64_t> shape;
  std::span<const int64_t> strides = {};
};

/// The layout of the kernel of `body` that reads `inputs` over the iteration space `space` (their broadcast
/// shape; for an elementwise body also broadcast with the output's) and, for a reduction body, reduces the
/// axes `reducedAxes` of it (each in [-rank, rank), as the op holds them). The one place that decides it: the
/// runtime asks with its tensors' shapes and strides, --emit=llvm and --emit=ptx with the static types.
///
/// A body with a gather is Strided (its tables are addressed through their strides). Otherwise
/// Contiguous when every input's element i, in the order the kernel walks the space (a reduction's: the kept
/// axes, then the reduced ones, as KernelArgs has them), is inputs[k][i]: along every axis longer than 1,
/// taken in that order, the input's stride (0 where it is broadcast) is the product of the sizes of the axes
/// after it. An elementwise kernel also wants every input of exactly the space's shape (rank included: an
/// input without the space's leading 1s is Strided), and compares strides only up to the first empty axis
/// from the innermost, as Tensor::isContiguous does. A reduction with extra outputs (C-contiguous over the
/// space) also wants the walk's order to be C order: its reduced axes the trailing ones. Otherwise Strided.
Layout kernelLayout(const ir::ScalarGraph &body, std::span<const int64_t> space,
                    std::span<const LayoutInput> inputs, std::span<const int64_t> reducedAxes = {});

/// Run-time arguments, the same for every host and simulated-device kernel (host ABI; the generated code
/// reads the fields at these offsets: rank 0, shape 8, inputs 16, strides 24, output 32, reducedRank 40).
///
/// Reduction kernels (a body with `reduction` set) iterate over the inputs' broadcast shape with its axes
/// reordered by the caller so that the kept axes come first and the reduced axes last:
///
///   shape   = [kept_0 .. kept_{k-1}, reduced_0 .. reduced_{m-1}]   rank = k + m, reducedRank = m
///   strides = each input's strides in that same order (0 along broadcast axes)
///   output  = C-contiguous over the kept axes: element o is the reduction of the iteration space's
///             elements (unravel(o) over the kept axes, any index over the reduced axes)
///
/// Contiguous then means: every input is C-contiguous over the reordered space (element (o, r) of input k,
/// r the linear index in the reduced sub-space, is inputs[k][o * reducedCount + r]), which is the case when
/// the trailing axes of contiguous, unbroadcast inputs are reduced. keepdims does not change the output's
/// memory (its size-1 axes hold no data). A reduced sub-space of zero elements gives the identity (sum 0,
/// prod 1, mean NaN, any false, all true); max and min of one is the caller's error to report.
struct KernelArgs {
  int64_t rank;
  const int64_t *shape;      // iteration shape (rank entries): the output's for elementwise kernels
  const void *const *inputs; // base pointer of each input, already at the view's first element, then of
                             // each extra output (ScalarGraph::extraOutputs: C-contiguous over the output's
                             // shape, written like `output`, never overlapping an input)
  const int64_t *strides;    // numArrays * rank entries, array-major (inputs, then extra outputs); read by
                             // Strided kernels only. A gather's table has its strides in the space there
                             // (ir::tableInSpace); after them come two words per gathered axis of the body
                             // (ScalarGraph::gatheredAxes), in the order of its gathers: the axis's size
                             // and the table's stride along it
  void *output;              // C-contiguous, the output's shape (reductions: over the kept axes); never
                             // overlaps an input (kernels are compiled on that promise)
  int64_t reducedRank = 0;   // reductions: how many trailing axes of `shape` are reduced; else unused
};
// Elements in memory: bool is one byte holding 0 or 1, i32/i64 are int32_t/int64_t, f32/f64 float/double.

/// Host kernel: computes output elements [begin, end) (linear C-order indices; a reduction kernel reduces the
/// sub-space of each) and returns kKernelOk, or the largest error code of the elements that failed (every
/// element is computed all the same; what a failed one wrote is unspecified). Ranges of one kernel may run on
/// several threads at once.
/// A Strided elementwise kernel computes elements [begin, end) of ONE plane, the space's last two axes, which
/// it is given as a rank-2 space: `shape` the plane's two sizes, `strides` each input's two strides along
/// them, `inputs` and `output` at the plane's first element. runHostKernel walks the planes, so that the
/// kernel is two plain loops, nearly as quick to compile as a Contiguous one, and one call still covers many
/// rows when rows are short.
using HostKernel = int32_t (*)(const KernelArgs *args, int64_t begin, int64_t end);

/// Simulated-device kernel: the device kernel's code (the same index math as the PTX kernel below) compiled
/// for the host, with the block index, block size and grid size (in blocks) as parameters, so that the CPU
/// can run a simulated grid block by block. It computes the elements the block's threads would: thread t
/// handles elements block * blockSize + t, then + gridSize * blockSize, ... below `count` (the output's
/// element count); an elementwise kernel takes them in memory order (a round of all threads at a time).
/// Returns kKernelOk, or an error code when an element of this block failed (the others are written).
using SimDeviceKernel = int32_t (*)(const KernelArgs *args, int64_t count, int64_t block, int64_t blockSize,
                                    int64_t gridSize);

// The PTX kernel (entry named kernelName(spec)) has the parameters FusedParameter lists, in its order: i64
// count, i64 rank, then pointers to global (device) memory shape, inputs, strides, output, errorFlag. shape
// has rank entries; inputs holds one device pointer per input; strides is as in KernelArgs (unused by
// Contiguous kernels, which may be passed null for shape and strides), and so is inputs, which lists the
// extra outputs' pointers after the inputs'; errorFlag is one int32 that the host zeroes before the launch
// and reads afterwards: a failing element stores its error code there (when several race, one nonzero code
// stays). Thread (blockIdx.x * blockDim.x + threadIdx.x) handles elements from its global index in steps of
// gridDim.x * blockDim.x (a grid-stride loop), so any 1-D launch covers any count.
//
// A reduction kernel's PTX entry has one parameter more, last: i64 reducedRank, and shape is always needed;
// count is the number of OUTPUT elements. Block b handles outputs b, b + gridDim.x,
// ... below count; its threads stride over each output's reduced elements and combine their partials with
// warp shuffles and 32 slots of shared memory, so blockDim.x must be a multiple of 32 (at most 1024); the
// kernel allocates its shared memory statically.

/// The PTX kernel's parameters, in order, each of 8 bytes: the one statement of that order, which the kernel
/// builder declares, its loops read, and the devices pass (as FusedParameters).
enum FusedParameter : unsigned {
  kFusedCount,
  kFusedRank,
  kFusedShape,
  kFusedInputs,
  kFusedStrides,
  kFusedOutput,
  kFusedErrorFlag,
  kFusedReducedRank, // reduction kernels only
  kFusedParameters,
};
/// A launch's parameter values, indexed by FusedParameter (pointers as device addresses).
using FusedParameters = std::array<uint64_t, kFusedParameters>;

/// Error codes that kernels return (host, simulated device) or store in errorFlag (PTX).
enum : int32_t {
  kKernelOk = 0,
  kNegativeIntegerPower = 1,
  kIndexOutOfRange = 2, // + g: gather g of the body (in its order) read an index outside [-size, size)
};

/// The message for an error code, in the CPU kernels' words (for ir::UserError).
const char *kernelErrorMessage(int32_t code);

/// The error a kernel of `body` reported with `code`: its message, located at the gather that failed where
/// the body knows where it was written (ScalarGraph::locs).
ir::UserError kernelError(const ir::ScalarGraph &body, int32_t code);

/// An input's stride along the innermost axis (of a reduction: the innermost reduced axis), when a host
/// Strided kernel is compiled for it: a unit or zero stride is a constant in the code, so the row loop
/// vectorizes with plain or broadcast loads and needs no versioning on run-time strides.
enum class InnerStride : uint8_t { Any, Unit, Zero };

struct KernelSpec {
  const ir::ScalarGraph *body; // each instruction's dtype one the CPU accepts; `reduction` set makes a
                               // reduction kernel (its axes are run-time arguments: KernelArgs::reducedRank)
  Layout layout;
  /// Host Strided kernels: one per array (input or extra output), what the run-time strides will be along the
  /// last axis of the iteration space (Zero for all where there is none: rank-0 outputs, reductions of no
  /// axis). Empty means Any for every input; other kernels ignore it and want it empty (it is part of every
  /// cache key).
  std::vector<InnerStride> innerStrides = {};
  /// Host Strided reductions: the outputs along the last kept axis are accumulated a block at a time, reduced
  /// element by reduced element, so that consecutive loads read consecutive outputs' elements. The runtime
  /// asks for it where the reduced axes are the outer ones in memory (a column sum); part of every cache key.
  bool blockedOutputs = false;
};

/// The parameters the PTX kernel of `spec` takes: all for a reduction, all but reducedRank otherwise.
inline unsigned fusedParameterCount(const KernelSpec &spec) {
  return spec.body->reduction ? kFusedParameters : kFusedReducedRank;
}

/// Runs the host kernel compiled for `spec` over output elements [begin, end) of `args`: one call, or for a
/// Strided elementwise kernel one per plane the range touches, the inputs and output moved to the plane's
/// start (an odometer over the outer axes, like the CPU's forEachRow). Thread-safe.
int32_t runHostKernel(const KernelSpec &spec, HostKernel kernel, const KernelArgs &args, int64_t begin,
                      int64_t end);

/// The innermost-axis stride pattern of arrays with `strides` (array-major, `rank` each): what a host
/// Strided elementwise kernel may be specialized for.
std::vector<InnerStride> innerStridePattern(const std::vector<int64_t> &strides, size_t numInputs,
                                            size_t rank);

/// The dtype a kernel of `body` stores: the program's result, or for a reduction the CPU's result dtype
/// (sum/prod: ints and bools give i64; mean: ints and bools give f64; any/all: bool; max/min: unchanged).
ir::DType kernelOutputDtype(const ir::ScalarGraph &body);

/// A deterministic name for the kernel: "tgc_fused_" and 16 hex digits of a hash of the body and the layout
/// (the same on every run and machine, so it can key a disk cache and name the PTX entry).
std::string kernelName(const KernelSpec &spec);

/// The optimized LLVM IR of the host kernel, as text (for --emit=llvm).
std::string emitHostLlvm(const KernelSpec &spec);

/// The NVPTX module (the kernel with the libdevice functions it uses, optimized) as LLVM IR text.
std::string emitDeviceLlvm(const KernelSpec &spec, const std::string &gpuArch = "sm_90");

/// PTX text for `gpuArch` ("sm_80", "sm_90", ...), one .entry named kernelName(spec) (for --emit=ptx and
/// cuModuleLoadData). Math functions come from libdevice ($TGC_LIBDEVICE, else the CUDA toolkit's
/// /usr/local/cuda/nvvm/libdevice/libdevice.10.bc, else one beside the binary holding codegen: a bundle's
/// lib/). Throws ir::UserError for an architecture LLVM does not know, or when
/// the kernel needs libdevice and it cannot be read (emitDeviceLlvm too).
std::string emitPtx(const KernelSpec &spec, const std::string &gpuArch = "sm_90");

enum class IndexKernel;  // the index kernels (below)
enum class WindowKernel; // the window kernels (below)

/// The kernels of one PTX module: fused kernels, the generated matmul kernel of some dtypes, creation,
/// index and window kernels.
struct PtxModuleKernels {
  std::vector<KernelSpec> fused;
  std::vector<ir::DType> matmuls;
  std::vector<std::pair<ir::OpKind, ir::DType>> creations;
  std::vector<std::pair<IndexKernel, ir::DType>> indexing;
  std::vector<std::pair<WindowKernel, ir::DType>> windows;
};

/// One PTX module for `gpuArch` holding every kernel of `kernels` (each name once), with one header and
/// libdevice linked once, which ptxas accepts as a whole (for --emit=ptx; the CUDA device loads a module per
/// kernel). Not cached on disk.
std::string emitPtx(const PtxModuleKernels &kernels, const std::string &gpuArch = "sm_90");

/// The host kernel, compiled by ORC LLJIT for this CPU and cached in memory by (body, layout): a second call
/// with an equal body returns the same function. The object code is also kept in the disk cache (below),
/// which answers before anything is built when an earlier process compiled the same kernel. Thread-safe. The
/// code lives as long as the process.
HostKernel compileHostKernel(const KernelSpec &spec);

/// The simulated-device kernel, compiled and cached like compileHostKernel.
SimDeviceKernel compileSimDeviceKernel(const KernelSpec &spec);

// ---- Ahead of time (tgc compile --emit=lib; runtime/aot/) ----

/// The object file of a library made ahead of time (ELF, position-independent): the host kernel of each of
/// `specs` (internal symbols, compiled for `cpu` as the JIT compiles them: "native" or an x86-64 CPU name
/// LLVM knows, which this machine need not have), and `symbol`, a tgc_library (runtime/aot/tgc_aot.h) holding
/// `image` and the kernels in the order of `specs`, which must be distinct. Its code calls libm and
/// libmvec. Throws ir::UserError for an unknown CPU.
std::string compileLibraryObject(const std::string &symbol, const std::vector<KernelSpec> &specs,
                                 const std::string &image, const std::string &cpu);

/// Writes a static library (an ar archive with a symbol table) at `path`: the members of the archive at
/// `base` (the AOT runtime), then `objects` (member name, object bytes). Throws ir::UserError when `base`
/// cannot be read or `path` written.
void writeStaticLibrary(const std::string &path, const std::string &base,
                        const std::vector<std::pair<std::string, std::string>> &objects);

// ---- The matmul kernel (codegen/MatmulKernel.cpp): matmul on a device, where gemm cannot ----
//
// c (n x m, C order) = a (n x k) @ b (k x m), a and b read through strides in elements (so transposed views
// are read in place), products summed in order of k: f32 and f64 (on a GPU without cuBLAS), and as the CPU
// computes them i32 and i64 (wrapping) and bool (or of ands; bytes 0 or 1). Blocks of kMatmulThreads x
// kMatmulThreads threads; block (x, y) computes the kMatmulTile x kMatmulTile outputs from row y *
// kMatmulTile and column x * kMatmulTile, thread (tx, ty) the 4 x 4 of them at rows ty + 16 i and columns tx
// + 16 j (adjacent threads read adjacent columns of b and write adjacent outputs). The PTX entry
// matmulKernelName(dtype) has MatmulArgs' fields as its parameters, in their order (every one 8 bytes: a
// MatmulArgs is the kernel's parameter buffer), and is launched over a grid of ceil(m / kMatmulTile) x ceil(n
// / kMatmulTile) blocks; the simulated-device function reads the same fields and runs the threads of one
// block in turn.

constexpr int64_t kMatmulThreads = 16, kMatmulTile = 64;

struct MatmulArgs {
  int64_t n, m, k;
  const void *a; // pointers: device addresses on a device
  int64_t aRowStride, aColStride;
  const void *b;
  int64_t bRowStride, bColStride;
  void *c;
};
static_assert(sizeof(MatmulArgs) == 10 * 8,
              "MatmulArgs must be its kernel's parameter buffer: 8-byte fields");

using SimMatmulKernel = void (*)(const MatmulArgs *args, int64_t blockX, int64_t blockY);

/// "tgc_matmul_f32", "tgc_matmul_i64", ...
std::string matmulKernelName(ir::DType dtype);
/// The PTX of the matmul kernel for `dtype`.
std::string emitMatmulPtx(ir::DType dtype, const std::string &gpuArch = "sm_90");
/// The matmul kernel's simulated-device function, compiled for the host once per dtype.
SimMatmulKernel compileSimMatmulKernel(ir::DType dtype);

// ---- The creation kernels (codegen/CreationKernel.cpp): eye, arange, rand and randn on a device ----
//
// Element i (C order, i < count) of the output, as the CPU's creation kernels compute it, from two integer
// parameters p0, p1 and two double parameters x0, x1:
//
//   eye      1 where i / p0 == i % p0 (p0: the columns), else 0
//   arange   integers: p0 + i * p1 (in 64 bits, wrapping; p0, p1 the first value and the step as the CPU
//            computes them); floats: x0 + T(i) * x1 in the dtype T (x0, x1 the first value and the step in
//            T); bools: p0 != 0 for element 0, p0 + p1 != 0 for the others
//   rand     uniform in [0, 1) from Philox4x32-10 of counter i and key p0 (the seed): runtime/Random.h's bits
//   randn    normal, by Box-Muller from the same bits (log and cos: libm on the simulated device, libdevice
//            in PTX, within a few ulps of each other)
//
// The PTX entry creationKernelName(kind, dtype) has CreationArgs' fields as its parameters, in their order
// (a CreationArgs is its parameter buffer), a grid-stride loop over the elements like the elementwise
// kernels'; the simulated-device function reads the same fields and runs the threads of one block in turn.

struct CreationArgs {
  int64_t count;
  void *output; // a device address on a device
  int64_t p0, p1;
  double x0, x1;
};
static_assert(sizeof(CreationArgs) == 6 * 8,
              "CreationArgs must be its kernel's parameter buffer: 8-byte fields");

using SimCreationKernel = void (*)(const CreationArgs *args, int64_t block, int64_t blockSize,
                                   int64_t gridSize);

/// Whether a creation kernel exists for `kind` and `dtype` (eye and arange of any dtype, rand and randn of
/// f32 and f64: every dtype the language gives them).
bool hasCreationKernel(ir::OpKind kind, ir::DType dtype);
/// "tgc_eye_f32", "tgc_randn_f64", ...
std::string creationKernelName(ir::OpKind kind, ir::DType dtype);
/// The PTX of the creation kernel.
std::string emitCreationPtx(ir::OpKind kind, ir::DType dtype, const std::string &gpuArch = "sm_90");
/// The creation kernel's simulated-device function, compiled for the host once per kind and dtype.
SimCreationKernel compileSimCreationKernel(ir::OpKind kind, ir::DType dtype);

// ---- The disk cache (codegen/KernelCache.h): host and simulated-device object code and PTX, per machine
// ----

/// $XDG_CACHE_HOME/tgc when that variable is an absolute path, else $HOME/.cache/tgc; nullopt when neither
/// variable is set.
std::optional<std::string> defaultKernelCacheDirectory();

/// Puts the disk cache in `directory` (created on first use), or turns it off (nullopt), for the rest of the
/// process. Until called, the cache uses defaultKernelCacheDirectory(). A directory that cannot be created or
/// written turns the cache off silently: kernels are compiled as if it were off. Thread-safe.
void setKernelCacheDirectory(std::optional<std::string> directory);

/// While one lives, kernels compiled on this thread neither read nor write the disk cache, whatever the
/// process's setting: a program compiled without the cache among others that use it. Nests.
class KernelCacheBypass {
public:
  /// Bypasses the cache while it lives when `active`; does nothing otherwise.
  explicit KernelCacheBypass(bool active = true);
  ~KernelCacheBypass();
  KernelCacheBypass(const KernelCacheBypass &) = delete;
  KernelCacheBypass &operator=(const KernelCacheBypass &) = delete;

private:
  bool active_;
};

struct KernelCacheStats {
  size_t diskHits = 0;       // kernels (or PTX) read from the disk instead of compiled
  size_t diskMisses = 0;     // lookups the disk did not answer, corrupt entries included
  size_t diskWrites = 0;     // entries written
  size_t corruptEntries = 0; // entries found truncated, damaged or of another key, and ignored
};

/// The disk cache's counters, since the process started.
KernelCacheStats kernelCacheStats();

/// Where the disk cache is, or why it is off, in a few words (for tgc run -v).
std::string describeKernelCache();

/// The CPU that host and simulated-device kernels are compiled for: "native" (this machine's CPU with its
/// features, the default) or an LLVM x86-64 CPU name whose instructions this machine has, such as
/// x86-64-v2 (SSE4.2), x86-64-v3 (AVX2, FMA) or x86-64-v4 (AVX-512), so that one machine can run the code
/// another would get. Call before the first kernel is compiled (--host-cpu, $TGC_HOST_CPU); the choice is
/// part of the disk cache's key. A name LLVM does not know, or a CPU whose instructions this machine lacks
/// (its code would stop on an illegal instruction), is an ir::UserError saying which.
void setHostCpu(const std::string &name);

// ---- The index kernels (codegen/IndexKernel.cpp): gather, scatter_add and scatter_set on a device ----
//
// Indexing moves blocks of `inner` contiguous elements. Element i (C order, i < count) of the gathered shape
// is element e = i % inner of block n = i / inner, which belongs to row n / positions and index position j =
// n % positions; its place in x is row * rowElements + offsets[j] + e. The offsets (one i64 per index
// position) come first, from the offsets kernel, one index array (made i64 and contiguous) at a time:
//
//   offsets      output[j] = (accumulate ? output[j] : 0) + norm(input[j]) * stride, j < count; norm adds
//   `size`
//                to a negative index; an index outside [-size, size) stores 1 and itself in error[0],
//                error[1]
//   gather       output[i] = input[place(i)]
//   scatter_add  output[place(i)] += input[i], atomically (repeated places accumulate); bools: or
//   scatter_set  output[place(i)] = input[i] (of repeated places, one store stays)
//
// The PTX entry indexKernelName(kind, dtype) has IndexArgs' fields as its parameters, in their order (an
// IndexArgs is its parameter buffer), a grid-stride loop like the creation kernels'; the simulated-device
// function reads the same fields and runs the threads of one block in turn.

struct IndexArgs {
  int64_t count;
  void *output; // pointers: device addresses on a device
  const void *input;
  const int64_t *offsets;
  int64_t positions, inner, rowElements;
  int64_t size, stride, accumulate; // the offsets kernel's
  int64_t *error;
};
static_assert(sizeof(IndexArgs) == 11 * 8, "IndexArgs must be its kernel's parameter buffer: 8-byte fields");

using SimIndexKernel = void (*)(const IndexArgs *args, int64_t block, int64_t blockSize, int64_t gridSize);

enum class IndexKernel { Offsets, Gather, ScatterAdd, ScatterSet };

/// "tgc_index_offsets", "tgc_gather_f32", "tgc_scatter_add_i64", ... (the offsets kernel's dtype is i64).
std::string indexKernelName(IndexKernel kind, ir::DType dtype);
/// The PTX of an index kernel.
std::string emitIndexPtx(IndexKernel kind, ir::DType dtype, const std::string &gpuArch = "sm_90");
/// An index kernel's simulated-device function, compiled for the host once per kind and dtype.
SimIndexKernel compileSimIndexKernel(IndexKernel kind, ir::DType dtype);

// ---- The window kernels (codegen/WindowKernel.cpp): convolution and max pooling on a device ----
//
// A convolution on a device is column matrices and gemms: im2col lays the windows of x [n, channels, inH,
// inW] out as a column matrix `col` [channels * kH * kW, n * outH * outW], which one gemm per channel group
// multiplies with the filters; col2im sums a column matrix back into x's shape (the gradient with respect to
// x). A 1-d convolution is a 2-d one of height 1. Element i (C order, i < count) of the output:
//
//   im2col         col[(c * kH + ky) * kW + kx, (img * outH + oy) * outW + ox] = x[img, c, iy, ix], 0 where
//                  (iy, ix) = (oy * strideH - padTop + ky * dilationH, ox * strideW - padLeft + kx *
//                  dilationW) falls in the padding
//   col2im         dx[img, c, iy, ix] = the sum, over the window places (ky, kx) in order, of the col
//                  elements im2col would have filled from (iy, ix)
//   max_pool       y[img, c, oy, ox] = the window's first maximum (a NaN wins at once; a window of padding
//                  only gives 0): the CPU's rule (runtime/ConvKernels.cpp)
//   max_pool_grad  dx[img, c, iy, ix] = the sum of gy over the windows whose first maximum is (iy, ix), in
//                  the order of the windows (oy, then ox): the CPU's sums, bit for bit
//   max_pool_gather  y[img, c, oy, ox] = v[img, c, at] for the window's first maximum `at` of x, 0 for a
//                  window of padding only
//
// (The pooling kernels read `input` as x; max_pool_grad `second` as gy [n, channels, outH, outW],
// max_pool_gather as v [n, channels, inH, inW].)
// The PTX entry windowKernelName(kind, dtype) has WindowArgs' fields as its parameters, in their order (a
// WindowArgs is its parameter buffer), a grid-stride loop like the creation kernels'; the simulated-device
// function reads the same fields and runs the threads of one block in turn.

struct WindowArgs {
  int64_t count;
  void *output; // pointers: device addresses on a device
  const void *input;
  const void *second;
  int64_t images, channels, inH, inW, kH, kW, outH, outW;
  int64_t strideH, strideW, dilationH, dilationW, padTop, padLeft;
};
static_assert(sizeof(WindowArgs) == 18 * 8,
              "WindowArgs must be its kernel's parameter buffer: 8-byte fields");

using SimWindowKernel = void (*)(const WindowArgs *args, int64_t block, int64_t blockSize, int64_t gridSize);

enum class WindowKernel { Im2col, Col2im, MaxPool, MaxPoolGrad, MaxPoolGather };

/// "tgc_im2col_f32", "tgc_max_pool_grad_f64", ...
std::string windowKernelName(WindowKernel kind, ir::DType dtype);
/// The PTX of a window kernel.
std::string emitWindowPtx(WindowKernel kind, ir::DType dtype, const std::string &gpuArch = "sm_90");
/// A window kernel's simulated-device function, compiled for the host once per kind and dtype.
SimWindowKernel compileSimWindowKernel(WindowKernel kind, ir::DType dtype);

} // namespace tg::codegen
