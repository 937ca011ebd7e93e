// stabilize: numerically stable forms. Each rule is an identity of real arithmetic whose replacement is at
// least as accurate as what it replaces: results change only where the original lost precision to rounding
// (1 + x for small x), overflowed (exp(x) for x > 88 in f32) or underflowed. Every rule keeps the output's
// dtype and shape, gives NaN where the original does, and gives the original's value at +-inf (checked rule
// by rule in tests/unit/RewriteTest.cpp); the log-sum-exp shift is made 0 where the maximum is not finite for
// that.
#include "opt/Stabilize.h"

#include <algorithm>
#include <cmath>

namespace tg::opt {

using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

/// The operand of commutative binary `node` beside a constant whose every element is `value`, else nullptr.
Value *besideConstant(const Node *node, double value) {
  for (size_t i : {size_t(1), size_t(0)})
    if (RewriteContext::isConstantEqualTo(node->input(i), value)) return node->input(1 - i);
  return nullptr;
}

/// -x, without a double negation when x is itself a negation.
Value *negated(RewriteContext &c, Value *x) {
  Node *negation = c.producer(x, OpKind::Neg);
  return negation ? negation->input(0) : c.make(OpKind::Neg, {x});
}

std::vector<int64_t> sorted(std::vector<int64_t> axes) {
  std::sort(axes.begin(), axes.end());
  return axes;
}

/// Whether `value` is x - m with m = max(x, axes, keepdims) (or that maximum made finite by a where): an
/// argument of exp already shifted for a log-sum-exp over `axes`, as nn.softmax and nn.log_softmax write it.
bool isShiftedByMax(RewriteContext &c, const Value *value, const std::vector<int64_t> &axes) {
  Node *difference = c.producer(value, OpKind::Sub);
  if (!difference) return false;
  const Value *shift = difference->input(1);
  if (Node *select = c.producer(shift, OpKind::Where)) shift = select->input(1);
  Node *max = c.producer(shift, OpKind::Max);
  return max && max->input(0) == difference->input(0) && max->op().attrs().keepdims &&
         sorted(max->op().attrs().axes) == sorted(axes);
}

/// where(abs(m) < inf, m, 0): m where it is finite, else 0 (so that x - m is not inf - inf).
Value *finiteOrZero(RewriteContext &c, Value *m) {
  ir::DType dtype = m->type().dtype;
  Value *finite = c.make(OpKind::Lt, {c.make(OpKind::Abs, {m}), c.constant(INFINITY, dtype)});
  return c.make(OpKind::Where, {finite, m, c.constant(0, dtype)});
}

} // namespace

