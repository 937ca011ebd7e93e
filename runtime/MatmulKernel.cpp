// matmul with NumPy's semantics: a 1-D left operand is a row vector and a 1-D right operand a column vector
// (the added axis is dropped from the result), and leading batch axes broadcast. f32 and f64 go through BLAS
// gemm, one call per batch, reading transposed views in place, except small products (SmallGemm.h); integers
// and bools use plain loops.
#include "ir/SourceLoc.h"
#include "runtime/Blas.h"
#include "runtime/KernelSupport.h"
#include "runtime/SmallGemm.h"
#include "runtime/StridedLoop.h"

#include <algorithm>
#include <array>

namespace tg::runtime {

namespace {

/// A matrix operand as gemm reads it: the tensor (its last two axes are the matrix) and how to read them.
struct GemmOperand {
  Tensor tensor;
  bool transposed;
  int64_t leading;

  template <typename T>
  GemmMatrix<T> at(int64_t offset) const {
    return {tensor.data<T>() + offset, leading, transposed};
  }
};

/// Reads a row-major or column-major last-two-axes layout in place; anything else is copied to C order.
GemmOperand gemmOperand(const Tensor &matrix) {
  size_t rank = matrix.rank();
  int64_t rows = matrix.shape()[rank - 2], cols = matrix.shape()[rank - 1];
  int64_t rowStride = matrix.strides()[rank - 2], colStride = matrix.strides()[rank - 1];
  if (colStride == 1 && rowStride >= std::max<int64_t>(1, cols)) return {matrix, false, rowStride};
  if (rowStride == 1 && colStride >= std::max<int64_t>(1, rows)) return {matrix, true, colStride};
  return {matrix.contiguous(), false, std::max<int64_t>(1, cols)};
}

/// c (n x m, C order) = a (n x k) @ b (k x m), reading a and b through their strides; integers wrap around,
/// bools compute or-of-ands.
template <typename T>
void matmulLoops(const Tensor &a, const Tensor &b, T *c, int64_t offsetA, int64_t offsetB, int64_t n,
                 int64_t m, int64_t k) {
  size_t rankA = a.rank(), rankB = b.rank();
  int64_t rowA = a.strides()[rankA - 2], colA = a.strides()[rankA - 1];
  int64_t rowB = b.strides()[rankB - 2], colB = b.strides()[rankB - 1];
  const T *x = a.data<T>() + offsetA;
  const T *y = b.data<T>() + offsetB;
  using U = scalar::WrappingType<T>;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      U sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += static_cast<U>(x[i * rowA + p * colA]) * static_cast<U>(y[p * rowB + j * colB]);
      c[i * m + j] = static_cast<T>(sum);
    }
}

/// Calls multiply(offsetA, offsetB, product) for each matrix pair of the batch (the element offsets of a's
/// and b's matrices), `product` stepping through c by `size` elements.
template <typename T, typename Multiply>
void forEachMatrix(const Tensor &a, const Tensor &b, const std::vector<int64_t> &batch, T *c, int64_t size,
                   Multiply multiply) {
  forEachRow(batch, std::array{batchStrides(a, batch), batchStrides(b, batch)},
             [&](const auto &offsets, const auto &steps, int64_t length) {
               for (int64_t i = 0; i < length; ++i, c += size)
                 multiply(offsets[0] + i * steps[0], offsets[1] + i * steps[1], c);
             });
}

} // namespace

MatmulPlan planMatmul(const Tensor &left, const Tensor &right) {
  auto asMatrix = [](const Tensor &x, bool isLeft) {
    if (x.rank() != 1) return x;
    int64_t size = x.shape()[0], stride = x.strides()[0];
    return isLeft ? x.view({1, size}, {size * stride, stride}, x.offset())
                  : x.view({size, 1}, {stride, 1}, x.offset());
  };
  MatmulPlan plan;
  plan.a = asMatrix(left, true), plan.b = asMatrix(right, false);
  size_t rankA = plan.a.rank(), rankB = plan.b.rank();
  plan.n = plan.a.shape()[rankA - 2], plan.k = plan.a.shape()[rankA - 1], plan.m = plan.b.shape()[rankB - 1];
  if (plan.b.shape()[rankB - 2] != plan.k)
    throw ir::UserError("matmul: inner dimensions do not match: " + shapeTuple(left.shape()) + " @ " +
                        shapeTuple(right.shape()));
  plan.batch = broadcastShapes({plan.a.shape().begin(), plan.a.shape().end() - 2},
                               {plan.b.shape().begin(), plan.b.shape().end() - 2});
  plan.resultShape = plan.batch;
  if (left.rank() > 1) plan.resultShape.push_back(plan.n);
  if (right.rank() > 1) plan.resultShape.push_back(plan.m);
  return plan;
}

std::vector<int64_t> batchStrides(const Tensor &matrices, const std::vector<int64_t> &batch) {
  std::vector<int64_t> shape(matrices.shape().begin(), matrices.shape().end() - 2);
  return broadcastStrides(
      matrices.view(shape, {matrices.strides().begin(), matrices.strides().end() - 2}, matrices.offset()),
      batch);
}

Tensor matmulKernel(const Tensor &left, const Tensor &right, ir::DType dtype) {
  TG_ASSERT(left.rank() >= 1 && right.rank() >= 1 && left.dtype() == right.dtype() && left.dtype() == dtype)
      << "matmul of " << ir::dtypeName(left.dtype()) << shapeTuple(left.shape()) << " and "
      << ir::dtypeName(right.dtype()) << shapeTuple(right.shape());
  MatmulPlan plan = planMatmul(left, right);
  const Tensor &a = plan.a, &b = plan.b;
  int64_t n = plan.n, k = plan.k, m = plan.m;
  const std::vector<int64_t> &batch = plan.batch;
  std::vector<int64_t> shape = batch;
  shape.push_back(n);
  shape.push_back(m);
  Tensor out = Tensor::empty(dtype, shape);
  visitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    T *c = out.data<T>();
    if (k == 0) std::fill_n(c, out.numElements(), T(0));
    if (k == 0 || n == 0 || m == 0) return;
    if constexpr (std::is_floating_point_v<T>) {
      if (isSmallGemm(dtype, n, m, k)) {
        size_t rankA = a.rank(), rankB = b.rank();
        forEachMatrix(a, b, batch, c, n * m, [&](int64_t offsetA, int64_t offsetB, T *product) {
          smallGemm(StridedMatrix<T>{a.data<T>() + offsetA, a.strides()[rankA - 2], a.strides()[rankA - 1]},
                    StridedMatrix<T>{b.data<T>() + offsetB, b.strides()[rankB - 2], b.strides()[rankB - 1]},
                    product, n, m, k);
        });
        return;
      }
      GemmOperand ga = gemmOperand(a), gb = gemmOperand(b);
      forEachMatrix(ga.tensor, gb.tensor, batch, c, n * m, [&](int64_t offsetA, int64_t offsetB, T *product) {
        hostGemm(ga.at<T>(offsetA), gb.at<T>(offsetB), product, n, m, k);
      });
    } else {
      forEachMatrix(a, b, batch, c, n * m, [&](int64_t offsetA, int64_t offsetB, T *product) {
        matmulLoops<T>(a, b, product, offsetA, offsetB, n, m, k);
      });
    }
  });

  return out.reshaped(plan.resultShape); // without the axes 1-D operands added
}

} // namespace tg::runtime
