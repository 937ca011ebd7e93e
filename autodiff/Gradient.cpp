// Reverse-mode differentiation: the gradient rule of every op (GradientBuilder::inputGradients, one switch)
// and the reverse walk that applies them (grad).
#include "autodiff/Gradient.h"

#include "autodiff/LoopGradient.h"
#include "ir/Assert.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace tg::autodiff {

using namespace ir;

namespace {

OpAttrs axesAttrs(std::vector<int64_t> axes, bool keepdims = false) {
  OpAttrs attrs;
  attrs.axes = std::move(axes);
  attrs.keepdims = keepdims;
  return attrs;
}

OpAttrs sliceAttrs(std::vector<SliceSpec> slices) {
  OpAttrs attrs;
  attrs.slices = std::move(slices);
  return attrs;
}

/// `start:stop:step` with either bound optional.
SliceSpec range(std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step = 1) {
  SliceSpec spec;
  spec.hasStart = start.has_value();
  spec.start = start.value_or(0);
  spec.hasStop = stop.has_value();
  spec.stop = stop.value_or(0);
  spec.step = step;
  return spec;
}

/// Slices that leave the first `axis` axes whole and apply `spec` to axis `axis`.
std::vector<SliceSpec> onAxis(size_t axis, SliceSpec spec) {
  std::vector<SliceSpec> slices(axis);
  slices.push_back(spec);
  return slices;
}

bool isWhole(const SliceSpec &spec) {
  return !spec.isIndex && !spec.hasStart && !spec.hasStop && spec.step == 1;
}

/// The sizes of `shape`, or nullopt when it has a symbolic dimension; with allowOneSymbolic, one symbolic
/// dimension becomes -1 (a reshape target).
std::optional<std::vector<int64_t>> staticSizes(const Shape &shape, bool allowOneSymbolic = false) {
  std::vector<int64_t> sizes;
  int symbolic = 0;
  for (const Dim &dim : shape) {
    sizes.push_back(dim.isStatic() ? dim.size() : -1);
    symbolic += dim.isStatic() ? 0 : 1;
  }
  if (symbolic > (allowOneSymbolic ? 1 : 0)) return std::nullopt;
  return sizes;
}

/// Emits gradient nodes, each with the location of the forward node being differentiated.
class GradientBuilder {
public:
  GradientBuilder(Graph &graph, SourceLoc loc) : graph_(graph), loc_(std::move(loc)) {}

  void setLoc(const SourceLoc &loc) { loc_ = loc; }

  /// The gradients of `node`'s inputs given `g`, the gradient of its output; nullptr where an input gets
  /// none. Only inputs marked in `wanted` are computed.
  std::vector<Value *> inputGradients(const Node &node, Value *g, const std::vector<bool> &wanted);

  Value *add(Value *a, Value *b) { return apply(OpKind::Add, {a, b}); }

  /// Zeros of `type`: a `zeros` node when the shape is static, else zeros_like of the value `like()` builds.
  template <typename Like>
  Value *zerosOf(const TensorType &type, Like like) {
    if (auto sizes = staticSizes(type.shape)) {
      OpAttrs attrs;
      attrs.shape = *sizes;
      attrs.dtype = type.dtype;
      return apply(OpKind::Zeros, {}, attrs);
    }
    return apply(OpKind::ZerosLike, {like()});
  }

  Value *constant(double value, DType dtype) { return graph_.addConstant(TensorData::scalar(dtype, value)); }

private:
  Value *apply(OpKind kind, std::vector<Value *> inputs, OpAttrs attrs = {}) {
    return graph_.addNode(Op(kind, std::move(attrs)), std::move(inputs), loc_)->output();
  }
  /// A 0-d constant of the dtype of the gradient being built.
  Value *scalar(double value) { return constant(value, dtype_); }
  Value *sub(Value *a, Value *b) { return apply(OpKind::Sub, {a, b}); }
  Value *mul(Value *a, Value *b) { return apply(OpKind::Mul, {a, b}); }
  Value *div(Value *a, Value *b) { return apply(OpKind::Div, {a, b}); }
  Value *neg(Value *a) { return apply(OpKind::Neg, {a}); }
  /// `g` where `mask` holds, 0 elsewhere (where rather than a multiplication, so inf * 0 gives no NaN).
  Value *maskWhere(Value *mask, Value *g) { return apply(OpKind::Where, {mask, g, scalar(0)}); }
  Value *maskUnless(Value *mask, Value *g) { return apply(OpKind::Where, {mask, scalar(0), g}); }