std::vector<RewriteRule> stabilizeRules() {
  return {
      // 1 - sigmoid(x) = sigmoid(-x), and log(sigmoid(-x)) = -log(1 + exp(x)). Before log(1 - x) below.
      {"log(1 - sigmoid(x)) -> -softplus(x)",
       {OpKind::Log},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *difference = c.producer(n->input(0), OpKind::Sub);
         if (!difference || !c.isConstantEqualTo(difference->input(0), 1)) return nullptr;
         Node *sigmoid = c.producer(difference->input(1), OpKind::Sigmoid);
         if (!sigmoid || !c.ifSameType(n, sigmoid->output())) return nullptr;
         return c.make(OpKind::Neg, {c.make(OpKind::Softplus, {sigmoid->input(0)})});
       }},
      // The same, as log(1 - x) -> log1p(-x) leaves it.
      {"log1p(-sigmoid(x)) -> -softplus(x)",
       {OpKind::Log1p},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *negation = c.producer(n->input(0), OpKind::Neg);
         Node *sigmoid = negation ? c.producer(negation->input(0), OpKind::Sigmoid) : nullptr;
         if (!sigmoid) return nullptr;
         return c.make(OpKind::Neg, {c.make(OpKind::Softplus, {sigmoid->input(0)})});
       }},
      // log(sigmoid(x)) = -log(1 + exp(-x)); softplus never overflows, log(sigmoid(x)) is -inf below x =
      // -104.
      {"log(sigmoid(x)) -> -softplus(-x)",
       {OpKind::Log},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *sigmoid = c.producer(n->input(0), OpKind::Sigmoid);
         if (!sigmoid) return nullptr;
         return c.make(OpKind::Neg, {c.make(OpKind::Softplus, {negated(c, sigmoid->input(0))})});
       }},
      // 1 + x rounds away the low bits of a small x; log1p keeps them. Either operand order.
      {"log(1 + x) -> log1p(x)",
       {OpKind::Log},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *sum = c.producer(n->input(0), OpKind::Add);
         Value *x = sum ? besideConstant(sum, 1) : nullptr;
         return x && c.ifSameType(n, x) ? c.make(OpKind::Log1p, {x}) : nullptr;
       }},
      // As above, for 1 - x.
      {"log(1 - x) -> log1p(-x)",
       {OpKind::Log},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *difference = c.producer(n->input(0), OpKind::Sub);
         if (!difference || !c.isConstantEqualTo(difference->input(0), 1)) return nullptr;
         Value *x = difference->input(1);
         return c.ifSameType(n, x) ? c.make(OpKind::Log1p, {negated(c, x)}) : nullptr;
       }},
      // exp(x) - 1 cancels to 0 or to rounding noise for small x; expm1 keeps x's digits. Also exp(x) + -1.
      {"exp(x) - 1 -> expm1(x)",
       {OpKind::Sub, OpKind::Add},
       [](RewriteContext &c, Node *n) -> Value * {
         Value *e = nullptr;
         if (n->op().kind() == OpKind::Sub)
           e = c.isConstantEqualTo(n->input(1), 1) ? n->input(0) : nullptr;
         else
           e = besideConstant(n, -1);
         Node *exp = e ? c.producer(e, OpKind::Exp) : nullptr;
         return exp && c.ifSameType(n, e) ? c.make(OpKind::Expm1, {exp->input(0)}) : nullptr;
       }},
      // exp(x) overflows to inf for large x, where softplus(x) is x. log(1 + exp(x)) gets here through
      // log(1 + x) -> log1p(x).
      {"log1p(exp(x)) -> softplus(x)",
       {OpKind::Log1p},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *exp = c.producer(n->input(0), OpKind::Exp);
         return exp ? c.make(OpKind::Softplus, {exp->input(0)}) : nullptr;
       }},
      // The logistic function as nn.sigmoid writes it; the sigmoid kernel never overflows. 1 / (1 + exp(y))
      // in
      // general is sigmoid(-y).
      {"1 / (1 + exp(-x)) -> sigmoid(x)",
       {OpKind::Div},
       [](RewriteContext &c, Node *n) -> Value * {
         if (!c.isConstantEqualTo(n->input(0), 1)) return nullptr;
         Node *sum = c.producer(n->input(1), OpKind::Add);
         Value *e = sum ? besideConstant(sum, 1) : nullptr;
         Node *exp = e ? c.producer(e, OpKind::Exp) : nullptr;
         if (!exp || !c.ifSameType(n, e)) return nullptr;
         return c.make(OpKind::Sigmoid, {negated(c, exp->input(0))});
       }},
      // exp(x) overflows for x > 88 in f32 and underflows below -103.
      {"log(exp(x)) -> x",
       {OpKind::Log},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *exp = c.producer(n->input(0), OpKind::Exp);
         return exp ? c.ifSameType(n, exp->input(0)) : nullptr;
       }},
      // log(exp(x) / y) = x - log(y): the log-softmax log(exp(x) / sum(exp(x))) becomes x - log(sum(exp(x))),
      // which the log-sum-exp rule stabilizes; nn.softmax's log(e / s), e = exp(x - m), becomes (x - m) -
      // log(s).
      {"log(exp(x) / y) -> x - log(y)",
       {OpKind::Log},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *quotient = c.producer(n->input(0), OpKind::Div);
         Node *exp = quotient ? c.producer(quotient->input(0), OpKind::Exp) : nullptr;
         if (!exp) return nullptr;
         return c.makeSameType(n, OpKind::Sub, {exp->input(0), c.make(OpKind::Log, {quotient->input(1)})});
       }},
      // The log-sum-exp: exp(x - m) <= 1 cannot overflow, and the largest term is 1, so the sum cannot
      // underflow
      // to 0 either. m = max(x, axes, keepdims) is replaced by 0 where it is not finite (a row holding +inf
      // or
      // only -inf), as SciPy's logsumexp does, so that such rows give inf and -inf as before, not NaN. Does
      // not
      // fire on a sum already shifted by its maximum (nn.log_softmax, the output of this rule).
      {"log(sum(exp(x))) -> m + log(sum(exp(x - m))), m = max(x)",
       {OpKind::Log},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *sum = c.producer(n->input(0), OpKind::Sum);
         Node *exp = sum ? c.producer(sum->input(0), OpKind::Exp) : nullptr;
         if (!exp) return nullptr;
         Value *x = exp->input(0);
         const ir::OpAttrs &reduce = sum->op().attrs();
         if (reduce.axes.empty() || isShiftedByMax(c, x, reduce.axes)) return nullptr;
         ir::OpAttrs keep = reduce;
         keep.keepdims = true;
         Value *shift = finiteOrZero(c, c.make(OpKind::Max, {x}, keep));
         Value *shiftedSum =
             c.make(OpKind::Sum, {c.make(OpKind::Exp, {c.make(OpKind::Sub, {x, shift})})}, reduce);
         if (!reduce.keepdims) { // drop the size-1 axes: a max over them is the value itself
           ir::OpAttrs squeeze = keep;
           squeeze.keepdims = false;
           shift = c.make(OpKind::Max, {shift}, squeeze);
         }
         return c.makeSameType(n, OpKind::Add, {shift, c.make(OpKind::Log, {shiftedSum})});
       }},
      // x * x overflows for |x| > 1.8e19 in f32 and underflows for |x| < 1e-23; the square root of a
      // correctly
      // rounded square is |x| otherwise.
      {"sqrt(x * x) -> abs(x)",
       {OpKind::Sqrt},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *square = c.producer(n->input(0), OpKind::Mul);
         if (!square || square->input(0) != square->input(1) || !c.ifSameType(n, square->input(0)))
           return nullptr;
         return c.make(OpKind::Abs, {square->input(0)});
       }},
  };
}

} // namespace tg::opt
