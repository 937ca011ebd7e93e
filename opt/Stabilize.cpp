#include "opt/Stabilize.h"

namespace tg::opt {

using ir::Node;
using ir::OpKind;
using ir::Value;

std::vector<RewriteRule> stabilizeRules() {
  return {
      {"log(1 + x) -> log1p(x)", {OpKind::Log},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *add = c.producer(n->input(0), OpKind::Add);
         if (!add)
           return nullptr;
         for (size_t i = 0; i < 2; ++i)
           if (c.isConstantEqualTo(add->input(i), 1) && c.ifSameType(n, add->input(1 - i)))
             return c.make(OpKind::Log1p, {add->input(1 - i)});
         return nullptr;
       }},
  };
}

} // namespace tg::opt