  Value *sumToShape(Value *g, const TensorType &target);
  Value *insertAxes(Value *v, const std::vector<int64_t> &axes);
  Value *broadcastLike(Value *v, Value *like);
  Value *reshapeLike(Value *v, Value *like);
  Value *reverse(Value *v, size_t axis) {
    return apply(OpKind::Slice, {v}, sliceAttrs(onAxis(axis, range({}, {}, -1))));
  }
  Value *swapLastAxes(Value *v);
  Value *zerosOfSlices(Value *x, const std::vector<std::vector<SliceSpec>> &chain);
  Value *reductionGradient(const Node &node, Value *g);
  std::pair<Value *, Value *> matmulGradients(Value *a, Value *b, Value *g, const std::vector<bool> &wanted);
  Value *sliceGradient(Value *g, Value *x, const std::vector<SliceSpec> &slices);
  std::vector<SliceSpec> joinedPieces(const Node &node);

  Graph &graph_;
  SourceLoc loc_;
  DType dtype_ = DType::F64;
};

/// Sums `g` (an elementwise result) over the axes along which an operand of type `target` was broadcast: the
/// leading axes it lacks and the axes where it has a static 1.
Value *GradientBuilder::sumToShape(Value *g, const TensorType &target) {
  const Shape &shape = g->type().shape;
  TG_ASSERT(shape.size() >= target.rank()) << "gradient " << g->type().str() << " for " << target.str();
  size_t leading = shape.size() - target.rank();
  std::vector<int64_t> ones;
  for (size_t i = 0; i < target.rank(); ++i)
    if (target.shape[i].isOne() && !shape[leading + i].isOne())
      ones.push_back(static_cast<int64_t>(leading + i));
  if (!ones.empty()) g = apply(OpKind::Sum, {g}, axesAttrs(ones, /*keepdims=*/true));
  if (leading > 0) {
    std::vector<int64_t> axes(leading);
    std::iota(axes.begin(), axes.end(), 0);
    g = apply(OpKind::Sum, {g}, axesAttrs(axes));
  }
  return g;
}

/// `v` with size-1 axes inserted at `axes` (ascending, counted in the result): a reshape (a view) when the
/// result has at most one symbolic dimension (its -1, which the reshape's type infers back), else one
/// single-input stack per axis, which keeps symbolic dimensions as they are.
Value *GradientBuilder::insertAxes(Value *v, const std::vector<int64_t> &axes) {
  if (axes.empty()) return v;
  Shape shape = v->type().shape;
  for (int64_t axis : axes) {
    TG_ASSERT(axis >= 0 && static_cast<size_t>(axis) <= shape.size())
        << "inserting axis " << axis << " into " << shapeString(shape);
    shape.insert(shape.begin() + axis, Dim::of(1));
  }
  if (auto sizes = staticSizes(shape, /*allowOneSymbolic=*/true)) {
    OpAttrs attrs;
    attrs.shape = *sizes;
    return apply(OpKind::Reshape, {v}, attrs);
  }
  for (int64_t axis : axes)
    v = apply(OpKind::Stack, {v}, axesAttrs({axis}));
  return v;
}

/// `v` broadcast to the shape of `like`: broadcast_to needs a static target, so a symbolic shape is reached
/// by multiplying with ones_like(like).
Value *GradientBuilder::broadcastLike(Value *v, Value *like) {
  if (v->type().shape == like->type().shape) return v;
  if (auto sizes = staticSizes(like->type().shape)) {
    OpAttrs attrs;
    attrs.shape = *sizes;
    return apply(OpKind::BroadcastTo, {v}, attrs);
  }
  return mul(apply(OpKind::OnesLike, {like}), v);
}

Value *GradientBuilder::reshapeLike(Value *v, Value *like) {
  auto sizes = staticSizes(like->type().shape, /*allowOneSymbolic=*/true);
  if (!sizes)
    throw UserError("grad: reshape of a symbolic shape is not differentiable yet: the gradient cannot be "
                    "reshaped back to " +
                        like->type().str() + ", which has more than one symbolic dimension",
                    loc_);
  OpAttrs attrs;
  attrs.shape = *sizes;
  return apply(OpKind::Reshape, {v}, attrs);
}

Value *GradientBuilder::swapLastAxes(Value *v) {
  std::vector<int64_t> perm(v->type().rank());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 2], perm.back());
  return apply(OpKind::Transpose, {v}, axesAttrs(perm));
}

