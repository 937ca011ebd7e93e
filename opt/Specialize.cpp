// specialize: cheaper forms of the same computation. Every rule keeps the output's dtype and shape. "Exact"
// means bit-identical results for every input; the others differ by floating-point rounding only (one or two
// ulp: a reciprocal rounded once and then multiplied, a cube as two products), except where a doc line names
// an input (the powers 0.5 and -0.5 at -0 and -inf, where they follow NumPy's and 1/sqrt's conventions).
// Integer results are always exact: integer arithmetic wraps around, as the runtime's pow does.
#include "opt/Specialize.h"

#include <cmath>

namespace tg::opt {

using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

/// x of `node` = pow(x, c) when every element of the constant c is `value` and the result has x's type (an
/// exponent tensor that broadcasts x up is left alone), else nullptr.
Value *baseOfPower(RewriteContext &c, const Node *node, double value) {
  if (!c.isConstantEqualTo(node->input(1), value)) return nullptr;
  return c.ifSameType(node, node->input(0));
}

/// 1 / v rounded once in `dtype` (as the div kernel computes it).
double reciprocal(double v, DType dtype) {
  if (dtype == DType::F32) return static_cast<double>(1.0f / static_cast<float>(v));
  return 1.0 / v;
}

/// Whether `r` is a normal number of `dtype`: finite, nonzero and not subnormal.
bool isNormal(double r, DType dtype) {
  return dtype == DType::F32 ? std::isnormal(static_cast<float>(r)) : std::isnormal(r);
}

/// A constant of `data`'s dtype and shape holding f of each element, or nullopt when f gives nullopt for one.
template <typename F>
std::optional<ir::TensorData> mapConstant(const ir::TensorData &data, F f) {
  ir::TensorData result(data.dtype, data.shape);
  for (int64_t i = 0; i < data.numElements(); ++i) {
    std::optional<double> value = f(data.get(i));
    if (!value) return std::nullopt;
    result.set(i, *value);
  }
  return result;
}

/// The element count of the axes `node` (a reduction) reduces, when static.
std::optional<int64_t> reducedCount(const Node *node) {
  const ir::Shape &shape = node->input(0)->type().shape;
  int64_t count = 1, rank = static_cast<int64_t>(shape.size());
  for (int64_t axis : node->op().attrs().axes) {
    const ir::Dim &dim = shape[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
    if (!dim.isStatic()) return std::nullopt;
    count *= dim.size();
  }
  return count;
}

/// sum(broadcast_to(x, s), axes) -> sum(x, axes x has) * (product of the broadcast sizes summed over), then
/// reshaped and broadcast to the result's shape. See the rule's doc line.
Value *sumOfBroadcast(RewriteContext &c, Node *n) {
  Node *broadcast = c.producer(n->input(0), OpKind::BroadcastTo);
  if (!broadcast) return nullptr;
  Value *x = broadcast->input(0);
  const std::vector<int64_t> &target = broadcast->op().attrs().shape; // static
  const ir::OpAttrs &reduce = n->op().attrs();
  size_t rank = target.size(), offset = rank - x->type().rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t axis : reduce.axes)
    reduced[static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis)] = true;
  int64_t factor = 1;
  ir::OpAttrs inner; // the axes of x to sum over
  inner.keepdims = reduce.keepdims;
  std::vector<int64_t> kept; // x's sizes after its own sum, as seen in `rank` axes (all static)
  for (size_t axis = 0; axis < rank; ++axis) {
    if (target[axis] == 0) return nullptr; // an empty sum is 0, which sum(x) * 0 is not for inf or NaN
    bool isNew = axis < offset;
    bool isBroadcast = isNew || (x->type().shape[axis - offset].isOne() && target[axis] != 1);
    if (reduced[axis] && isBroadcast)
      factor *= target[axis];
    else if (reduced[axis])
      inner.axes.push_back(static_cast<int64_t>(axis - offset));
    // A symbolic size of x that is not broadcast equals the target's static size at run time.
    kept.push_back(reduced[axis] || isBroadcast ? 1 : target[axis]);
  }
  if (reduce.axes.empty()) return nullptr;
  DType sumType = n->output()->type().dtype;
  Value *partial = x;
  if (!inner.axes.empty())
    partial = c.make(OpKind::Sum, {x}, inner);
  else if (x->type().dtype != sumType) {
    ir::OpAttrs cast;
    cast.dtype = sumType;
    partial = c.make(OpKind::Cast, {x}, cast);
  }
  if (factor != 1) partial = c.make(OpKind::Mul, {partial, c.constant(static_cast<double>(factor), sumType)});
  // To the result's shape: drop the reduced axes unless keepdims, then broadcast the kept ones back.
  std::vector<int64_t> shape;
  for (size_t axis = 0; axis < rank; ++axis)
    if (reduce.keepdims || !reduced[axis]) shape.push_back(kept[axis]);
  ir::Shape want;
  for (int64_t size : shape)
    want.push_back(ir::Dim::of(size));
  if (partial->type().shape != want) {
    ir::OpAttrs reshape;
    reshape.shape = shape;
    partial = c.make(OpKind::Reshape, {partial}, reshape);
  }
  return c.broadcastLike(n, partial);
}

