#include "opt/Canonicalize.h"

namespace tg::opt {

using ir::Node;
using ir::OpKind;
using ir::Value;

std::vector<RewriteRule> canonicalizeRules() {
  return {
      {"add(x, 0) -> x", {OpKind::Add},
       [](RewriteContext &c, Node *n) -> Value * {
         if (c.isConstantEqualTo(n->input(1), 0))
           return c.ifSameType(n, n->input(0));
         if (c.isConstantEqualTo(n->input(0), 0))
           return c.ifSameType(n, n->input(1));
         return nullptr;
       }},
      {"mul(x, 1) -> x", {OpKind::Mul},
       [](RewriteContext &c, Node *n) -> Value * {
         if (c.isConstantEqualTo(n->input(1), 1))
           return c.ifSameType(n, n->input(0));
         if (c.isConstantEqualTo(n->input(0), 1))
           return c.ifSameType(n, n->input(1));
         return nullptr;
       }},
      {"neg(neg(x)) -> x", {OpKind::Neg},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *inner = c.producer(n->input(0), OpKind::Neg);
         return inner ? inner->input(0) : nullptr;
       }},
  };
}

} // namespace tg::opt