/// Zeros shaped like x sliced by each step of `chain` in turn (built only when that shape is symbolic), or
/// nullptr when that shape is statically empty.
Value *GradientBuilder::zerosOfSlices(Value *x, const std::vector<std::vector<SliceSpec>> &chain) {
  TensorType type = x->type();
  for (const auto &slices : chain)
    type = inferType(Op(OpKind::Slice, sliceAttrs(slices)), {type});
  if (type.staticNumElements() == 0) return nullptr;
  return zerosOf(type, [&] {
    Value *sliced = x;
    for (const auto &slices : chain)
      sliced = apply(OpKind::Slice, {sliced}, sliceAttrs(slices));
    return sliced;
  });
}

/// Scatters the gradient of x[slices] back into zeros of x's shape, one sliced axis at a time: an index gets
/// its axis back, then zeros go before and after along the axis. The zeros are shaped like slices of x, which
/// always partition the axis (for start' <= stop' after Python's clamping; an empty slice has g of size 0):
///   before = x[:start][:stop] when stop >= 0, x[:start] when stop < 0 (or 0 <= start <= stop)
///   after  = x[stop:]         when stop >= 0, x[start:][stop:] when stop < 0
Value *GradientBuilder::sliceGradient(Value *g, Value *x, const std::vector<SliceSpec> &slices) {
  // Strided pieces do not concatenate: g is stored into zeros of x's shape (a host op).
  bool strided = std::any_of(slices.begin(), slices.end(), [](const SliceSpec &spec) {
    return !spec.isIndex && spec.step != 1 && !(spec.step == -1 && !spec.hasStart && !spec.hasStop);
  });
  OpAttrs region;
  region.slices = slices;
  if (strided) return apply(OpKind::SetSlice, {apply(OpKind::ZerosLike, {x}), g}, region);
  // The other axes of the zeros match g: axes already done have x's size, later ones are still sliced.
  std::vector<SliceSpec> rest = slices;
  for (size_t axis = 0; axis < slices.size(); ++axis) {
    SliceSpec spec = slices[axis];
    rest[axis] = SliceSpec{};
    if (spec.isIndex) {
      g = insertAxes(g, {static_cast<int64_t>(axis)});
      int64_t index = spec.start;
      spec = range(index, index == -1 ? std::nullopt : std::optional<int64_t>(index + 1));
    }
    if (isWhole(spec)) continue;
    if (spec.step == -1 && !spec.hasStart && !spec.hasStop) {
      g = reverse(g, axis);
      continue;
    }
    auto restWith = [&](SliceSpec piece) {
      std::vector<SliceSpec> sliced = rest;
      sliced[axis] = piece;
      return sliced;
    };
    std::vector<Value *> parts;
    bool stopFromEnd = spec.hasStop && spec.stop < 0;
    if (spec.hasStart) {
      std::vector<std::vector<SliceSpec>> chain{restWith(range({}, spec.start))};
      if (spec.hasStop && !stopFromEnd && (spec.start < 0 || spec.start > spec.stop))
        chain.push_back(onAxis(axis, range({}, spec.stop)));
      parts.push_back(zerosOfSlices(x, chain));
    }
    parts.push_back(g);
    if (spec.hasStop) {
      std::vector<std::vector<SliceSpec>> chain{restWith(range(spec.stop, {}))};
      if (stopFromEnd && spec.hasStart)
        chain = {restWith(range(spec.start, {})), onAxis(axis, range(spec.stop, {}))};
      parts.push_back(zerosOfSlices(x, chain));
    }
    std::erase(parts, nullptr);
    if (parts.size() > 1) g = apply(OpKind::Concat, parts, axesAttrs({static_cast<int64_t>(axis)}));
  }
  return g;
}

/// Where each input of a concat or stack lies along the axis, as a slice of the output: index i for stack;
/// for concat, offsets count from the front up to the input whose size along the axis is symbolic and from
/// the back after it, so one such input is fine.
std::vector<SliceSpec> GradientBuilder::joinedPieces(const Node &node) {
  size_t axis = static_cast<size_t>(node.op().attrs().axes.at(0));
  const auto &inputs = node.inputs();
  std::vector<SliceSpec> pieces(inputs.size());
  if (node.op().kind() == OpKind::Stack) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      pieces[i].isIndex = true;
      pieces[i].start = static_cast<int64_t>(i);
    }
    return pieces;
  }
  size_t symbolic = inputs.size();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->type().shape[axis].isStatic()) continue;
    if (symbolic != inputs.size())
      throw UserError(
          "grad: concat of several arrays with symbolic sizes along the axis is not differentiable yet",
          loc_);
    symbolic = i;
  }
  auto sizeOf = [&](size_t i) { return inputs[i]->type().shape[axis].size(); };
  int64_t front = 0, back = 0;
  for (size_t i = symbolic + 1; i < inputs.size(); ++i)
    back += sizeOf(i);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i < symbolic) {
      pieces[i] = range(front, front + sizeOf(i));
      front += sizeOf(i);
    } else if (i == symbolic) {
      pieces[i] = range(front, back ? std::optional<int64_t>(-back) : std::nullopt);
    } else {
      pieces[i] = range(-back, back > sizeOf(i) ? std::optional<int64_t>(sizeOf(i) - back) : std::nullopt);
      back -= sizeOf(i);
    }
  }
  return pieces;
}

