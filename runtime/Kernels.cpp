// runOp: dispatch from an op to its kernel family, plus the broadcasting helpers the families share.
#include "runtime/Kernels.h"

#include "ir/SourceLoc.h"
#include "runtime/Collectives.h"
#include "runtime/KernelSupport.h"

namespace tg::runtime {

using ir::OpKind;

std::vector<int64_t> broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right, padding the shorter shape with ones.
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      throw ir::UserError("cannot broadcast shapes " + shapeTuple(a) + " and " + shapeTuple(b));
    result[i] = x == 1 ? y : x;
  }
  return result;
}

std::vector<int64_t> broadcastStrides(const Tensor &tensor, const std::vector<int64_t> &shape) {
  size_t lead = shape.size() - tensor.rank();
  std::vector<int64_t> strides(shape.size(), 0);
  for (size_t i = 0; i < tensor.rank(); ++i)
    if (tensor.shape()[i] == shape[lead + i]) strides[lead + i] = tensor.strides()[i];
  return strides;
}

size_t normalizeAxis(int64_t axis, size_t rank) {
  int64_t normalized = axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
  TG_ASSERT(normalized >= 0 && normalized < static_cast<int64_t>(rank))
      << "axis " << axis << " out of range for rank " << rank;
  return static_cast<size_t>(normalized);
}

Tensor runKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype, bool reuseInputs) {
  int arity = op.info().arity;
  TG_ASSERT(arity < 0 ? !inputs.empty() || op.kind() == OpKind::Fused ||
                            op.info().fusion == ir::FusionKind::Creation
                      : inputs.size() == static_cast<size_t>(arity))
      << op.name() << " given " << inputs.size() << " inputs";
  switch (op.info().fusion) {
  case ir::FusionKind::Elementwise:
    return elementwiseKernel(op, inputs, dtype);
  case ir::FusionKind::Reduce:
    return reductionKernel(op, inputs[0], dtype);
  case ir::FusionKind::Creation:
    return creationKernel(op, inputs, dtype);
  default:
    break;
  }
  if (ir::isView(op.kind())) return shapeKernel(op, inputs);
  switch (op.kind()) {
  case OpKind::Matmul:
    return matmulKernel(inputs[0], inputs[1], dtype);
  case OpKind::Concat:
  case OpKind::Stack:
    return shapeKernel(op, inputs);
  case OpKind::Sort:
  case OpKind::Argsort:
  case OpKind::Cumsum:
    return sortKernel(op, inputs[0], dtype);
  case OpKind::DimSize:
    return dimSizeKernel(op, inputs[0]);
  case OpKind::Allreduce:
  case OpKind::Allgather:
  case OpKind::Shard:
  case OpKind::Broadcast:
    return collectiveKernel(op, inputs[0]);
  case OpKind::Conv:
  case OpKind::ConvTranspose:
  case OpKind::ConvFilterGrad:
    return convolutionKernel(op, inputs);
  case OpKind::MaxPool:
  case OpKind::MaxPoolGrad:
  case OpKind::MaxPoolGather:
    return poolingKernel(op, inputs);
  case OpKind::Gather:
  case OpKind::ScatterAdd:
  case OpKind::ScatterSet:
  case OpKind::SetSlice:
    return indexingKernel(op, inputs, reuseInputs);
  case OpKind::Fused:
    return fusedKernel(op, inputs, dtype, reuseInputs);
  default:
    break; // transfers: the executor copies
  }
  TG_ASSERT(false) << "no CPU kernel for " << op.name();
  return {};
}

std::vector<Tensor> runOp(const ir::Op &op, const std::vector<Tensor> &inputs,
                          const std::vector<ir::TensorType> &outputTypes, bool reuseInputs) {
  TG_ASSERT(outputTypes.size() == ir::outputCount(op))
      << op.name() << " has " << ir::outputCount(op) << " outputs, not " << outputTypes.size();
  std::vector<Tensor> results(outputTypes.size());
  results[0] = op.kind() == OpKind::Fused ? fusedKernel(op, inputs, outputTypes[0].dtype, reuseInputs,
                                                        nullptr, std::span<Tensor>(results).subspan(1))
                                          : runKernel(op, inputs, outputTypes[0].dtype, reuseInputs);
  for (size_t i = 0; i < results.size(); ++i)
    TG_ASSERT(results[i].dtype() == outputTypes[i].dtype)
        << op.str() << " computed " << ir::dtypeName(results[i].dtype()) << " for output " << i
        << ", but its type says " << outputTypes[i].str();
  return results;
}

} // namespace tg::runtime
