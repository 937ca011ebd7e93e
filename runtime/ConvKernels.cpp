// Convolution and max pooling on the CPU (Ops.def's conv, conv_transpose, conv_filter_grad, max_pool and
// max_pool_grad): direct loops over one window's geometry, PyTorch's semantics (NCHW, OIHW, a
// cross-correlation; a pooled gradient to each window's first maximum), split between threads so that each
// thread writes outputs of its own (no atomics, the same sums in the same order on every run). One spatial
// axis is the second of two with a height of 1.
#include "runtime/KernelSupport.h"
#include "runtime/WindowGeometry.h"
#include "runtime/WorkerPool.h"

#include <algorithm>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

namespace tg::runtime {

namespace {

template <typename T>
void forward(const Geometry &g, const T *x, const T *w, T *y) {
  int64_t cg = g.channelsPerGroup(), og = g.filtersPerGroup();
  parallelFor(g.n * g.filters, [&](int64_t job) {
    int64_t n = job / g.filters, o = job % g.filters, group = o / og;
    const T *filter = w + o * cg * g.kH * g.kW;
    T *out = y + job * g.outH * g.outW;
    for (int64_t oy = 0; oy < g.outH; ++oy)
      for (int64_t ox = 0; ox < g.outW; ++ox) {
        T sum = 0;
        for (int64_t c = 0; c < cg; ++c) {
          const T *plane = x + (n * g.channels + group * cg + c) * g.inH * g.inW;
          for (int64_t ky = 0; ky < g.kH; ++ky) {
            int64_t iy = g.row(oy, ky);
            if (iy < 0 || iy >= g.inH) continue;
            for (int64_t kx = 0; kx < g.kW; ++kx) {
              int64_t ix = g.column(ox, kx);
              if (ix < 0 || ix >= g.inW) continue;
              sum += plane[iy * g.inW + ix] * filter[(c * g.kH + ky) * g.kW + kx];
            }
          }
        }
        out[oy * g.outW + ox] = sum;
      }
  });
}

/// dx[n, ci, iy, ix]: the sum over the outputs that read it of gy times the filter's weight there.
template <typename T>
void transposed(const Geometry &g, const T *gy, const T *w, T *dx) {
  int64_t cg = g.channelsPerGroup(), og = g.filtersPerGroup();
  parallelFor(g.n * g.channels, [&](int64_t job) {
    int64_t n = job / g.channels, ci = job % g.channels, group = ci / cg, c = ci % cg;
    T *out = dx + job * g.inH * g.inW;
    for (int64_t iy = 0; iy < g.inH; ++iy)
      for (int64_t ix = 0; ix < g.inW; ++ix) {
        T sum = 0;
        for (int64_t o = group * og; o < (group + 1) * og; ++o) {
          const T *plane = gy + (n * g.filters + o) * g.outH * g.outW;
          const T *filter = w + (o * cg + c) * g.kH * g.kW;
          for (int64_t ky = 0; ky < g.kH; ++ky) {
            int64_t ty = iy + g.padTop - ky * g.dilationH;
            if (ty < 0 || ty % g.strideH != 0 || ty / g.strideH >= g.outH) continue;
            for (int64_t kx = 0; kx < g.kW; ++kx) {
              int64_t tx = ix + g.padLeft - kx * g.dilationW;
              if (tx < 0 || tx % g.strideW != 0 || tx / g.strideW >= g.outW) continue;
              sum += plane[(ty / g.strideH) * g.outW + tx / g.strideW] * filter[ky * g.kW + kx];
            }
          }
        }
        out[iy * g.inW + ix] = sum;
      }
  });
}

/// dw[o, c, ky, kx]: the sum over the batch and the outputs of gy times the input each read there.
template <typename T>
void filterGradient(const Geometry &g, const T *x, const T *gy, T *dw) {
  int64_t cg = g.channelsPerGroup(), og = g.filtersPerGroup();
  parallelFor(g.filters, [&](int64_t o) {
    int64_t group = o / og;
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t ky = 0; ky < g.kH; ++ky)
        for (int64_t kx = 0; kx < g.kW; ++kx) {
          T sum = 0;
          for (int64_t n = 0; n < g.n; ++n) {
            const T *plane = x + (n * g.channels + group * cg + c) * g.inH * g.inW;
            const T *grad = gy + (n * g.filters + o) * g.outH * g.outW;
            for (int64_t oy = 0; oy < g.outH; ++oy) {
              int64_t iy = g.row(oy, ky);
              if (iy < 0 || iy >= g.inH) continue;
              for (int64_t ox = 0; ox < g.outW; ++ox) {
                int64_t ix = g.column(ox, kx);
                if (ix < 0 || ix >= g.inW) continue;
                sum += grad[oy * g.outW + ox] * plane[iy * g.inW + ix];
              }
            }
          }
          dw[((o * cg + c) * g.kH + ky) * g.kW + kx] = sum;
        }
  });
}

/// The place of the first maximum of the window of output (oy, ox) in a plane of the input (y * inW + x), or
/// -1 for a window of padding only (which the padding rule excludes); a NaN wins at once, as it does in
/// PyTorch.
template <typename T>
int64_t windowMaximum(const Geometry &g, const T *plane, int64_t oy, int64_t ox) {
  int64_t best = -1;
  for (int64_t ky = 0; ky < g.kH; ++ky) {
    int64_t iy = g.row(oy, ky);
    if (iy < 0 || iy >= g.inH) continue;
    for (int64_t kx = 0; kx < g.kW; ++kx) {
      int64_t ix = g.column(ox, kx);
      if (ix < 0 || ix >= g.inW) continue;
      T value = plane[iy * g.inW + ix];
      if (best < 0 || value > plane[best]) best = iy * g.inW + ix;
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(value)) return iy * g.inW + ix;
    }
  }
  return best;
}

