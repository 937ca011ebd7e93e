// Convolution and max pooling on the CPU (Ops.def's conv, conv_transpose, conv_filter_grad, max_pool,
// max_pool_grad and max_pool_gather; f32 convolutions through oneDNN, below): direct loops over one window's
// geometry, PyTorch's semantics (NCHW, OIHW, a cross-correlation; a pooled gradient to each window's first
// maximum), split between threads so that each thread writes outputs of its own (no atomics, the same sums in
// the same order on every run). One spatial axis is the second of two with a height of 1.
#include "runtime/KernelSupport.h"
#include "runtime/OpenMpRuntime.h"
#include "runtime/WindowGeometry.h"
#include "runtime/WorkerPool.h"

#include <algorithm>
#include <atomic>
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

/// Whether `v` replaces `current` as a window's first maximum so far: larger, or a NaN where there is none
/// yet (after a NaN, nothing does).
template <typename T>
bool replaces(T v, T current) {
  if constexpr (std::is_floating_point_v<T>) return !std::isnan(current) && !(v <= current);
  return v > current;
}

/// rowMaxima of the commonest pooling, 2 x 2 windows side by side (stride 2, no padding, no dilation): each
/// window whole, its four places compared in C order, so that the loop is the same few operations for every
/// window.
template <typename T>
void rowMaxima2x2(const Geometry &g, const T *plane, int64_t oy, std::vector<int64_t> &best,
                  std::vector<T> &value) {
  int64_t top = 2 * oy * g.inW;
  const T *upper = plane + top, *lower = upper + g.inW;
  for (int64_t ox = 0; ox < g.outW; ++ox) {
    int64_t at = top + 2 * ox;
    T m = upper[2 * ox];
    if (replaces(upper[2 * ox + 1], m)) m = upper[2 * ox + 1], at = top + 2 * ox + 1;
    if (replaces(lower[2 * ox], m)) m = lower[2 * ox], at = top + g.inW + 2 * ox;
    if (replaces(lower[2 * ox + 1], m)) m = lower[2 * ox + 1], at = top + g.inW + 2 * ox + 1;
    best[static_cast<size_t>(ox)] = at;
    value[static_cast<size_t>(ox)] = m;
  }
}

/// The first maximum of each window of output row oy of a plane of x: at best[ox] its place in the plane
/// (iy * inW + ix; -1 for a window of padding only, which the padding rule excludes) and its value. A
/// window's places are visited in C order and a NaN wins at once, as in PyTorch; the row's windows advance
/// together, one window place at a time, so that the innermost loop runs along the row.
template <typename T>
void rowMaxima(const Geometry &g, const T *plane, int64_t oy, std::vector<int64_t> &best,
               std::vector<T> &value) {
  if (g.kH == 2 && g.kW == 2 && g.strideH == 2 && g.strideW == 2 && g.dilationH == 1 && g.dilationW == 1 &&
      g.padTop == 0 && g.padLeft == 0)
    return rowMaxima2x2(g, plane, oy, best, value);
  std::fill(best.begin(), best.end(), -1);
  for (int64_t ky = 0; ky < g.kH; ++ky) {
    int64_t iy = g.row(oy, ky);
    if (iy < 0 || iy >= g.inH) continue;
    const T *line = plane + iy * g.inW;
    for (int64_t kx = 0; kx < g.kW; ++kx) {
      // The outputs whose window's place kx falls inside the row: column(ox, kx) in [0, inW).
      int64_t shift = g.padLeft - kx * g.dilationW;
      int64_t first = shift > 0 ? (shift + g.strideW - 1) / g.strideW : 0;
      int64_t last = std::min(g.outW - 1, (g.inW - 1 + shift) / g.strideW); // a negative numerator: none
      if (g.inW - 1 + shift < 0) continue;
      int64_t rowPlace = iy * g.inW;
      for (int64_t ox = first; ox <= last; ++ox) {
        int64_t ix = ox * g.strideW - shift;
        T v = line[ix], current = value[ox];
        bool take = best[ox] < 0 || replaces(v, current);
        best[ox] = take ? rowPlace + ix : best[ox];
        value[ox] = take ? v : current;
      }
    }
  }
}