/// The scatter_add that `value` is when it adds into zeros (zeros_like, or a constant of zeros): a gradient
/// of a gather, or inc_subtensor of zeros; else nullptr.
Node *scatterIntoZeros(const Value *value) {
  Node *scatter = RewriteContext::producer(value, OpKind::ScatterAdd);
  if (!scatter) return nullptr;
  const Value *base = scatter->input(0);
  std::optional<double> uniform = RewriteContext::uniformValue(base);
  bool zeros = RewriteContext::producer(base, OpKind::ZerosLike) || (uniform && *uniform == 0);
  return zeros ? scatter : nullptr;
}

/// scatter_add(base, update, the indices of `scatter`), with `scatter`'s attributes.
Value *scatterAdd(RewriteContext &c, const Node *scatter, Value *base, Value *update) {
  std::vector<Value *> inputs{base, update};
  for (size_t i = 2; i < scatter->inputs().size(); ++i)
    inputs.push_back(scatter->input(i));
  return c.make(OpKind::ScatterAdd, std::move(inputs), scatter->op().attrs());
}

} // namespace

std::vector<RewriteRule> specializeRules() {
  return {
      // ---- powers ----

      // Exact: pow rounds x^2 once, as x * x does.
      {"x ** 2 -> x * x",
       {OpKind::Pow},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = baseOfPower(c, n, 2);
         return x ? c.make(OpKind::Mul, {x, x}) : nullptr;
       }},
      // Two roundings instead of one for floats; exact for integers.
      {"x ** 3 -> x * x * x",
       {OpKind::Pow},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = baseOfPower(c, n, 3);
         return x ? c.make(OpKind::Mul, {c.make(OpKind::Mul, {x, x}), x}) : nullptr;
       }},
      // Exact: pow(x, 0) is 1 for every x, NaN included (and for integers).
      {"x ** 0 -> 1",
       {OpKind::Pow},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = baseOfPower(c, n, 0);
         return x ? c.fill(n, 1, x) : nullptr;
       }},
      // Floats. What NumPy's array ** 0.5 computes; differs from C's pow at x = -inf (NaN, not +inf) and
      // x = -0 (-0, not +0) only.
      {"x ** 0.5 -> sqrt(x)",
       {OpKind::Pow},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = baseOfPower(c, n, 0.5);
         return x && ir::isFloat(x->type().dtype) ? c.make(OpKind::Sqrt, {x}) : nullptr;
       }},
      // (No x ** -0.5 -> rsqrt(x): at x = -0 and x = -inf it would give -inf and NaN where pow gives +inf,
      // 0.)
      // Floats (integers to negative powers are an error). Within an ulp; the same at 0, -0, +-inf and NaN.
      {"x ** -1 -> 1 / x",
       {OpKind::Pow},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = baseOfPower(c, n, -1);
         if (!x || !ir::isFloat(x->type().dtype)) return nullptr;
         return c.make(OpKind::Div, {c.constant(1, x->type().dtype), x});
       }},

      // ---- divisions ----

      // Exact: the rsqrt kernel is 1 / sqrt(x).
      {"1 / sqrt(x) -> rsqrt(x)",
       {OpKind::Div},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *root = c.producer(n->input(1), OpKind::Sqrt);
         if (!root || !c.isConstantEqualTo(n->input(0), 1) || !c.ifSameType(n, root->output()))
           return nullptr;
         return c.make(OpKind::Rsqrt, {root->input(0)});
       }},
      // Within two roundings.
      {"x / sqrt(y) -> x * rsqrt(y)",
       {OpKind::Div},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *root = c.producer(n->input(1), OpKind::Sqrt);
         if (!root || c.isConstantEqualTo(n->input(0), 1)) return nullptr;
         return c.makeSameType(n, OpKind::Mul, {n->input(0), c.make(OpKind::Rsqrt, {root->input(0)})});
       }},
      // Floats, for every constant c whose reciprocal is a normal number of the dtype (so 1/c neither
      // overflows
      // nor loses digits as a subnormal). Exact when c is a power of 2; otherwise x * (1/c) rounds twice, so
      // it
      // may differ from x / c by an ulp (NumPy-equality tolerance). inf, NaN and zeros of x map alike.
      {"x / c -> x * (1/c)",
       {OpKind::Div},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *divisor = n->input(1);
         DType dtype = divisor->type().dtype;
         if (!divisor->isConstant() || !ir::isFloat(dtype)) return nullptr;
         std::optional<ir::TensorData> reciprocals =
             mapConstant(divisor->constant(), [dtype](double v) -> std::optional<double> {
               double r = reciprocal(v, dtype);
               return isNormal(r, dtype) ? std::optional<double>(r) : std::nullopt;
             });
         if (!reciprocals) return nullptr;
         return c.makeSameType(n, OpKind::Mul, {n->input(0), c.graph.addConstant(std::move(*reciprocals))});
       }},

      // ---- signs ----

      // Floats. Exact: sign flips are exact.
      {"neg(x) * c -> x * (-c)",
       {OpKind::Mul},
       [](RewriteContext &c, Node *n) -> Value * {
         for (size_t i : {size_t(0), size_t(1)}) {
           Node *negation = c.producer(n->input(i), OpKind::Neg);
           Value *factor = n->input(1 - i);
           if (!negation || !factor->isConstant() || !ir::isFloat(factor->type().dtype)) continue;
           ir::TensorData negative =
               *mapConstant(factor->constant(), [](double v) { return std::optional(-v); });
           return c.makeSameType(n, OpKind::Mul,
                                 {negation->input(0), c.graph.addConstant(std::move(negative))});
         }
         return nullptr;
       }},

      // ---- reductions ----

      // Floats, over static axes of n > 0 elements: the kernel's mean is the sum divided by n; this
      // multiplies by
      // 1/n rounded to the dtype, an ulp or two apart.
      {"mean(x) -> sum(x) * (1/n)",
       {OpKind::Mean},
       [](RewriteContext &c, Node *n) -> Value * {
         DType dtype = n->input(0)->type().dtype;
         std::optional<int64_t> count = reducedCount(n);
         if (!ir::isFloat(dtype) || !count || *count == 0) return nullptr;
         double scale = reciprocal(static_cast<double>(*count), dtype);
         if (!isNormal(scale, dtype)) return nullptr;
         Value *sum = c.make(OpKind::Sum, {n->input(0)}, n->op().attrs());
         return c.makeSameType(n, OpKind::Mul, {sum, c.constant(scale, dtype)});
       }},
      // Summing k broadcast copies of x is k times x's sum: the axes of the sum that the broadcast made (new
      // axes,
      // or sizes 1 made larger) become a factor, the others a smaller sum of x. Floats within rounding (one
      // product for k - 1 additions), integers exact; not for empty axes (an empty sum is 0, sum(x) * 0 is
      // not
      // for inf).
      {"sum(broadcast_to(x)) -> sum(x) * count", {OpKind::Sum}, sumOfBroadcast},

      // ---- sparse updates ----

      // Adding a scatter into zeros (a gather's gradient) to x scatters into x instead: the work of the rows
      // indexed, not of all of x (an embedding table's update, E - rate * gE, touches the rows a batch read).
      // Floats within rounding (x + (g1 + g2) becomes (x + g1) + g2), integers exact.
      {"x + scatter_add(0, g, i) -> scatter_add(x, g, i)",
       {OpKind::Add},
       [](RewriteContext &c, Node *n) -> Value * {
         for (size_t k : {0u, 1u})
           if (Node *scatter = scatterIntoZeros(n->input(k)))
             if (Value *x = c.ifSameType(n, n->input(1 - k)))
               return scatterAdd(c, scatter, x, scatter->input(1));
         return nullptr;
       }},
      // Exact as x + scatter_add(0, -g, i) (negation is exact), within rounding of the subtraction.
      {"x - scatter_add(0, g, i) -> scatter_add(x, -g, i)",
       {OpKind::Sub},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *scatter = scatterIntoZeros(n->input(1));
         Value *x = c.ifSameType(n, n->input(0));
         if (!scatter || !x || n->output()->type().dtype == DType::Bool) return nullptr;
         return scatterAdd(c, scatter, x, c.make(OpKind::Neg, {scatter->input(1)}));
       }},
      // A finite constant factor moves onto the update, so that the sums above can form (rate * gE): c * 0
      // stays 0 where nothing is added (not so for an infinite or NaN c). Exact where no index repeats;
      // within
      // rounding of the sums where one does (c * (g1 + g2) becomes c * g1 + c * g2).
      {"c * scatter_add(0, g, i) -> scatter_add(0, c * g, i)",
       {OpKind::Mul},
       [](RewriteContext &c, Node *n) -> Value * {
         for (size_t k : {0u, 1u}) {
           Node *scatter = scatterIntoZeros(n->input(k));
           Value *factor = n->input(1 - k);
           std::optional<double> constant = RewriteContext::uniformValue(factor);
           if (!scatter || !factor->type().isScalar() || !constant || !std::isfinite(*constant) ||
               !c.ifSameType(n, scatter->output()))
             continue;
           Value *update = c.make(OpKind::Mul, {factor, scatter->input(1)});
           if (update->type() != scatter->input(1)->type()) return nullptr;
           return scatterAdd(c, scatter, scatter->input(0), update);
         }
         return nullptr;
       }},
  };
}

} // namespace tg::opt
