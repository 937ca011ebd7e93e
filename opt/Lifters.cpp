#include "opt/Lifters.h"

namespace tg::opt {

namespace {

/// Every op with a device implementation runs there as the same op with the same attributes.
std::optional<ir::Op> sameOpOnDevice(const ir::Node &node) {
  return node.op().on(ir::Place::Device);
}

} // namespace

Lifter lifterFor(ir::OpKind kind) {
  if (kind == ir::OpKind::ToDevice || kind == ir::OpKind::ToHost) return nullptr;
  return ir::opInfo(kind).hasDevice ? sameOpOnDevice : nullptr;
}

} // namespace tg::opt