/// max_pool: each window's maximum; max_pool_grad (with `gradient`): zeros but at each window's first
/// maximum, where its gradients add up. A plane per thread at a time.
template <typename T>
void maxPool(const Geometry &g, const T *x, const T *gradient, T *out) {
  parallelFor(g.n * g.channels, [&](int64_t plane) {
    const T *in = x + plane * g.inH * g.inW;
    if (gradient) {
      T *dx = out + plane * g.inH * g.inW;
      std::fill(dx, dx + g.inH * g.inW, T(0));
      const T *gy = gradient + plane * g.outH * g.outW;
      for (int64_t oy = 0; oy < g.outH; ++oy)
        for (int64_t ox = 0; ox < g.outW; ++ox)
          if (int64_t at = windowMaximum(g, in, oy, ox); at >= 0) dx[at] += gy[oy * g.outW + ox];
      return;
    }
    T *y = out + plane * g.outH * g.outW;
    for (int64_t oy = 0; oy < g.outH; ++oy)
      for (int64_t ox = 0; ox < g.outW; ++ox) {
        int64_t at = windowMaximum(g, in, oy, ox);
        y[oy * g.outW + ox] = at >= 0 ? in[at] : T(0);
      }
  });
}

/// f32 convolutions by oneDNN's primitives (its forward, backward-data and backward-weights convolutions, on
/// its own threads), on the plain layouts tgc's tensors have: false where oneDNN declines the geometry (an
/// output padding as large as the stride, say), which the direct loops then compute.
bool convolveWithDnnl(ir::OpKind kind, const Geometry &g, const float *a, const float *b, float *out) {
  using dnnl::memory;
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  memory::dims source{g.n, g.channels, g.inH, g.inW}, destination{g.n, g.filters, g.outH, g.outW},
      weights = g.groups == 1 ? memory::dims{g.filters, g.channelsPerGroup(), g.kH, g.kW}
                              : memory::dims{g.groups, g.filtersPerGroup(), g.channelsPerGroup(), g.kH, g.kW};
  auto f32 = memory::data_type::f32;
  memory::desc sourceDesc(source, f32, memory::format_tag::nchw),
      destinationDesc(destination, f32, memory::format_tag::nchw),
      weightsDesc(weights, f32, g.groups == 1 ? memory::format_tag::oihw : memory::format_tag::goihw);
  memory::dims strides{g.strideH, g.strideW}, dilation{g.dilationH - 1, g.dilationW - 1},
      padBefore{g.padTop, g.padLeft}, padAfter{g.padBottom, g.padRight};
  try {
    dnnl::stream stream(engine);
    dnnl::convolution_forward::primitive_desc forward(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, sourceDesc, weightsDesc,
         destinationDesc, strides, dilation, padBefore, padAfter},
        engine);
    auto bind = [&](const memory::desc &desc, const float *data) {
      return memory(desc, engine, const_cast<float *>(data));
    };
    if (kind == ir::OpKind::Conv) {
      dnnl::convolution_forward(forward).execute(stream, {{DNNL_ARG_SRC, bind(sourceDesc, a)},
                                                          {DNNL_ARG_WEIGHTS, bind(weightsDesc, b)},
                                                          {DNNL_ARG_DST, bind(destinationDesc, out)}});
    } else {
      // The backward convolutions take the same descriptors, the forward one as their hint.
      auto backward = [&](auto primitive, std::unordered_map<int, memory> arguments) {
        using Primitive = decltype(primitive);
        typename Primitive::primitive_desc desc({dnnl::algorithm::convolution_direct, sourceDesc, weightsDesc,
                                                 destinationDesc, strides, dilation, padBefore, padAfter},
                                                engine, forward);
        Primitive(desc).execute(stream, arguments);
      };
      if (kind == ir::OpKind::ConvTranspose) // (gy, w) -> dx
        backward(dnnl::convolution_backward_data(), {{DNNL_ARG_DIFF_DST, bind(destinationDesc, a)},
                                                     {DNNL_ARG_WEIGHTS, bind(weightsDesc, b)},
                                                     {DNNL_ARG_DIFF_SRC, bind(sourceDesc, out)}});
      else // (x, gy) -> dw
        backward(dnnl::convolution_backward_weights(), {{DNNL_ARG_SRC, bind(sourceDesc, a)},
                                                        {DNNL_ARG_DIFF_DST, bind(destinationDesc, b)},
                                                        {DNNL_ARG_DIFF_WEIGHTS, bind(weightsDesc, out)}});
    }
    stream.wait();
  } catch (const dnnl::error &) {
    return false;
  }
  return true;
}