/// A 1-D operand becomes a matrix (as NumPy does) and g gets the matching size-1 axes; then
/// d(a) = g @ b^T and d(b) = a^T @ g, summed over broadcast batch axes. For a 1-D b, d(b)^T = g^T @ a is
/// built instead, so that summing the leading axes also drops the size-1 axis.
std::pair<Value *, Value *> GradientBuilder::matmulGradients(Value *a, Value *b, Value *g,
                                                             const std::vector<bool> &wanted) {
  bool vectorA = a->type().rank() == 1, vectorB = b->type().rank() == 1;
  int64_t batchRank = static_cast<int64_t>(g->type().rank()) - (vectorA ? 0 : 1) - (vectorB ? 0 : 1);
  std::vector<int64_t> axes;
  if (vectorA) axes.push_back(batchRank);
  if (vectorB) axes.push_back(batchRank + 1);
  g = insertAxes(g, axes);
  Value *matrixA = vectorA && wanted[1] ? insertAxes(a, {0}) : a;
  Value *matrixB = vectorB && wanted[0] ? insertAxes(b, {1}) : b;
  Value *gradA = nullptr, *gradB = nullptr;
  if (wanted[0]) gradA = sumToShape(apply(OpKind::Matmul, {g, swapLastAxes(matrixB)}), a->type());
  if (wanted[1])
    gradB = sumToShape(vectorB ? apply(OpKind::Matmul, {swapLastAxes(g), matrixA})
                               : apply(OpKind::Matmul, {swapLastAxes(matrixA), g}),
                       b->type());
  return {gradA, gradB};
}

/// sum, mean, max, min and prod: g and the result get their reduced axes back (keepdims form) and broadcast
/// against x.
Value *GradientBuilder::reductionGradient(const Node &node, Value *g) {
  Value *x = node.input(0);
  const OpAttrs &attrs = node.op().attrs();
  // Leading reduced axes need no size-1 axis: broadcasting adds them (a full reduction's 0-d g stays 0-d).
  // The others are counted in a shape without the leading ones: reducing [2, 3, 4] over axes 0 and 2 gives g
  // of [3], which becomes [3, 1], not [3, ., 1].
  size_t leading = 0;
  while (leading < attrs.axes.size() && attrs.axes[leading] == static_cast<int64_t>(leading))
    ++leading;
  std::vector<int64_t> inner;
  for (size_t i = leading; i < attrs.axes.size(); ++i)
    inner.push_back(attrs.axes[i] - static_cast<int64_t>(leading));
  auto keepdims = [&](Value *v) { return attrs.keepdims ? v : insertAxes(v, inner); };
  switch (node.op().kind()) {
  case OpKind::Sum:
    return broadcastLike(keepdims(g), x);
  case OpKind::Mean: {
    std::optional<int64_t> count = 1;
    for (int64_t axis : attrs.axes) {
      const Dim &dim = x->type().shape[axis];
      count = dim.isStatic() && count ? std::optional<int64_t>(*count * dim.size()) : std::nullopt;
    }
    Value *counts = count ? scalar(static_cast<double>(*count))
                          : apply(OpKind::Sum, {apply(OpKind::OnesLike, {x})}, axesAttrs(attrs.axes, true));
    return broadcastLike(div(keepdims(g), counts), x);
  }
  case OpKind::Max:
  case OpKind::Min: {
    Value *isExtreme = apply(OpKind::Eq, {x, keepdims(node.output())});
    return maskWhere(isExtreme, keepdims(g));
  }
  case OpKind::Prod: {
    // Exact at zeros: per group, count the zeros and take the product of the other elements.
    Value *isZero = apply(OpKind::Eq, {x, scalar(0)});
    Value *nonzero = apply(OpKind::Where, {isZero, scalar(1), x});
    OpAttrs toFloat;
    toFloat.dtype = dtype_;
    Value *zeroCount =
        apply(OpKind::Sum, {apply(OpKind::Cast, {isZero}, toFloat)}, axesAttrs(attrs.axes, true));
    Value *others = apply(OpKind::Prod, {nonzero}, axesAttrs(attrs.axes, true));
    Value *atZero = maskWhere(apply(OpKind::Eq, {zeroCount, scalar(1)}), others);
    Value *elsewhere = maskWhere(apply(OpKind::Eq, {zeroCount, scalar(0)}), div(others, nonzero));
    return mul(keepdims(g), apply(OpKind::Where, {isZero, atZero, elsewhere}));
  }
  default:
    TG_ASSERT(false) << "no reduction gradient for " << node.op().name();
    return nullptr;
  }
}

