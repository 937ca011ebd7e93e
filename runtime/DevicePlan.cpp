#include "runtime/DevicePlan.h"

#include "codegen/Kernel.h"
#include "ir/Assert.h"
#include "ir/ScalarGraph.h"

#include <algorithm>
#include <limits>

namespace tg::runtime {

namespace {

using ir::OpKind;
using Kind = DeviceStep::Kind;

/// Threads per block of an elementwise launch, and how many blocks per multiprocessor a grid-stride launch
/// needs to keep it busy; blocks per multiprocessor of a reduction launch (one block per output).
constexpr unsigned kBlockSize = 256, kBlocksPerMultiprocessor = 16, kReductionBlocksPerMultiprocessor = 64;
/// A reduction block's threads: whole warps, at most this many.
constexpr int64_t kWarp = 32, kMaxReductionThreads = 256;

/// A device fused op computing `body`, with `like`'s attributes (a reduction's axes and keepdims).
std::shared_ptr<const ir::Op> fusedOp(ir::ScalarGraph body, const ir::Op &like) {
  ir::OpAttrs attrs = like.attrs();
  attrs.body = std::make_shared<ir::ScalarGraph>(std::move(body));
  return std::make_shared<ir::Op>(OpKind::Fused, std::move(attrs), ir::Place::Device);
}

/// An elementwise op applied to the node's inputs, as a program of one instruction.
ir::ScalarGraph singleOpBody(const ir::Node &node) {
  ir::ScalarGraph body;
  ir::ScalarInstr instr{node.op().kind(), node.output()->type().dtype, {}, 0};
  for (uint32_t i = 0; i < node.inputs().size(); ++i) {
    body.inputDtypes.push_back(node.input(i)->type().dtype);
    instr.operands.push_back(i);
  }
  body.body.push_back(std::move(instr));
  return body;
}

DeviceStep kernelStep(Kind kind, std::shared_ptr<const ir::Op> fused) {
  bool canFail = kernelCanFail(*fused->attrs().body);
  return {kind, std::move(fused), canFail};
}

} // namespace

bool kernelCanFail(const ir::ScalarGraph &body) {
  return std::any_of(body.body.begin(), body.body.end(), [](const ir::ScalarInstr &instr) {
    return (instr.kind == OpKind::Pow && !ir::isFloat(instr.dtype)) || instr.kind == OpKind::Gather;
  });
}

DeviceStep::Kind deviceStepKind(OpKind kind) {
  const ir::OpInfo &info = ir::opInfo(kind);
  TG_ASSERT(info.hasDevice && kind != OpKind::ToDevice && kind != OpKind::ToHost)
      << info.name << " placed on a device, which Ops.def says has no implementation of it";
  if (kind == OpKind::Fused || ir::isScalarOp(kind)) return Kind::Kernel; // a fused reduction: planDeviceStep
  if (ir::isPositionalReduction(kind)) return Kind::PositionalReduction;
  if (ir::isReduction(kind)) return Kind::Reduction;
  if (ir::isWindowOp(kind)) return Kind::Window;
  switch (kind) {
  case OpKind::Eye:
  case OpKind::Arange:
  case OpKind::Rand:
  case OpKind::Randn:
    return Kind::Creation;
  case OpKind::Full:
    return Kind::Broadcast;
  case OpKind::Zeros:
  case OpKind::Ones:
  case OpKind::ZerosLike:
  case OpKind::OnesLike:
    return Kind::Fill;
  case OpKind::Matmul:
    return Kind::Matmul;
  case OpKind::Scan:
    return Kind::Loop;
  case OpKind::Reshape:
    return Kind::Reshape;
  case OpKind::Concat:
  case OpKind::Stack:
    return Kind::Join;
  case OpKind::Allreduce:
  case OpKind::Allgather:
  case OpKind::Broadcast:
    return Kind::Collective;
  case OpKind::Shard: // this rank's block: a view
    return Kind::View;
  case OpKind::Gather:
  case OpKind::ScatterAdd:
  case OpKind::ScatterSet:
  case OpKind::SetSlice:
    return Kind::Index;
  default:
    TG_ASSERT(ir::isView(kind)) << "the device plan has no step for " << info.name;
    return Kind::View;
  }
}

DeviceStep planDeviceStep(const ir::Node &node) {
  const ir::Op &op = node.op();
  ir::DType dtype = node.output()->type().dtype;
  Kind kind = deviceStepKind(op.kind());
  ir::ScalarGraph body;
  switch (kind) {
  case Kind::Kernel:
    if (op.kind() != OpKind::Fused) return kernelStep(kind, fusedOp(singleOpBody(node), op));
    return kernelStep(op.attrs().body->reduction ? Kind::Reduction : Kind::Kernel,
                      std::make_shared<ir::Op>(op));
  case Kind::Reduction: // a program of its input alone, reduced
    body.inputDtypes = {node.input(0)->type().dtype};
    body.reduction = op.kind();
    return kernelStep(kind, fusedOp(std::move(body), op));
  case Kind::Broadcast: // a copy of the uploaded value
    body.inputDtypes = {dtype};
    body.body.push_back({OpKind::Cast, dtype, {0}, 0});
    return kernelStep(kind, fusedOp(std::move(body), op));
  case Kind::Fill: {
    bool one = op.kind() == OpKind::Ones || op.kind() == OpKind::OnesLike;
    body.body.push_back({OpKind::Full, dtype, {}, one ? 1.0 : 0.0});
    return kernelStep(kind, fusedOp(std::move(body), op));
  }
  case Kind::Creation:
    TG_ASSERT(codegen::hasCreationKernel(op.kind(), dtype)) << "no creation kernel for " << op.str();
    return {kind, nullptr, false};
  default:
    return {kind, nullptr, false};
  }
}

std::vector<std::pair<codegen::IndexKernel, ir::DType>> indexKernels(const ir::Node &node) {
  using codegen::IndexKernel;
  std::vector<std::pair<IndexKernel, ir::DType>> kernels;
  OpKind kind = node.op().kind();
  if (kind != OpKind::SetSlice) kernels.emplace_back(IndexKernel::Offsets, ir::DType::I64);
  IndexKernel own = kind == OpKind::Gather       ? IndexKernel::Gather
                    : kind == OpKind::ScatterAdd ? IndexKernel::ScatterAdd
                                                 : IndexKernel::ScatterSet;
  kernels.emplace_back(own, node.output()->type().dtype);
  return kernels;
}

std::vector<std::pair<codegen::WindowKernel, ir::DType>> windowKernels(const ir::Node &node) {
  using codegen::WindowKernel;
  ir::DType dtype = node.output()->type().dtype;
  switch (node.op().kind()) {
  case OpKind::MaxPool:
    return {{WindowKernel::MaxPool, dtype}};
  case OpKind::MaxPoolGrad:
    return {{WindowKernel::MaxPoolGrad, dtype}};
  case OpKind::MaxPoolGather:
    return {{WindowKernel::MaxPoolGather, dtype}};
  case OpKind::ConvTranspose:
    return {{WindowKernel::Col2im, dtype}};
  default:
    return {{WindowKernel::Im2col, dtype}};
  }
}

Grid elementwiseGrid(int64_t count, unsigned multiprocessors) {
  auto blocks = static_cast<unsigned>(std::min<int64_t>((count + kBlockSize - 1) / kBlockSize,
                                                        int64_t(multiprocessors) * kBlocksPerMultiprocessor));
  return {blocks, 1, kBlockSize, 1};
}

Grid reductionGrid(int64_t outputs, int64_t reducedCount, unsigned multiprocessors) {
  auto threads = static_cast<unsigned>(
      std::clamp<int64_t>((reducedCount + kWarp - 1) / kWarp * kWarp, kWarp, kMaxReductionThreads));
  auto blocks = static_cast<unsigned>(
      std::min<int64_t>(outputs, int64_t(multiprocessors) * kReductionBlocksPerMultiprocessor));
  return {blocks, 1, threads, 1};
}

Grid matmulGrid(int64_t n, int64_t m) {
  auto tiles = [](int64_t size) {
    return static_cast<unsigned>((size + codegen::kMatmulTile - 1) / codegen::kMatmulTile);
  };
  auto threads = static_cast<unsigned>(codegen::kMatmulThreads);
  return {tiles(m), tiles(n), threads, threads};
}

ir::ScalarGraph copyProgram(ir::DType dtype) {
  ir::ScalarGraph copy;
  copy.inputDtypes = {dtype};
  copy.body.push_back({ir::OpKind::Cast, dtype, {0}, 0});
  return copy;
}

ir::ScalarGraph fillProgram(ir::DType dtype, double value) {
  ir::ScalarGraph fill;
  fill.body.push_back({ir::OpKind::Full, dtype, {}, value});
  return fill;
}

ir::ScalarGraph toI64Program(ir::DType dtype) {
  ir::ScalarGraph toI64;
  toI64.inputDtypes = {dtype};
  toI64.body.push_back({ir::OpKind::Cast, ir::DType::I64, {0}, 0});
  return toI64;
}

double emptyReduction(ir::OpKind kind) {
  if (kind == ir::OpKind::Mean) return -std::numeric_limits<double>::quiet_NaN();
  return ir::opInfo(kind).identity == ir::Identity::One ? 1 : 0;
}

} // namespace tg::runtime