/// max_pool: each window's maximum; max_pool_grad (`second` the gradient of y): zeros but at each window's
/// first maximum, where its gradients add up, window by window in C order; max_pool_gather: each window's
/// element of `second` (x's shape) at its first maximum. The planes split between threads.
template <typename T>
void maxPool(ir::OpKind kind, const Geometry &g, const T *x, const T *second, T *out) {
  const T *gradient = kind == ir::OpKind::MaxPoolGrad ? second : nullptr;
  int64_t planes = g.n * g.channels,
          parts = std::clamp<int64_t>(hostThreads(), 1, std::max<int64_t>(planes, 1));
  parallelFor(parts, [&](int64_t part) {
    std::vector<int64_t> best(static_cast<size_t>(g.outW));
    std::vector<T> value(static_cast<size_t>(g.outW));
    for (int64_t plane = planes * part / parts; plane < planes * (part + 1) / parts; ++plane) {
      const T *in = x + plane * g.inH * g.inW;
      T *dx = gradient ? out + plane * g.inH * g.inW : nullptr;
      if (dx) std::fill(dx, dx + g.inH * g.inW, T(0));
      for (int64_t oy = 0; oy < g.outH; ++oy) {
        rowMaxima(g, in, oy, best, value);
        if (dx) {
          const T *gy = gradient + (plane * g.outH + oy) * g.outW;
          for (int64_t ox = 0; ox < g.outW; ++ox)
            if (best[ox] >= 0) dx[best[ox]] += gy[ox];
        } else {
          T *y = out + (plane * g.outH + oy) * g.outW;
          const T *v = kind == ir::OpKind::MaxPoolGather ? second + plane * g.inH * g.inW : nullptr;
          for (int64_t ox = 0; ox < g.outW; ++ox)
            y[ox] = best[ox] < 0 ? T(0) : v ? v[best[ox]] : value[ox];
        }
      }
    }
  });
}

/// An f32 convolution by one oneDNN primitive (its forward, backward-data or backward-weights convolution) on
/// the calling thread, from and to the plain layouts tgc's tensors have: false where oneDNN declines the
/// geometry (an output padding as large as the stride, say).
bool convolveOnceWithDnnl(ir::OpKind kind, const Geometry &g, const float *a, const float *b, float *out) {
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
  // The primitives choose their layouts (`any`: oneDNN's blocked ones where its kernels want them), and
  // operands are reordered from and to tgc's plain ones around the call where they differ: as PyTorch does,
  // and measured with bench/cnn, the small network's step 15-20% faster than on plain layouts (both
  // gradients of bench/cnn's conv2d about 40% faster; the wide network's step the same).
  auto anyOf = [&](const memory::desc &plain) {
    return memory::desc(plain.dims(), f32, memory::format_tag::any);
  };
  try {
    dnnl::stream stream(engine);
    dnnl::convolution_forward::primitive_desc forward(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, anyOf(sourceDesc),
         anyOf(weightsDesc), anyOf(destinationDesc), strides, dilation, padBefore, padAfter},
        engine);
    auto bind = [&](const memory::desc &desc, const float *data) {
      return memory(desc, engine, const_cast<float *>(data));
    };
    // An operand in the layout `want`: the plain data itself, or a reordered copy.
    auto input = [&](const memory::desc &want, const memory::desc &plain, const float *data) {
      memory user = bind(plain, data);
      if (want == plain) return user;
      memory converted(want, engine);
      dnnl::reorder(user, converted).execute(stream, user, converted);
      return converted;
    };
    memory result;
    memory::desc resultPlain;
    auto output = [&](const memory::desc &want, const memory::desc &plain) {
      resultPlain = plain;
      result = want == plain ? bind(plain, out) : memory(want, engine);
      return result;
    };
    // The backward convolutions take the same descriptors, the forward one as their hint.
    auto backward = [&](auto primitive) {
      return typename decltype(primitive)::primitive_desc(
          {dnnl::algorithm::convolution_direct, anyOf(sourceDesc), anyOf(weightsDesc), anyOf(destinationDesc),
           strides, dilation, padBefore, padAfter},
          engine, forward);
    };
    if (kind == ir::OpKind::Conv) {
      dnnl::convolution_forward(forward).execute(
          stream, {{DNNL_ARG_SRC, input(forward.src_desc(), sourceDesc, a)},
                   {DNNL_ARG_WEIGHTS, input(forward.weights_desc(), weightsDesc, b)},
                   {DNNL_ARG_DST, output(forward.dst_desc(), destinationDesc)}});
    } else if (kind == ir::OpKind::ConvTranspose) { // (gy, w) -> dx
      auto desc = backward(dnnl::convolution_backward_data());
      dnnl::convolution_backward_data(desc).execute(
          stream, {{DNNL_ARG_DIFF_DST, input(desc.diff_dst_desc(), destinationDesc, a)},
                   {DNNL_ARG_WEIGHTS, input(desc.weights_desc(), weightsDesc, b)},
                   {DNNL_ARG_DIFF_SRC, output(desc.diff_src_desc(), sourceDesc)}});
    } else { // (x, gy) -> dw
      auto desc = backward(dnnl::convolution_backward_weights());
      dnnl::convolution_backward_weights(desc).execute(
          stream, {{DNNL_ARG_SRC, input(desc.src_desc(), sourceDesc, a)},
                   {DNNL_ARG_DIFF_DST, input(desc.diff_dst_desc(), destinationDesc, b)},
                   {DNNL_ARG_DIFF_WEIGHTS, output(desc.diff_weights_desc(), weightsDesc)}});
    }
    if (result.get_desc() != resultPlain) {
      memory plain = bind(resultPlain, out);
      dnnl::reorder(result, plain).execute(stream, result, plain);
    }
    stream.wait();
  } catch (const dnnl::error &) {
    return false;
  }
  return true;
}