std::vector<Value *> GradientBuilder::inputGradients(const Node &node, Value *g,
                                                     const std::vector<bool> &wanted) {
  loc_ = node.loc();
  dtype_ = g->type().dtype;
  std::span<Value *const> in = node.inputs();
  Value *x = in[0], *y = node.output();
  Value *second = in.size() > 1 ? in[1] : nullptr;
  std::vector<Value *> grads(in.size(), nullptr);
  // Input i's gradient, computed only when wanted, summed over the axes its shape was broadcast along.
  auto set = [&](size_t i, auto compute) {
    if (wanted[i]) grads[i] = sumToShape(compute(), in[i]->type());
  };
  auto unary = [&](OpKind kind, Value *v) { return apply(kind, {v}); };
  switch (node.op().kind()) {
  case OpKind::Neg:
    set(0, [&] { return neg(g); });
    break;
  case OpKind::Abs:
    set(0, [&] { return mul(g, unary(OpKind::Sign, x)); });
    break;
  case OpKind::Exp:
    set(0, [&] { return mul(g, y); });
    break;
  case OpKind::Exp2:
    set(0, [&] { return mul(g, mul(y, scalar(std::numbers::ln2))); });
    break;
  case OpKind::Log:
    set(0, [&] { return div(g, x); });
    break;
  case OpKind::Log2:
    set(0, [&] { return div(g, mul(x, scalar(std::numbers::ln2))); });
    break;
  case OpKind::Log1p:
    set(0, [&] { return div(g, add(x, scalar(1))); });
    break;
  case OpKind::Expm1:
    set(0, [&] { return mul(g, add(y, scalar(1))); });
    break;
  case OpKind::Sqrt:
    set(0, [&] { return div(g, mul(y, scalar(2))); });
    break;
  case OpKind::Rsqrt:
    set(0, [&] { return mul(g, mul(scalar(-0.5), div(y, x))); }); // -x**-1.5 / 2 = -y / 2x
    break;
  case OpKind::Sin:
    set(0, [&] { return mul(g, unary(OpKind::Cos, x)); });
    break;
  case OpKind::Cos:
    set(0, [&] { return neg(mul(g, unary(OpKind::Sin, x))); });
    break;
  case OpKind::Tan: // 1 + tan(x)**2
    set(0, [&] { return mul(g, add(scalar(1), mul(y, y))); });
    break;
  case OpKind::Atan:
    set(0, [&] { return div(g, add(scalar(1), mul(x, x))); });
    break;
  case OpKind::Sinh:
    set(0, [&] { return mul(g, unary(OpKind::Cosh, x)); });
    break;
  case OpKind::Cosh:
    set(0, [&] { return mul(g, unary(OpKind::Sinh, x)); });
    break;
  case OpKind::Tanh:
    set(0, [&] { return mul(g, sub(scalar(1), mul(y, y))); });
    break;
  case OpKind::Sigmoid:
    set(0, [&] { return mul(g, mul(y, sub(scalar(1), y))); });
    break;
  case OpKind::Relu: // y > 0 exactly where x > 0 (NaN included): reading y, the forward pass keeps x to
                     // itself
    set(0, [&] { return maskWhere(apply(OpKind::Gt, {y, scalar(0)}), g); });
    break;
  case OpKind::Softplus:
    set(0, [&] { return mul(g, unary(OpKind::Sigmoid, x)); });
    break;
  case OpKind::Erf:
    set(0, [&] {
      return mul(g, mul(scalar(2 * std::numbers::inv_sqrtpi), unary(OpKind::Exp, neg(mul(x, x)))));
    });
    break;
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Round:
  case OpKind::Sign:
  case OpKind::FloorDiv:
  case OpKind::ZerosLike:
  case OpKind::OnesLike:
  case OpKind::Arange:
  case OpKind::Rand:
  case OpKind::Randn:
    break; // piecewise constant, or only the shape is used: zero gradient
  case OpKind::Cast:
    // Only float -> float casts carry a gradient (integers are never differentiated).
    set(0, [&] {
      OpAttrs back;
      back.dtype = x->type().dtype;
      return back.dtype == dtype_ ? g : apply(OpKind::Cast, {g}, back);
    });
    break;
  case OpKind::Add:
    set(0, [&] { return g; });
    set(1, [&] { return g; });
    break;
  case OpKind::Sub:
    set(0, [&] { return g; });
    set(1, [&] { return neg(g); });
    break;
  case OpKind::Mul:
    set(0, [&] { return mul(g, second); });
    set(1, [&] { return mul(g, x); });
    break;
  case OpKind::Div:
    set(0, [&] { return div(g, second); });
    set(1, [&] { return neg(div(mul(g, y), second)); }); // -a / b**2 = -y / b
    break;
  case OpKind::Mod: // a % b = a - floor(a / b) * b
    set(0, [&] { return g; });
    set(1, [&] { return neg(mul(g, unary(OpKind::Floor, div(x, second)))); });
    break;
  case OpKind::Pow:
    set(0, [&] { return mul(g, mul(second, apply(OpKind::Pow, {x, sub(second, scalar(1))}))); });
    set(1, [&] { return mul(g, mul(y, unary(OpKind::Log, x))); });
    break;
  case OpKind::Maximum:
  case OpKind::Minimum: {
    // The result equals the operand it came from; a tie goes to the first operand.
    Value *first = apply(OpKind::Eq, {y, x});
    set(0, [&] { return maskWhere(first, g); });
    set(1, [&] { return maskUnless(first, g); });
    break;
  }
  case OpKind::Where:
    set(1, [&] { return maskWhere(x, g); });
    set(2, [&] { return maskUnless(x, g); });
    break;
  case OpKind::Clip: {
    Value *lo = in[1], *hi = in[2];
    set(0, [&] {
      Value *inside = apply(OpKind::And, {apply(OpKind::Ge, {x, lo}), apply(OpKind::Le, {x, hi})});
      return maskWhere(inside, g);
    });
    set(1, [&] { return maskWhere(apply(OpKind::Lt, {x, lo}), g); });
    set(2, [&] { return maskWhere(apply(OpKind::Gt, {x, hi}), g); });
    break;
  }
  case OpKind::Sum:
  case OpKind::Mean:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Prod:
    set(0, [&] { return reductionGradient(node, g); });
    break;
  case OpKind::Matmul: {
    auto [gradA, gradB] = matmulGradients(x, second, g, wanted);
    grads = {gradA, gradB};
    break;
  }
  case OpKind::Transpose: {
    const std::vector<int64_t> &perm = node.op().attrs().axes;
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[perm[i]] = static_cast<int64_t>(i);
    set(0, [&] { return apply(OpKind::Transpose, {g}, axesAttrs(inverse)); });
    break;
  }
  case OpKind::Reshape:
    set(0, [&] { return reshapeLike(g, x); });
    break;
  case OpKind::BroadcastTo:
    set(0, [&] { return g; }); // sumToShape does the work
    break;
  case OpKind::Slice:
    set(0, [&] { return sliceGradient(g, x, node.op().attrs().slices); });
    break;
  case OpKind::Gather: { // each read position gets its gradient back, repeated ones summed: a scatter-add
    std::vector<Value *> inputs{apply(OpKind::ZerosLike, {x}), g};
    inputs.insert(inputs.end(), in.begin() + 1, in.end());
    set(0, [&] { return apply(OpKind::ScatterAdd, inputs, node.op().attrs()); });
    break;
  }
  case OpKind::ScatterAdd:
  case OpKind::ScatterSet: {
    // The update gets the gradient where it was written (a gather; to every one of repeated stores, as
    // Theano's set_subtensor); the base passes it on, but where a store replaced it.
    std::vector<Value *> indices(in.begin() + 2, in.end()), gathered{g}, cleared{g, nullptr};
    gathered.insert(gathered.end(), indices.begin(), indices.end());
    set(1, [&] { return sumToShape(apply(OpKind::Gather, gathered, node.op().attrs()), in[1]->type()); });
    if (node.op().kind() == OpKind::ScatterAdd) {
      set(0, [&] { return g; });
      break;
    }
    set(0, [&] {
      cleared[1] = apply(OpKind::ZerosLike, {in[1]});
      cleared.insert(cleared.end(), indices.begin(), indices.end());
      return apply(OpKind::ScatterSet, cleared, node.op().attrs());
    });
    break;
  }
  case OpKind::SetSlice: // the region's gradient to the update, the rest to the base
    set(0, [&] {
      return apply(OpKind::SetSlice, {g, apply(OpKind::ZerosLike, {in[1]})}, node.op().attrs());
    });
    set(1, [&] { return sumToShape(apply(OpKind::Slice, {g}, node.op().attrs()), in[1]->type()); });
    break;
  case OpKind::Conv:
  case OpKind::ConvTranspose:
  case OpKind::ConvFilterGrad: {
    // Bilinear: each operand's gradient is one of the three ops of the same window. conv(x, w): x's is
    // conv_transpose(g, w), w's conv_filter_grad(x, g); conv_transpose(y, w) is conv's adjoint in x: y's is
    // conv(g, w), w's conv_filter_grad(g, y); conv_filter_grad(x, gy): gy's is conv(x, g), x's
    // conv_transpose(gy, g).
    const Window &window = node.op().attrs().window;
    auto withWindow = [](Window w) {
      OpAttrs attrs;
      attrs.window = std::move(w);
      return attrs;
    };
    auto spatial = [](const TensorType &type) {
      std::vector<int64_t> sizes;
      for (size_t a = 2; a < type.rank(); ++a)
        sizes.push_back(type.shape[a].size());
      return sizes;
    };
    // A conv's window, no kernel and no output padding.
    Window plain = window;
    plain.kernel.clear();
    plain.outputPadding.assign(window.stride.size(), 0);
    // conv_transpose of y by filters with spatial sizes `kernel`, to an input of spatial sizes `to`.
    auto transposeTo = [&](Value *y, Value *filters, const std::vector<int64_t> &to) {
      Window w = plain;
      std::vector<int64_t> from = spatial(y->type()), kernel = spatial(filters->type());
      for (size_t a = 0; a < to.size(); ++a)
        w.outputPadding[a] = to[a] - ((from[a] - 1) * w.stride[a] - w.padBefore[a] - w.padAfter[a] +
                                      w.dilation[a] * (kernel[a] - 1) + 1);
      return apply(OpKind::ConvTranspose, {y, filters}, withWindow(std::move(w)));
    };
    auto filterGrad = [&](Value *input, Value *outputGrad, const std::vector<int64_t> &kernel) {
      Window w = plain;
      w.kernel = kernel;
      return apply(OpKind::ConvFilterGrad, {input, outputGrad}, withWindow(std::move(w)));
    };
    if (node.op().kind() == OpKind::Conv) {
      set(0, [&] { return transposeTo(g, in[1], spatial(in[0]->type())); });
      set(1, [&] { return filterGrad(in[0], g, spatial(in[1]->type())); });
    } else if (node.op().kind() == OpKind::ConvTranspose) {
      set(0, [&] { return apply(OpKind::Conv, {g, in[1]}, withWindow(plain)); });
      set(1, [&] { return filterGrad(g, in[0], spatial(in[1]->type())); });
    } else {
      set(0, [&] { return transposeTo(in[1], g, spatial(in[0]->type())); });
      set(1, [&] { return apply(OpKind::Conv, {in[0], g}, withWindow(plain)); });
    }
    break;
  }
  case OpKind::MaxPool: // to each window's first maximum
    set(0, [&] { return apply(OpKind::MaxPoolGrad, {x, g}, node.op().attrs()); });
    break;
  case OpKind::MaxPoolGrad: // adjoints of each other in their second operand; x's first maxima move by jumps
    set(1, [&] { return apply(OpKind::MaxPoolGather, {x, g}, node.op().attrs()); });
    break;
  case OpKind::MaxPoolGather:
    set(1, [&] { return apply(OpKind::MaxPoolGrad, {x, g}, node.op().attrs()); });
    break;
  case OpKind::ExpandDims: // the new size-1 axes summed away
    set(0, [&] { return apply(OpKind::Sum, {g}, axesAttrs(node.op().attrs().axes)); });
    break;
  case OpKind::Concat:
  case OpKind::Stack: {
    size_t axis = static_cast<size_t>(node.op().attrs().axes.at(0));
    std::vector<SliceSpec> pieces = joinedPieces(node);
    for (size_t i = 0; i < in.size(); ++i)
      set(i, [&] { return apply(OpKind::Slice, {g}, sliceAttrs(onAxis(axis, pieces[i]))); });
    break;
  }
  case OpKind::Cumsum: {
    // Each input element feeds every later output element: a cumsum from the other end.
    const std::vector<int64_t> &axes = node.op().attrs().axes;
    size_t axis = axes.empty() ? 0 : static_cast<size_t>(axes[0]);
    set(0, [&] {
      Value *summed = apply(OpKind::Cumsum, {reverse(g, axis)}, axesAttrs({static_cast<int64_t>(axis)}));
      return axes.empty() ? reshapeLike(reverse(summed, axis), x) : reverse(summed, axis);
    });
    break;
  }
  case OpKind::Sort:
    throw UserError("grad: 'sort' is not differentiable", loc_);
  default:
    TG_ASSERT(false) << "no gradient rule for " << node.op().name() << " on a float path";
  }
  return grads;
}

