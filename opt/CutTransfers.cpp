#include "opt/CutTransfers.h"

namespace tg::opt {

using ir::Node;
using ir::OpKind;
using ir::Value;

std::vector<RewriteRule> cutTransferRules() {
  return {
      {"to_device(to_host(x)) -> x",
       {OpKind::ToDevice},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *inner = c.producer(n->input(0), OpKind::ToHost);
         return inner ? inner->input(0) : nullptr;
       }},
      {"to_host(to_device(x)) -> x",
       {OpKind::ToHost},
       [](RewriteContext &c, Node *n) -> Value * {
         Node *inner = c.producer(n->input(0), OpKind::ToDevice);
         return inner ? inner->input(0) : nullptr;
       }},
  };
}

} // namespace tg::opt
