// forEachRow: the loop nest under every strided kernel. It walks an index space in C order one innermost row
// at a time, keeping the element offset of each operand, so that kernels only write the tight inner loop.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tg::runtime {

/// Calls row(offsets, steps, length) for every innermost row of the index space `shape`, in C order.
/// offsets[k] is the element offset of the row's first element in operand k, whose strides (in elements, one
/// per axis of `shape`) are strides[k]; along the row operand k advances by steps[k] = strides[k].back(). A
/// 0-d space is one row of length 1; an empty space has no rows.
template <size_t N, typename Row>
void forEachRow(const std::vector<int64_t> &shape, const std::array<std::vector<int64_t>, N> &strides,
                Row &&row) {
  for (int64_t size : shape)
    if (size == 0) return;
  std::array<int64_t, N> offsets{}, steps{};
  size_t rank = shape.size();
  if (rank == 0) {
    row(offsets, steps, int64_t{1});
    return;
  }
  for (size_t k = 0; k < N; ++k)
    steps[k] = strides[k].back();
  std::vector<int64_t> index(rank - 1, 0);
  for (;;) {
    row(offsets, steps, shape[rank - 1]);
    size_t axis = rank - 1;
    // Advance the outer index like an odometer, the last outer axis fastest.
    for (; axis > 0; --axis) {
      size_t outer = axis - 1;
      for (size_t k = 0; k < N; ++k)
        offsets[k] += strides[k][outer];
      if (++index[outer] < shape[outer]) break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][outer] * shape[outer];
      index[outer] = 0;
    }
    if (axis == 0) return;
  }
}

} // namespace tg::runtime
