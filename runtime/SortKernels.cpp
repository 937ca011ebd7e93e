// Host-only kernels along one axis: sort, argsort (stable, NaN last, as NumPy's kind='stable') and cumsum.
// Each moves the axis last, works on contiguous rows, and returns the result viewed with the axis back in
// place.
#include "runtime/KernelSupport.h"

#include <algorithm>
#include <numeric>

namespace tg::runtime {

using ir::OpKind;

namespace {

/// Ascending order with NaN after everything, as NumPy sorts.
template <typename T>
bool lessNanLast(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a < b || (std::isnan(b) && !std::isnan(a));
  return a < b;
}

/// The permutation that moves `axis` last, and back.
std::vector<int64_t> axisLast(size_t rank, size_t axis) {
  std::vector<int64_t> perm;
  for (size_t i = 0; i < rank; ++i)
    if (i != axis) perm.push_back(static_cast<int64_t>(i));
  perm.push_back(static_cast<int64_t>(axis));
  return perm;
}
std::vector<int64_t> axisBack(size_t rank, size_t axis) {
  std::vector<int64_t> perm;
  for (size_t i = 0; i < rank; ++i)
    perm.push_back(i < axis    ? static_cast<int64_t>(i)
                   : i == axis ? static_cast<int64_t>(rank - 1)
                               : static_cast<int64_t>(i - 1));
  return perm;
}

/// Running sums in double for floats and in wrapping i64 for integers and bools, as NumPy's int64 wraps.
template <typename T, typename R>
void cumulativeSum(const T *row, R *sums, int64_t length) {
  if constexpr (std::is_floating_point_v<T>) {
    double sum = 0;
    for (int64_t i = 0; i < length; ++i) {
      sum += row[i];
      sums[i] = static_cast<R>(sum);
    }
  } else {
    uint64_t sum = 0;
    for (int64_t i = 0; i < length; ++i) {
      sum += static_cast<uint64_t>(static_cast<int64_t>(row[i]));
      sums[i] = static_cast<R>(static_cast<int64_t>(sum));
    }
  }
}

/// Runs `kind` on each contiguous row of `length` elements of `rows`, writing the same row of `out`.
template <typename T>
void sortRows(OpKind kind, const Tensor &rows, const Tensor &out, int64_t length) {
  int64_t count = length ? rows.numElements() / length : 0;
  auto eachRow = [&](auto body) {
    for (int64_t r = 0; r < count; ++r)
      body(rows.data<T>() + r * length, r * length);
  };
  switch (kind) {
  case OpKind::Sort:
    return eachRow([&](const T *row, int64_t start) {
      T *sorted = out.data<T>() + start;
      std::copy(row, row + length, sorted);
      std::stable_sort(sorted, sorted + length, lessNanLast<T>);
    });
  case OpKind::Argsort:
    return eachRow([&](const T *row, int64_t start) {
      int64_t *order = out.data<int64_t>() + start;
      std::iota(order, order + length, int64_t{0});
      std::stable_sort(order, order + length,
                       [row](int64_t a, int64_t b) { return lessNanLast(row[a], row[b]); });
    });
  case OpKind::Cumsum:
    return visitDType(out.dtype(), [&](auto zero) {
      eachRow([&](const T *row, int64_t start) {
        cumulativeSum(row, out.data<decltype(zero)>() + start, length);
      });
    });
  default:
    TG_ASSERT(false) << ir::opName(kind) << " is not a sort kernel";
  }
}

} // namespace

Tensor sortKernel(const ir::Op &op, const Tensor &input, ir::DType dtype) {
  // cumsum without an axis runs over the flattened array.
  bool flatten = op.attrs().axes.empty();
  TG_ASSERT(!flatten || op.kind() == OpKind::Cumsum) << op.name() << " needs an axis";
  Tensor x = flatten ? input.reshaped({input.numElements()}) : input;
  size_t axis = flatten ? 0 : normalizeAxis(op.attrs().axes[0], x.rank());
  Tensor rows = x.permuted(axisLast(x.rank(), axis)).contiguous();
  Tensor out = Tensor::empty(dtype, rows.shape());
  visitDType(x.dtype(), [&](auto zero) { sortRows<decltype(zero)>(op.kind(), rows, out, x.shape()[axis]); });
  return out.permuted(axisBack(x.rank(), axis));
}

} // namespace tg::runtime
