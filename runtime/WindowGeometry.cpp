#include "runtime/WindowGeometry.h"

namespace tg::runtime {

namespace {

/// The geometry from x's, w's and y's shapes ([n, c, *spatial], one or two spatial axes) and the window.
Geometry geometry(const ir::Window &window, const std::vector<int64_t> &x, const std::vector<int64_t> &w,
                  const std::vector<int64_t> &y) {
  Geometry g;
  g.n = x[0], g.channels = x[1], g.filters = w[0], g.groups = window.groups;
  bool two = x.size() == 4;
  size_t h = 0, wAxis = two ? 1 : 0; // the window's axes: height (2-D only), then width
  if (two) {
    g.inH = x[2], g.kH = w[2], g.outH = y[2];
    g.strideH = window.stride[h], g.dilationH = window.dilation[h], g.padTop = window.padBefore[h];
    g.padBottom = window.padAfter[h];
  }
  g.padRight = window.padAfter[wAxis];
  g.inW = x.back(), g.kW = w.back(), g.outW = y.back();
  g.strideW = window.stride[wAxis], g.dilationW = window.dilation[wAxis], g.padLeft = window.padBefore[wAxis];
  return g;
}

/// The spatial sizes of a convolution's output (ir::inferType's rule, on run-time sizes).
std::vector<int64_t> outputSpatial(const ir::Window &window, const std::vector<int64_t> &x,
                                   const std::vector<int64_t> &w) {
  std::vector<int64_t> sizes;
  for (size_t a = 0; a + 2 < x.size(); ++a)
    sizes.push_back(
        (x[a + 2] + window.padBefore[a] + window.padAfter[a] - window.dilation[a] * (w[a + 2] - 1) - 1) /
            window.stride[a] +
        1);
  return sizes;
}

} // namespace

WindowShapes convolutionShapes(const ir::Op &op, const std::vector<int64_t> &first,
                               const std::vector<int64_t> &second) {
  const ir::Window &window = op.attrs().window;
  std::vector<int64_t> x, w, y; // the forward convolution's shapes
  switch (op.kind()) {
  case ir::OpKind::Conv:
    x = first, w = second, y = {first[0], second[0]};
    for (int64_t size : outputSpatial(window, x, w))
      y.push_back(size);
    break;
  case ir::OpKind::ConvTranspose: // (y, w) -> x
    y = first, w = second, x = {first[0], second[1] * window.groups};
    for (size_t d = 0; d + 2 < first.size(); ++d)
      x.push_back((first[d + 2] - 1) * window.stride[d] - window.padBefore[d] - window.padAfter[d] +
                  window.dilation[d] * (second[d + 2] - 1) + window.outputPadding[d] + 1);
    break;
  default: // conv_filter_grad: (x, gy) -> w
    x = first, y = second, w = {second[1], first[1] / window.groups};
    w.insert(w.end(), window.kernel.begin(), window.kernel.end());
    break;
  }
  const std::vector<int64_t> &output = op.kind() == ir::OpKind::Conv            ? y
                                       : op.kind() == ir::OpKind::ConvTranspose ? x
                                                                                : w;
  return {geometry(window, x, w, y), output};
}

WindowShapes poolingShapes(const ir::Op &op, const std::vector<int64_t> &x) {
  const ir::Window &window = op.attrs().window;
  std::vector<int64_t> kernel{x[0], x[1]}, y{x[0], x[1]};
  kernel.insert(kernel.end(), window.kernel.begin(), window.kernel.end());
  for (int64_t size : outputSpatial(window, x, kernel))
    y.push_back(size);
  Geometry g = geometry(window, x, kernel, y);
  g.filters = g.channels, g.groups = g.channels;
  return {g, op.kind() == ir::OpKind::MaxPoolGrad ? x : y}; // max_pool, max_pool_gather: y
}

} // namespace tg::runtime
