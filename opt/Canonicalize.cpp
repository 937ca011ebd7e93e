// canonicalize: algebraic normal forms. Every rule keeps the output's dtype and shape and computes the same
// numbers: exactly, or (where a doc line says so) up to the sign of a zero result. None drops a NaN or an
// inf.
//
// What "exact" rests on: IEEE negation, x - y == x + (-y), x * 1, x / 1 and pow(x, 1) are exact for every x
// (NaN and inf included); integer arithmetic wraps around (the runtime's kernels, like NumPy's), so integer
// identities hold for every value. Rules that hold only for integers (x * 0 -> 0, x - x -> 0, the negation of
// an ordered comparison) say so: with floats, inf * 0 and inf - inf are NaN, and NaN compares false both
// ways.
#include "opt/Canonicalize.h"

#include <algorithm>

namespace tg::opt {

using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

bool isIntegral(DType dtype) {
  return !ir::isFloat(dtype);
}

/// The operand of binary `node` beside a constant operand whose every element is `value`, else nullptr.
/// `commutative`: the constant may be either operand; otherwise only the second.
Value *besideConstant(const Node *node, double value, bool commutative) {
  if (RewriteContext::isConstantEqualTo(node->input(1), value)) return node->input(0);
  if (commutative && RewriteContext::isConstantEqualTo(node->input(0), value)) return node->input(1);
  return nullptr;
}

/// Whether every value of `from` converts to `to` and back unchanged, so a cast through `to` loses nothing.
bool isExactWidening(DType from, DType to) {
  if (from == to || from == DType::Bool) return true;
  switch (from) {
  case DType::I32:
    return to == DType::I64 || to == DType::F64;
  case DType::F32:
    return to == DType::F64;
  default:
    return false;
  }
}

/// not(a OP b) == a INVERSE(b): eq and ne for every dtype; the ordered comparisons only without NaN.
OpKind invertedComparison(OpKind kind) {
  switch (kind) {
  case OpKind::Lt:
    return OpKind::Ge;
  case OpKind::Le:
    return OpKind::Gt;
  case OpKind::Gt:
    return OpKind::Le;
  case OpKind::Ge:
    return OpKind::Lt;
  case OpKind::Eq:
    return OpKind::Ne;
  default:
    return OpKind::Eq;
  }
}

bool isIdentityPermutation(const std::vector<int64_t> &perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

bool isStatic(const ir::TensorType &type) {
  return type.staticNumElements().has_value();
}

/// A slice spec that keeps a whole axis from its start: `:`, `0:`, `:stop` (the type check then says whether
/// the stop is past the end).
bool keepsFromStart(const ir::SliceSpec &spec) {
  return !spec.isIndex && spec.step == 1 && (!spec.hasStart || spec.start == 0);
}

constexpr OpKind kReductionsKeepingValue[] = {OpKind::Sum,  OpKind::Mean, OpKind::Max, OpKind::Min,
                                              OpKind::Prod, OpKind::Any,  OpKind::All};

/// Whether each axis `node` (a reduction) reduces has static size 1.
bool reducesOnlySizeOneAxes(const Node *node) {
  const ir::Shape &shape = node->input(0)->type().shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  for (int64_t axis : node->op().attrs().axes)
    if (!shape[static_cast<size_t>(axis < 0 ? axis + rank : axis)].isOne()) return false;
  return true;
}

} // namespace

std::vector<RewriteRule> canonicalizeRules() {
  return {
      // ---- identities with 0 and 1 ----

      // Exact up to the sign of zero: -0 + 0 is +0.
      {"add(x, 0) -> x",
       {OpKind::Add},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = besideConstant(n, 0, true);
         return x ? c.broadcastLike(n, x) : nullptr;
       }},
      // Exact: x - 0 == x for every x, -0 included.
      {"sub(x, 0) -> x",
       {OpKind::Sub},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = besideConstant(n, 0, false);
         return x ? c.broadcastLike(n, x) : nullptr;
       }},
      // Exact up to the sign of zero: 0 - 0 is +0, neg(0) is -0.
      {"sub(0, x) -> neg(x)",
       {OpKind::Sub},
       [](RewriteContext &c, Node *n) -> Value * {
         if (!c.isConstantEqualTo(n->input(0), 0)) return nullptr;
         return c.makeSameType(n, OpKind::Neg, {n->input(1)});
       }},
      // Exact.
      {"mul(x, 1) -> x",
       {OpKind::Mul},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = besideConstant(n, 1, true);
         return x ? c.broadcastLike(n, x) : nullptr;
       }},
      // Integers and bool only: for floats inf * 0 and NaN * 0 are NaN, and -1 * 0 is -0.
      {"mul(x, 0) -> 0 (integers)",
       {OpKind::Mul},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = besideConstant(n, 0, true);
         if (!x || !isIntegral(x->type().dtype)) return nullptr;
         return c.fill(n, 0, x);
       }},
      // Exact (IEEE multiplication by -1 only flips the sign; integers wrap around alike).
      {"mul(x, -1) -> neg(x)",
       {OpKind::Mul},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = besideConstant(n, -1, true);
         if (!x || x->type().dtype == DType::Bool) return nullptr;
         return c.makeSameType(n, OpKind::Neg, {x});
       }},
      // Exact.
      {"div(x, 1) -> x",
       {OpKind::Div},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = besideConstant(n, 1, false);
         return x ? c.broadcastLike(n, x) : nullptr;
       }},
      // Exact.
      {"div(x, -1) -> neg(x)",
       {OpKind::Div},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = besideConstant(n, -1, false);
         return x ? c.makeSameType(n, OpKind::Neg, {x}) : nullptr;
       }},
      // Exact: pow(x, 1) is x for every x, NaN included.
      {"pow(x, 1) -> x",
       {OpKind::Pow},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = besideConstant(n, 1, false);
         return x ? c.broadcastLike(n, x) : nullptr;
       }},
      // Integers only: for floats inf - inf and NaN - NaN are NaN.
      {"sub(x, x) -> 0 (integers)",
       {OpKind::Sub},
       [](RewriteContext &c, Node *n) -> Value * {
         if (n->input(0) != n->input(1) || !isIntegral(n->input(0)->type().dtype)) return nullptr;
         return c.fill(n, 0, n->input(0));
       }},

      // ---- signs ----

      // Exact.
      {"neg(neg(x)) -> x",
       {OpKind::Neg},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *inner = c.producer(n->input(0), OpKind::Neg);
         return inner ? inner->input(0) : nullptr;
       }},
      // Exact: IEEE defines x - y as x + (-y).
      {"sub(x, neg(y)) -> add(x, y)",
       {OpKind::Sub},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *negation = c.producer(n->input(1), OpKind::Neg);
         return negation ? c.makeSameType(n, OpKind::Add, {n->input(0), negation->input(0)}) : nullptr;
       }},
      // Exact, either operand order.
      {"add(x, neg(y)) -> sub(x, y)",
       {OpKind::Add},
       [](RewriteContext &c, Node *n) -> Value * {
         for (size_t i : {size_t(1), size_t(0)})
           if (Node *negation = c.producer(n->input(i), OpKind::Neg))
             return c.makeSameType(n, OpKind::Sub, {n->input(1 - i), negation->input(0)});
         return nullptr;
       }},
      // Exact: the two sign flips cancel.
      {"mul(neg(x), neg(y)) -> mul(x, y)",
       {OpKind::Mul},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *left = c.producer(n->input(0), OpKind::Neg), *right = c.producer(n->input(1), OpKind::Neg);
         return left && right ? c.makeSameType(n, OpKind::Mul, {left->input(0), right->input(0)}) : nullptr;
       }},
      // Exact: the two sign flips cancel.
      {"div(neg(x), neg(y)) -> div(x, y)",
       {OpKind::Div},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *left = c.producer(n->input(0), OpKind::Neg), *right = c.producer(n->input(1), OpKind::Neg);
         return left && right ? c.makeSameType(n, OpKind::Div, {left->input(0), right->input(0)}) : nullptr;
       }},
      // Exact.
      {"abs(abs(x)) -> abs(x)",
       {OpKind::Abs},
       [](RewriteContext &c, Node *n) -> Value * {
         return c.producer(n->input(0), OpKind::Abs) ? n->input(0) : nullptr;
       }},
      // Exact (for integers too: abs and neg of the most negative value both wrap to itself).
      {"abs(neg(x)) -> abs(x)",
       {OpKind::Abs},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *negation = c.producer(n->input(0), OpKind::Neg);
         return negation ? c.makeSameType(n, OpKind::Abs, {negation->input(0)}) : nullptr;
       }},

      // ---- logic and selection ----

      // Exact.
      {"not(not(x)) -> x",
       {OpKind::Not},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *inner = c.producer(n->input(0), OpKind::Not);
         return inner ? inner->input(0) : nullptr;
       }},
      // Exact for eq and ne (NaN == NaN is false, NaN != NaN true); lt, le, gt, ge only for integer and bool
      // operands, since a comparison with NaN is false both ways.
      {"not(a < b) -> a >= b (not(eq) -> ne for every dtype)",
       {OpKind::Not},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *compare = n->input(0)->owner();
         if (!compare || !ir::isComparison(compare->op().kind())) return nullptr;
         OpKind kind = compare->op().kind();
         bool exactForNaN = kind == OpKind::Eq || kind == OpKind::Ne;
         if (!exactForNaN && !isIntegral(compare->input(0)->type().dtype)) return nullptr;
         return c.makeSameType(n, invertedComparison(kind), {compare->input(0), compare->input(1)});
       }},
      // Exact: and, or, maximum and minimum of a value with itself (NaN stays NaN).
      {"maximum(x, x) -> x (and minimum, and, or)",
       {OpKind::Maximum, OpKind::Minimum, OpKind::And, OpKind::Or},
       [](RewriteContext &c, Node *n) -> Value * {
         return n->input(0) == n->input(1) ? c.ifSameType(n, n->input(0)) : nullptr;
       }},
      // Exact.
      {"and(x, true) -> x (or(x, false) -> x)",
       {OpKind::And, OpKind::Or},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *x = besideConstant(n, n->op().kind() == OpKind::And ? 1 : 0, true);
         return x ? c.broadcastLike(n, x) : nullptr;
       }},
      // Exact.
      {"and(x, false) -> false (or(x, true) -> true)",
       {OpKind::And, OpKind::Or},
       [](RewriteContext &c, Node *n) -> Value * {
         double absorbing = n->op().kind() == OpKind::And ? 0 : 1;
         Value *x = besideConstant(n, absorbing, true);
         return x ? c.fill(n, absorbing, x) : nullptr;
       }},
      // Exact: a constant condition picks one branch for every element.
      {"where(true, a, b) -> a (where(false, a, b) -> b)",
       {OpKind::Where},
       [](RewriteContext &c, Node *n) -> Value * {
         std::optional<double> condition = c.uniformValue(n->input(0));
         return condition ? c.broadcastLike(n, n->input(*condition != 0 ? 1 : 2)) : nullptr;
       }},
      // Exact.
      {"where(c, a, a) -> a",
       {OpKind::Where},
       [](RewriteContext &c, Node *n) -> Value * {
         return n->input(1) == n->input(2) ? c.broadcastLike(n, n->input(1)) : nullptr;
       }},
      // Exact.
      {"where(not(c), a, b) -> where(c, b, a)",
       {OpKind::Where},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *negation = c.producer(n->input(0), OpKind::Not);
         if (!negation) return nullptr;
         return c.makeSameType(n, OpKind::Where, {negation->input(0), n->input(2), n->input(1)});
       }},

      // ---- shapes ----

      // Exact: reshapes in C order compose.
      {"reshape(reshape(x)) -> reshape(x)",
       {OpKind::Reshape},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *inner = c.producer(n->input(0), OpKind::Reshape);
         return inner ? c.makeSameType(n, OpKind::Reshape, {inner->input(0)}, n->op().attrs()) : nullptr;
       }},
      // Exact. Static shapes only: a symbolic size from another reshape (`reshape0`) names no one size.
      {"reshape(x, shape of x) -> x",
       {OpKind::Reshape},
       [](RewriteContext &c, Node *n) -> Value * {
         return isStatic(n->input(0)->type()) ? c.ifSameType(n, n->input(0)) : nullptr;
       }},
      // Exact: axis i of the result is axis q[i] of the inner transpose, which is axis p[q[i]] of x.
      {"transpose(transpose(x, p), q) -> transpose(x, p[q])",
       {OpKind::Transpose},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *inner = c.producer(n->input(0), OpKind::Transpose);
         if (!inner) return nullptr;
         const std::vector<int64_t> &p = inner->op().attrs().axes, &q = n->op().attrs().axes;
         ir::OpAttrs composed;
         for (int64_t axis : q)
           composed.axes.push_back(p[static_cast<size_t>(axis)]);
         if (isIdentityPermutation(composed.axes)) return c.ifSameType(n, inner->input(0));
         return c.makeSameType(n, OpKind::Transpose, {inner->input(0)}, std::move(composed));
       }},
      // Exact.
      {"transpose(x, identity) -> x",
       {OpKind::Transpose},
       [](RewriteContext &c, Node *n) -> Value * {
         return isIdentityPermutation(n->op().attrs().axes) ? c.ifSameType(n, n->input(0)) : nullptr;
       }},
      // Exact: what broadcasts to a shape that broadcasts to s broadcasts to s.
      {"broadcast_to(broadcast_to(x), s) -> broadcast_to(x, s)",
       {OpKind::BroadcastTo},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *inner = c.producer(n->input(0), OpKind::BroadcastTo);
         return inner ? c.makeSameType(n, OpKind::BroadcastTo, {inner->input(0)}, n->op().attrs()) : nullptr;
       }},
      // Exact.
      {"broadcast_to(x, shape of x) -> x",
       {OpKind::BroadcastTo},
       [](RewriteContext &c, Node *n) -> Value * { return c.ifSameType(n, n->input(0)); }},
      // Exact: every axis kept whole, from 0 in steps of 1.
      {"x[:] -> x",
       {OpKind::Slice},
       [](RewriteContext &c, Node *n) -> Value * {
         const std::vector<ir::SliceSpec> &slices = n->op().attrs().slices;
         if (!std::all_of(slices.begin(), slices.end(), keepsFromStart)) return nullptr;
         return c.ifSameType(n, n->input(0));
       }},
      // Exact up to the sign of zero (a float sum adds to +0). Only where the dtype is kept: a sum or product
      // of
      // integers is i64, a mean of integers f64.
      {"reduce(x) over no or size-1 axes, keepdims -> x",
       std::vector<OpKind>(std::begin(kReductionsKeepingValue), std::end(kReductionsKeepingValue)),
       [](RewriteContext &c, Node *n) -> Value * {
         return reducesOnlySizeOneAxes(n) ? c.ifSameType(n, n->input(0)) : nullptr;
       }},
      // As above, without keepdims: the size-1 axes are dropped by a reshape (static shapes only).
      {"reduce(x) over size-1 axes -> reshape(x)",
       std::vector<OpKind>(std::begin(kReductionsKeepingValue), std::end(kReductionsKeepingValue)),
       [](RewriteContext &c, Node *n) -> Value * {
         const ir::TensorType &type = n->output()->type();
         if (!reducesOnlySizeOneAxes(n) || type.dtype != n->input(0)->type().dtype || !isStatic(type) ||
             type == n->input(0)->type())
           return nullptr;
         ir::OpAttrs attrs;
         for (const ir::Dim &dim : type.shape)
           attrs.shape.push_back(dim.size());
         return c.makeSameType(n, OpKind::Reshape, {n->input(0)}, std::move(attrs));
       }},

      // ---- casts ----

      // Exact.
      {"cast(x, dtype of x) -> x",
       {OpKind::Cast},
       [](RewriteContext &c, Node *n) -> Value * { return c.ifSameType(n, n->input(0)); }},
      // Exact when the inner cast keeps every value of x (bool to anything, i32 to i64 or f64, f32 to f64):
      // then the outer cast sees x's own values. cast(cast(x, f64), f32) with x f32 is x.
      {"cast(cast(x, wider), t) -> cast(x, t)",
       {OpKind::Cast},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *inner = c.producer(n->input(0), OpKind::Cast);
         if (!inner) return nullptr;
         Value *x = inner->input(0);
         if (!isExactWidening(x->type().dtype, inner->op().attrs().dtype)) return nullptr;
         if (x->type().dtype == n->op().attrs().dtype) return c.ifSameType(n, x);
         return c.makeSameType(n, OpKind::Cast, {x}, n->op().attrs());
       }},

      // ---- operand order (last, so that the identities above see either order first) ----

      // Exact up to the sign of a zero result of maximum/minimum(-0, +0), which returns its first operand.
      // Puts the constant second, so that merge finds add(x, 2) and add(2, x) equal.
      {"op(c, x) -> op(x, c) (commutative op, c constant)",
       {OpKind::Add, OpKind::Mul, OpKind::Maximum, OpKind::Minimum, OpKind::Eq, OpKind::Ne, OpKind::And,
        OpKind::Or},
       [](RewriteContext &c, Node *n) -> Value * {
         if (!n->input(0)->isConstant() || n->input(1)->isConstant()) return nullptr;
         return c.makeSameType(n, n->op().kind(), {n->input(1), n->input(0)});
       }},
  };
}

} // namespace tg::opt