/// Whether f32 convolutions go to oneDNN (the default) or to the direct loops (TGC_CONV=direct in the
/// environment: what the tests and bench/cnn compare oneDNN's with).
bool useDnnl() {
  static const bool dnnl = [] {
    const char *choice = std::getenv("TGC_CONV");
    return !(choice && std::string(choice) == "direct");
  }();
  return dnnl;
}

} // namespace

Tensor poolingKernel(const ir::Op &op, const std::vector<Tensor> &inputs) {
  Tensor x = inputs[0].contiguous();
  WindowShapes shapes = poolingShapes(op, x.shape());
  const Geometry &g = shapes.geometry;
  bool gradient = op.kind() == ir::OpKind::MaxPoolGrad;
  Tensor gy = gradient ? inputs[1].contiguous() : Tensor();
  Tensor out = Tensor::empty(x.dtype(), shapes.output);
  if (out.numElements() == 0) return out;
  visitDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>)
      TG_ASSERT(false) << op.name() << " of bool";
    else
      maxPool(g, x.data<T>(), gradient ? gy.data<T>() : nullptr, out.data<T>());
  });
  return out;
}

Tensor convolutionKernel(const ir::Op &op, const std::vector<Tensor> &inputs) {
  Tensor a = inputs[0].contiguous(), b = inputs[1].contiguous();
  WindowShapes shapes = convolutionShapes(op, a.shape(), b.shape());
  const Geometry &g = shapes.geometry;
  Tensor out = Tensor::empty(a.dtype(), shapes.output);
  if (out.numElements() == 0) return out;
  visitDType(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      const T *first = a.data<T>(), *second = b.data<T>();
      T *result = out.data<T>();
      if constexpr (std::is_same_v<T, float>)
        if (useDnnl() && convolveWithDnnl(op.kind(), g, first, second, result)) return;
      if (op.kind() == ir::OpKind::Conv)
        forward(g, first, second, result);
      else if (op.kind() == ir::OpKind::ConvTranspose)
        transposed(g, first, second, result);
      else
        filterGradient(g, first, second, result);
    } else {
      TG_ASSERT(false) << op.name() << " of " << ir::dtypeName(a.dtype());
    }
  });
  return out;
}

} // namespace tg::runtime
