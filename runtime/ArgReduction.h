// argmax and argmin as two fused reductions, for devices that run generated kernels only (CUDA): the extreme
// along the axis, then the smallest index where the input equals it or is NaN. A NaN is the extreme exactly
// when one is present (max and min propagate NaN), so this gives NumPy's answers: the first index of the
// extreme, or of the first NaN.
#pragma once

#include "ir/Op.h"

#include <cstddef>
#include <cstdint>

namespace tg::runtime {

struct ArgReduction {
  /// Fused max (argmax) or min (argmin) of the input along the axis, keeping it: input (x).
  ir::Op extreme;
  /// Fused min along the axis of where(x == extreme or x != x, index, kNoPosition), to i64: inputs (x,
  /// extreme, index), index being each position's index along the axis (broadcast over the other axes).
  ir::Op first;
};

/// What `first` takes where a position is not the extreme: larger than any index (a tensor's elements are
/// fewer than 2**62), and the same for every length, so that the programs depend on the dtype alone and a
/// library made ahead of time holds their kernels.
constexpr double kNoPosition = 4611686018427387904.0; // 2**62

/// The two reductions of `op` (argmax or argmin) over `axis` of an input of `dtype` whose axis has at least
/// one element, placed like `op`; `keepdims` says whether `first` keeps the axis.
ArgReduction planArgReduction(const ir::Op &op, ir::DType dtype, size_t axis, bool keepdims);

} // namespace tg::runtime