/// The nodes `cost` depends on, inputs before users (iterative depth-first post-order: deterministic, and
/// safe on long chains).
std::vector<Node *> nodesBefore(Value *cost) {
  std::vector<Node *> order;
  if (!cost->owner()) return order;
  std::unordered_set<const Node *> seen{cost->owner()};
  std::vector<std::pair<Node *, size_t>> stack{{cost->owner(), 0}};
  while (!stack.empty()) {
    auto &[node, next] = stack.back();
    if (next < node->inputs().size()) {
      Node *producer = node->input(next++)->owner();
      if (producer && seen.insert(producer).second) stack.push_back({producer, 0});
      continue;
    }
    order.push_back(node);
    stack.pop_back();
  }
  return order;
}

} // namespace

std::vector<Value *> grad(Graph &graph, Value *cost, const std::vector<Value *> &wrt, const SourceLoc &loc,
                          Disconnected disconnected) {
  const TensorType &costType = cost->type();
  if (!costType.isScalar())
    throw UserError("grad: the cost must be a scalar, but it is " + costType.str(), loc);
  if (!isFloat(costType.dtype))
    throw UserError("grad: the cost must be a float scalar, but it is " + costType.str(), loc);
  for (const Value *w : wrt) {
    DType dtype = w->type().dtype;
    if (isFloat(dtype)) continue;
    std::string what = w->name().empty() ? "a value of type " + w->type().str() : "'" + w->name() + "'";
    throw UserError("grad: cannot differentiate with respect to " + what + ", " +
                        (dtype == DType::Bool ? "a bool tensor" : "an integer tensor"),
                    loc);
  }

  // Forward: the float values that depend on some wrt through float values (every active value is a float).
  std::vector<Node *> order = nodesBefore(cost);
  if (disconnected == Disconnected::Raise) {
    std::unordered_set<const Value *> reached{cost};
    for (const Node *node : order)
      reached.insert(node->inputs().begin(), node->inputs().end());
    for (size_t i = 0; i < wrt.size(); ++i) {
      if (reached.count(wrt[i])) continue;
      std::string what =
          wrt[i]->name().empty() ? "argument " + std::to_string(i + 2) : "'" + wrt[i]->name() + "'";
      throw UserError(
          "grad: the cost does not depend on " + what +
              ", so its gradient would be zeros (a typo?); pass disconnected=\"zero\" if zeros are "
              "what you want",
          loc);
    }
  }
  std::unordered_set<const Value *> active(wrt.begin(), wrt.end());
  for (const Node *node : order)
    for (const Value *input : node->inputs())
      if (active.count(input))
        for (const Value *output : node->outputs())
          if (isFloat(output->type().dtype)) active.insert(output);

  // Backward: each node's output gradient is complete once every later node has run.
  GradientBuilder builder(graph, loc);
  std::unordered_map<const Value *, Value *> grads{{cost, builder.constant(1, costType.dtype)}};
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node &node = **it;
    std::vector<Value *> outputGrads;
    for (const Value *output : node.outputs()) {
      auto found = grads.find(output);
      outputGrads.push_back(found == grads.end() ? nullptr : found->second);
    }
    if (std::count(outputGrads.begin(), outputGrads.end(), nullptr) ==
        static_cast<std::ptrdiff_t>(outputGrads.size()))
      continue;
    std::vector<bool> wanted;
    for (const Value *input : node.inputs())
      wanted.push_back(active.count(input) > 0);
    if (std::find(wanted.begin(), wanted.end(), true) == wanted.end()) continue;
    std::vector<Value *> inputGrads = node.op().kind() == OpKind::Scan
                                          ? loopGradients(graph, node, outputGrads, wanted)
                                          : builder.inputGradients(node, outputGrads[0], wanted);
    for (size_t i = 0; i < inputGrads.size(); ++i) {
      if (!inputGrads[i]) continue;
      auto [slot, inserted] = grads.try_emplace(node.input(i), inputGrads[i]);
      if (!inserted) slot->second = builder.add(slot->second, inputGrads[i]);
    }
  }

  builder.setLoc(loc);
  std::vector<Value *> result;
  for (Value *w : wrt) {
    auto found = grads.find(w);
    result.push_back(found != grads.end() ? found->second : builder.zerosOf(w->type(), [w] { return w; }));
  }
  return result;
}

} // namespace tg::autodiff
