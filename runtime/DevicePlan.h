// The device plan: what each device node becomes on a device, decided once, from the node alone, for
// DeviceLayer::run (the simulated device and CUDA alike) and for --emit=ptx (api/Stages.cpp); and the shape
// of every launch (its grid). What the plan cannot know before a run (sizes, strides, and so the kernel's
// layout) the layer reads from the tensors it is given.
#pragma once

#include "ir/Graph.h"
#include "ir/Op.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace tg::codegen {
enum class IndexKernel;
enum class WindowKernel;
} // namespace tg::codegen

namespace tg::runtime {

/// A grid of blocks of threads (x, y).
struct Grid {
  unsigned blocksX = 1, blocksY = 1, threadsX = 1, threadsY = 1;
};

struct DeviceStep {
  enum class Kind {
    Kernel,              // the generated kernel of `fused`'s program
    Reduction,           // the generated reduction kernel of `fused` (its program, axes and keepdims)
    PositionalReduction, // argmax, argmin: two generated reductions (runtime/ArgReduction.h)
    Matmul,              // per batch matrix: gemm where the device has it for the dtype, else the generated
                         // matmul kernel
    Fill,                // zeros, ones and their _like forms: the kernel of `fused`'s program, one immediate
    Broadcast,           // full: its value converted on the host as the CPU converts it, uploaded, and copied
                         // over the shape by the kernel of `fused`'s program
    Creation,            // eye, arange, rand, randn: the creation kernel (codegen/Kernel.h)
    View,                // transpose, broadcast_to, slice: a view of device memory, no element read
    Reshape,             // a view of the input, copied to C order first when it is not
    Join,                // concat, stack: device-to-device copies of the parts
    Index,               // gather, scatter_add, scatter_set, set_slice: the offsets kernel per index array,
                         // then the index kernel of the op (codegen/Kernel.h); a scatter into a copy of x
    Window,     // conv, conv_transpose, conv_filter_grad: im2col or col2im (codegen/Kernel.h's window
                // kernels) and a gemm per channel group; max_pool, max_pool_grad, max_pool_gather: their
                // window kernel
    Loop,       // scan: its body's own steps, once per step of the loop (the executor's, Executor::runLoop),
                // and a device-to-device copy of each stacked value into its place
    Collective, // allreduce, allgather, broadcast: the device's own collective on device memory (NCCL), or
                // staged through host memory and the run's communicator
  };
  Kind kind;
  /// Kernel, Reduction, Fill, Broadcast: a device fused op whose body is the kernel's program (the node's own
  /// op when it is fused; otherwise one made of its op: an elementwise op as a program of one instruction, a
  /// reduction with an empty prologue).
  std::shared_ptr<const ir::Op> fused;
  /// Whether the kernel can store an error code (kernelCanFail), read back after its launch.
  bool canFail = false;
};

/// What a device node of `kind` becomes. Every op that ir/Ops.def gives a device implementation has a step
/// (transfers are the executor's); placement puts no other on a device, so another is a compiler bug (an
/// assertion).
DeviceStep::Kind deviceStepKind(ir::OpKind kind);
/// What `node`, placed on a device, becomes: deviceStepKind, and the kernel's program where it has one.
DeviceStep planDeviceStep(const ir::Node &node);

/// The index kernels an Index step launches (codegen/Kernel.h): the offsets kernel where the op has index
/// arrays (once per array), then the op's own.
std::vector<std::pair<codegen::IndexKernel, ir::DType>> indexKernels(const ir::Node &node);

/// The window kernels a Window step launches (codegen/Kernel.h).
std::vector<std::pair<codegen::WindowKernel, ir::DType>> windowKernels(const ir::Node &node);

// The programs of the kernels the device layer makes for itself (DeviceLayer.cpp), besides those of the
// graph's nodes; a library made ahead of time holds them all (api/Library.cpp).

/// A copy into C order: element i of the output is element i of a non-contiguous input.
ir::ScalarGraph copyProgram(ir::DType dtype);
/// A fill of `value` (zeros; a reduction of no element, emptyReduction).
ir::ScalarGraph fillProgram(ir::DType dtype, double value);
/// An index array of `dtype` made i64 (the index kernels read i64 offsets).
ir::ScalarGraph toI64Program(ir::DType dtype);
/// What a reduction of no element gives (codegen/Kernel.h): its identity (Ops.def), divided by 0 for a mean:
/// 0 / 0 as x86 computes it (the CPU kernels' bits), the NaN with the sign bit set. Those without an identity
/// are reported before.
double emptyReduction(ir::OpKind kind);

/// Whether a kernel of `body` can fail: an integer pow, whose negative exponents are errors.
bool kernelCanFail(const ir::ScalarGraph &body);

// Launch shapes, for a device of `multiprocessors` (each constant says what it keeps busy).

/// A grid-stride launch over `count` elements: blocks of 256 threads, at most 16 blocks per multiprocessor.
Grid elementwiseGrid(int64_t count, unsigned multiprocessors);
/// A reduction of `outputs` outputs over `reducedCount` elements each: one block per output (64 per
/// multiprocessor at most, grid-striding beyond), in whole warps, as many threads as the reduced elements
/// need, up to 256.
Grid reductionGrid(int64_t outputs, int64_t reducedCount, unsigned multiprocessors);
/// The generated matmul kernel's grid for c = a (n x k) @ b (k x m): one block per tile of c.
Grid matmulGrid(int64_t n, int64_t m);

} // namespace tg::runtime
