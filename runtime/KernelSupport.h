// What the kernel families (runtime/*Kernels.cpp) share: dtype dispatch, the ops' scalar semantics
// (codegen/ScalarOps.h), shape helpers, and each family's entry point, called by runOp (Kernels.cpp).
#pragma once

#include "codegen/ScalarOps.h"
#include "ir/Assert.h"
#include "ir/Op.h"
#include "runtime/Tensor.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace tg::runtime {

class HostLaunchMemo; // FusedLaunch.h

using ir::dtypeOf;
using ir::visitDType;

/// NumPy broadcasting of two run-time shapes; throws UserError("cannot broadcast shapes (3, 4) and (5,)").
std::vector<int64_t> broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b);

/// The strides that read `tensor` as if broadcast to `shape` (0 along broadcast axes). The shapes must
/// broadcast.
std::vector<int64_t> broadcastStrides(const Tensor &tensor, const std::vector<int64_t> &shape);

/// The shapes of concat's (or stack's) inputs must agree on every axis but `skipAxis` (stack: on every axis,
/// with skipAxis = rank); throws UserError naming the input that does not.
void checkJoinShapes(const std::vector<Tensor> &inputs, const char *opName, size_t skipAxis);

/// `axis` counted from the end when negative; a compiler bug when out of range (type inference checked it).
size_t normalizeAxis(int64_t axis, size_t rank);

// The kernel families. `dtype` is the output dtype.
Tensor elementwiseKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype);
Tensor reductionKernel(const ir::Op &op, const Tensor &input, ir::DType dtype);
Tensor matmulKernel(const Tensor &a, const Tensor &b, ir::DType dtype);

/// matmul's operands as NumPy reads them, for every device: a 1-D left operand as a row (1 x k), a 1-D right
/// one as a column (k x 1), each matrix the last two axes; the leading batch axes broadcast. UserError when
/// the inner dimensions differ.
struct MatmulPlan {
  Tensor a, b;                      // the operands as matrices (views)
  int64_t n = 0, k = 0, m = 0;      // a is n x k, b is k x m
  std::vector<int64_t> batch;       // the batch shape of the result
  std::vector<int64_t> resultShape; // batch, n, m, without the axes a 1-D operand added
};
MatmulPlan planMatmul(const Tensor &left, const Tensor &right);
/// The strides of `matrices`' batch axes (all but its last two) broadcast over `batch`.
std::vector<int64_t> batchStrides(const Tensor &matrices, const std::vector<int64_t> &batch);
Tensor shapeKernel(const ir::Op &op, const std::vector<Tensor> &inputs);
Tensor creationKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype);

/// arange's element i is first + i * step: for integer dtypes `first` and `step` as 64-bit integers (the sum
/// computed in 64 bits, wrapping, then narrowed), for float dtypes as values of the dtype (the sum computed
/// in the dtype): NumPy's fill, exact for integer bounds. For bool, as NumPy's fill: element 0 is first != 0,
/// every other one first + step != 0 (the start, then start + step, converted to bool).
struct ArangeTerms {
  int64_t first = 0, step = 0;
  double floatFirst = 0, floatStep = 0;
};
ArangeTerms arangeTerms(const ir::OpAttrs &attrs, ir::DType dtype);
/// dim_size: the size of an axis of its input, as a 0-d i64 (runtime/CreationKernels.cpp).
Tensor dimSizeKernel(const ir::Op &op, const Tensor &input);
/// conv, conv_transpose and conv_filter_grad (runtime/ConvKernels.cpp).
Tensor convolutionKernel(const ir::Op &op, const std::vector<Tensor> &inputs);
/// max_pool and max_pool_grad (runtime/ConvKernels.cpp).
Tensor poolingKernel(const ir::Op &op, const std::vector<Tensor> &inputs);
Tensor sortKernel(const ir::Op &op, const Tensor &input, ir::DType dtype);
/// Where an indexing op reads or writes in a C-order x (runtime/IndexKernels.cpp; the device layer's too):
/// `outer` rows of `rowElements` before the indexed axes; per row, `positions` index positions (indexShape,
/// in C order), position j at offset baseOffsets[j] (0 when empty) plus, for each index array, its value at j
/// (made non-negative) times its stride; at each, a block of `inner` contiguous elements. `shape`: the
/// gathered shape.
struct IndexLayout {
  struct Index {
    size_t axis;
    int64_t size, stride;
  };
  std::vector<int64_t> shape, indexShape, baseOffsets;
  std::vector<Index> indices;
  int64_t outer = 1, rowElements = 0, inner = 1, positions = 1;
};
/// A gather's or scatter's layout, for an x of `shape` and index arrays of `indexShapes`.
IndexLayout indexLayout(const ir::Op &op, const std::vector<int64_t> &shape,
                        const std::vector<std::vector<int64_t>> &indexShapes);
/// The layout of a strided region of a contiguous tensor whose elements start at `base`: one row, no index,
/// an offset per position.
IndexLayout regionLayout(const Tensor &region, int64_t base);
/// A scatter's or set_slice's update viewed broadcast to the selected `shape`, or a UserError when it does
/// not broadcast.
Tensor broadcastUpdate(const ir::Op &op, const Tensor &update, const std::vector<int64_t> &shape);
/// "index 7 is out of bounds for axis 0 with size 4".
ir::UserError indexOutOfRange(int64_t index, size_t axis, int64_t size);
/// gather, scatter_add, scatter_set and set_slice (runtime/IndexKernels.cpp); `reuseInputs` as runOp's.
Tensor indexingKernel(const ir::Op &op, const std::vector<Tensor> &inputs, bool reuseInputs);
/// Python's slicing as a view: one SliceSpec per leading axis, an index drops its axis, negative positions
/// count from the end, out-of-range bounds are clamped (runtime/ShapeKernels.cpp).
Tensor sliceView(const Tensor &x, const std::vector<ir::SliceSpec> &slices);
/// A fused node's program over whole tensors; `reuseInputs` as runOp's (Kernels.h). Returns the first output
/// and puts the body's extra outputs in `extraOutputs` (one place each). With a `memo`, a launch over
/// operands of the shapes and strides it recorded reuses what it holds, and any other records itself.
Tensor fusedKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype, bool reuseInputs,
                   HostLaunchMemo *memo = nullptr, std::span<Tensor> extraOutputs = {});

} // namespace tg::runtime
