#include "opt/Specialize.h"

namespace tg::opt {

using ir::Node;
using ir::OpKind;
using ir::Value;

std::vector<RewriteRule> specializeRules() {
  return {
      {"x ** 2 -> x * x", {OpKind::Pow},
       [](RewriteContext &c, Node *n) -> Value * {
         if (!c.isConstantEqualTo(n->input(1), 2) || !c.ifSameType(n, n->input(0)))
           return nullptr;
         return c.make(OpKind::Mul, {n->input(0), n->input(0)});
       }},
  };
}

} // namespace tg::opt
