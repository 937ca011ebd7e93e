// The sizes of a convolution or a pooling at run time (Ops.def's conv, conv_transpose, conv_filter_grad,
// max_pool and max_pool_grad): the one geometry the CPU's loops (ConvKernels.cpp) and the device's column
// matrices and window kernels (DeviceLayer.cpp) both follow. One spatial axis is the second of two with a
// height of 1.
#pragma once

#include "ir/Op.h"

#include <cstdint>
#include <vector>

namespace tg::runtime {

/// A forward convolution's sizes: x [n, channels, inH, inW], w [filters, channels / groups, kH, kW],
/// y [n, filters, outH, outW]. A pooling's: filters = groups = channels.
struct Geometry {
  int64_t n = 0, channels = 0, filters = 0, groups = 1;
  int64_t inH = 1, inW = 1, kH = 1, kW = 1, outH = 1, outW = 1;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1, padTop = 0, padLeft = 0, padBottom = 0,
          padRight = 0;

  int64_t channelsPerGroup() const { return channels / groups; }
  int64_t filtersPerGroup() const { return filters / groups; }
  /// The input row (column) that output row oy (column ox) reads at kernel row ky (column kx): outside
  /// [0, inH) ([0, inW)) where that falls in the padding.
  int64_t row(int64_t oy, int64_t ky) const { return oy * strideH - padTop + ky * dilationH; }
  int64_t column(int64_t ox, int64_t kx) const { return ox * strideW - padLeft + kx * dilationW; }
};

/// An op's geometry and the shape of its result.
struct WindowShapes {
  Geometry geometry;
  std::vector<int64_t> output;
};

/// conv (x, w), conv_transpose (gy, w) or conv_filter_grad (x, gy), of inputs shaped `first` and `second`:
/// the forward convolution's geometry, and the op's result shape (y, x or w).
WindowShapes convolutionShapes(const ir::Op &op, const std::vector<int64_t> &first,
                               const std::vector<int64_t> &second);
/// max_pool, max_pool_grad or max_pool_gather of an x shaped `x`: the pooling's geometry, and the result
/// shape (y, or x for max_pool_grad).
WindowShapes poolingShapes(const ir::Op &op, const std::vector<int64_t> &x);

} // namespace tg::runtime
