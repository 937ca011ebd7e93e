#include "runtime/FusedLaunch.h"

#include "ir/Assert.h"
#include "ir/SmallVector.h"
#include "ir/SourceLoc.h"
#include "runtime/KernelSupport.h"

#include <algorithm>

namespace tg::runtime {

namespace {

/// The operands as the kernel's space has them: `operands` itself, or where the body gathers, a copy in
/// `placed` with each table as a view that lies where ir::tableInSpace puts it, and in `gatherWords` each
/// gathered axis's size and the table's stride along it, in the order of the body's gathers (the words
/// KernelArgs has after the strides). Without gathers, no copy: an operand that its caller gave up keeps
/// one owner, and the output may go over it.
const std::vector<Tensor> &inSpace(const ir::ScalarGraph &body, const std::vector<Tensor> &operands,
                                   std::vector<Tensor> &placed, std::vector<int64_t> &gatherWords) {
  for (const ir::ScalarInstr &instr : body.body) {
    if (instr.kind != ir::OpKind::Gather) continue;
    if (placed.empty()) placed = operands;
    const Tensor &table = operands.at(instr.operands[0]);
    auto axis = static_cast<size_t>(instr.immediate);
    for (size_t j = 0; j + 1 < instr.operands.size(); ++j)
      gatherWords.insert(gatherWords.end(), {table.shape().at(axis + j), table.strides().at(axis + j)});
    placed[instr.operands[0]] =
        table.view(ir::tableInSpace(instr, table.shape(), int64_t(1)),
                   ir::tableInSpace(instr, table.strides(), int64_t(0)), table.offset());
  }
  return placed.empty() ? operands : placed;
}

/// `shape` broadcast with each operand's: the kernel's space. Shapes that do not broadcast are a UserError
/// located where the body meets them (the op the user wrote, not the fused node's root).
std::vector<int64_t> spaceOf(const ir::ScalarGraph &body, const std::vector<Tensor> &tensors,
                             const std::vector<Tensor> &operands, std::vector<int64_t> shape) {
  try {
    for (const Tensor &input : operands)
      shape = broadcastShapes(shape, input.shape());
  } catch (ir::UserError &error) {
    std::vector<std::vector<int64_t>> shapes;
    for (const Tensor &input : tensors)
      shapes.push_back(input.shape());
    error.loc = body.whereShapesDisagree(shapes);
    throw;
  }
  return shape;
}

} // namespace

Launch::Launch(const ir::ScalarGraph &body, const std::vector<Tensor> &tensors,
               const AllocateOutput &allocate, std::vector<int64_t> outputShape)
    : shape(std::move(outputShape)) {
  std::vector<int64_t> gatherWords;
  std::vector<Tensor> placed;
  const std::vector<Tensor> &operands = inSpace(body, tensors, placed, gatherWords);
  shape = spaceOf(body, tensors, operands, std::move(shape));
  output = allocate(body.resultDtype(), shape);
  ir::SmallVector<codegen::LayoutInput, 8> layoutInputs;
  for (const Tensor &input : operands) {
    inputs.push_back(input.rawData());
    layoutInputs.push_back({input.shape(), input.strides()});
  }
  // The extra outputs are C-contiguous over the shape: addressed like contiguous inputs, they leave the
  // layout as the inputs make it.
  for (size_t k = 0; k < body.extraOutputs.size(); ++k) {
    extraOutputs.push_back(allocate(body.arrayDtype(body.numInputs() + k), shape));
    inputs.push_back(extraOutputs.back().rawData());
  }
  layout = codegen::kernelLayout(body, shape, layoutInputs);
  if (layout == codegen::Layout::Strided) {
    for (const Tensor &input : operands) {
      std::vector<int64_t> along = broadcastStrides(input, shape);
      strides.insert(strides.end(), along.begin(), along.end());
    }
    for (const Tensor &extra : extraOutputs)
      strides.insert(strides.end(), extra.strides().begin(), extra.strides().end());
    strides.insert(strides.end(), gatherWords.begin(), gatherWords.end());
  }
  args = {static_cast<int64_t>(shape.size()), shape.data(), inputs.data(), strides.data(), output.rawData()};
}

ReductionLaunch::ReductionLaunch(const ir::Op &op, const std::vector<Tensor> &tensors, ir::DType dtype,
                                 const AllocateOutput &allocate) {
  const ir::ScalarGraph &body = *op.attrs().body;
  std::vector<int64_t> gatherWords;
  std::vector<Tensor> placed;
  const std::vector<Tensor> &operands = inSpace(body, tensors, placed, gatherWords);
  space = spaceOf(body, tensors, operands, {});
  std::vector<bool> reduced(space.size(), false);
  for (int64_t axis : op.attrs().axes)
    reduced[normalizeAxis(axis, space.size())] = true;
  std::vector<size_t> order;
  std::vector<int64_t> outShape;
  for (size_t axis = 0; axis < space.size(); ++axis)
    if (!reduced[axis]) {
      order.push_back(axis);
      outShape.push_back(space[axis]);
    } else if (op.attrs().keepdims) {
      outShape.push_back(1);
    }
  int64_t reducedRank = 0;
  for (size_t axis = 0; axis < space.size(); ++axis)
    if (reduced[axis]) {
      order.push_back(axis);
      reducedCount *= space[axis];
      ++reducedRank;
    }
  ir::checkReductionOfElements(*body.reduction, reducedCount);
  TG_ASSERT(dtype == codegen::kernelOutputDtype(body))
      << "fused reduction: result dtype " << ir::dtypeName(dtype) << ", kernel's "
      << ir::dtypeName(codegen::kernelOutputDtype(body));
  output = allocate(dtype, outShape);
  for (size_t axis : order)
    shape.push_back(space[axis]);
  ir::SmallVector<codegen::LayoutInput, 8> layoutInputs;
  auto addArray = [&](const Tensor &array) {
    inputs.push_back(array.rawData());
    std::vector<int64_t> along = broadcastStrides(array, space);
    for (size_t axis : order)
      strides.push_back(along[axis]);
  };
  for (const Tensor &input : operands) {
    addArray(input);
    layoutInputs.push_back({input.shape(), input.strides()});
  }
  for (size_t k = 0; k < body.extraOutputs.size(); ++k) {
    extraOutputs.push_back(allocate(body.arrayDtype(body.numInputs() + k), space));
    addArray(extraOutputs.back());
  }
  strides.insert(strides.end(), gatherWords.begin(), gatherWords.end());
  layout = codegen::kernelLayout(body, space, layoutInputs, op.attrs().axes);
  args = {static_cast<int64_t>(shape.size()),
          shape.data(),
          inputs.data(),
          strides.data(),
          output.rawData(),
          reducedRank};
}

bool HostLaunchMemo::fits(const std::vector<Tensor> &operands) const {
  if (!kernel) return false;
  size_t at = 0;
  for (const Tensor &operand : operands) {
    size_t rank = operand.rank();
    if (at + 1 + 2 * rank > operandLayout_.size() || operandLayout_[at] != static_cast<int64_t>(rank) ||
        !std::equal(operand.shape().begin(), operand.shape().end(), operandLayout_.begin() + at + 1) ||
        !std::equal(operand.strides().begin(), operand.strides().end(),
                    operandLayout_.begin() + at + 1 + rank))
      return false;
    at += 1 + 2 * rank;
  }
  return at == operandLayout_.size();
}

void HostLaunchMemo::record(const std::vector<Tensor> &operands, const codegen::KernelSpec &launchSpec,
                            codegen::HostKernel launchKernel, const codegen::KernelArgs &args,
                            std::vector<int64_t> launchOutputShape, std::vector<int64_t> launchExtraShape,
                            int64_t launchThreads) {
  operandLayout_.clear();
  for (const Tensor &operand : operands) {
    operandLayout_.push_back(static_cast<int64_t>(operand.rank()));
    operandLayout_.insert(operandLayout_.end(), operand.shape().begin(), operand.shape().end());
    operandLayout_.insert(operandLayout_.end(), operand.strides().begin(), operand.strides().end());
  }
  spec = launchSpec;
  kernel = launchKernel;
  shape.assign(args.shape, args.shape + args.rank);
  strides.clear();
  if (spec.layout == codegen::Layout::Strided || spec.body->reduction)
    strides.assign(args.strides, args.strides + args.rank * static_cast<int64_t>(spec.body->numArrays()) +
                                     2 * static_cast<int64_t>(spec.body->gatheredAxes()));
  outputShape = std::move(launchOutputShape);
  extraShape = std::move(launchExtraShape);
  reducedRank = args.reducedRank;
  threads = launchThreads;
}

} // namespace tg::runtime