/// f32 convolutions by oneDNN's primitives, the batch split between tgc's threads, each part a primitive run
/// on its thread alone (so that the process has one set of threads: oneDNN's OpenMP threads would spin after
/// each call, taking the cores of the kernels that run next, as docs/optimizer.md tells of gemm). The
/// filters' gradient, a sum over the batch, is each part's sum into a buffer of its own, then those buffers
/// added in order. False where oneDNN declines the geometry, which the direct loops then compute.
bool convolveWithDnnl(ir::OpKind kind, const Geometry &g, const float *a, const float *b, float *out) {
  if (g.n == 0) return false; // nothing to convolve: the loops' zeros where there is a result
  double work = 2.0 * static_cast<double>(g.n * g.filters * g.outH * g.outW) *
                static_cast<double>(g.channelsPerGroup() * g.kH * g.kW);
  int64_t parts = std::clamp<int64_t>(std::min<double>(hostThreads(), work / kMultiplyAddsPerThread), 1,
                                      std::max<int64_t>(g.n, 1));
  int64_t inputImage = g.channels * g.inH * g.inW, outputImage = g.filters * g.outH * g.outW;
  int64_t filterElements = g.filters * g.channelsPerGroup() * g.kH * g.kW;
  bool filterGradient = kind == ir::OpKind::ConvFilterGrad;
  std::vector<float> partials(filterGradient ? static_cast<size_t>((parts - 1) * filterElements) : 0);
  std::atomic<bool> declined{false};
  parallelFor(parts, [&](int64_t part) {
    int64_t begin = g.n * part / parts, end = g.n * (part + 1) / parts;
    Geometry images = g;
    images.n = end - begin;
    // The part's images of each batched operand: x and y (conv), gy and dx (conv_transpose), x and gy.
    int64_t aImage = kind == ir::OpKind::ConvTranspose ? outputImage : inputImage;
    const float *partA = a + begin * aImage, *partB = filterGradient ? b + begin * outputImage : b;
    float *partOut = filterGradient ? (part == 0 ? out : partials.data() + (part - 1) * filterElements)
                                    : out + begin * (kind == ir::OpKind::Conv ? outputImage : inputImage);
    OneOpenMpThread oneThread;
    if (!convolveOnceWithDnnl(kind, images, partA, partB, partOut)) declined = true;
  });
  if (declined) return false;
  for (int64_t part = 1; filterGradient && part < parts; ++part)
    for (int64_t i = 0; i < filterElements; ++i)
      out[i] += partials[static_cast<size_t>((part - 1) * filterElements + i)];
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
  Tensor second = inputs.size() > 1 ? inputs[1].contiguous() : Tensor(); // gy, or v
  Tensor out = Tensor::empty(x.dtype(), shapes.output);
  if (out.numElements() == 0) return out;
  visitDType(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>)
      TG_ASSERT(false) << op.name() << " of bool";
    else
      maxPool(op.kind(), g, x.data<T>(), inputs.size() > 1 ? second.data<T>() : nullptr, out.data<T>());
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
