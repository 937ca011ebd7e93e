// Fused nodes on the CPU runtime: the generated kernel (codegen's host JIT), split across threads. A
// reduction with a prologue runs as one generated reduction kernel, threads over ranges of outputs. (On a
// device, fused nodes go through the device layer: runtime/DeviceLayer.h.) evaluateFusedByKernels, the
// program run op by op by the CPU kernels, is the reference the generated kernels are tested against.
#include "codegen/Kernel.h"
#include "codegen/KernelSupply.h"
#include "ir/ScalarGraph.h"
#include "ir/SmallVector.h"
#include "ir/SourceLoc.h"
#include "runtime/FusedLaunch.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"
#include "runtime/WorkerPool.h"

#include <algorithm>
#include <cstring>
#include <span>

namespace tg::runtime {

namespace {

void check(const codegen::KernelSpec &spec, int32_t code) {
  if (code != codegen::kKernelOk) throw codegen::kernelError(*spec.body, code);
}

/// Runs the host kernel compiled for `spec` over outputs [0, count), split into `threads` equal ranges.
void runOnThreads(const codegen::KernelSpec &spec, codegen::HostKernel kernel,
                  const codegen::KernelArgs &args, int64_t count, int64_t threads) {
  if (threads <= 1) {
    check(spec, codegen::runHostKernel(spec, kernel, args, 0, count));
    return;
  }
  std::vector<int32_t> codes(static_cast<size_t>(threads), codegen::kKernelOk);
  parallelFor(threads, [&](int64_t t) {
    codes[static_cast<size_t>(t)] =
        codegen::runHostKernel(spec, kernel, args, count * t / threads, count * (t + 1) / threads);
  });
  for (int32_t code : codes)
    check(spec, code);
}

/// A tensor of `dtype` and `shape`: over an operand the caller gave up when one fits (each output element is
/// then written where only the same element of that operand was read: never a gather's table, read
/// anywhere), else a new one.
Tensor outputOver(const ir::ScalarGraph &body, const std::vector<Tensor> &operands, bool reuseOperands,
                  ir::DType dtype, const std::vector<int64_t> &shape) {
  auto readAsTable = [&](size_t k) {
    return std::any_of(body.body.begin(), body.body.end(), [k](const ir::ScalarInstr &instr) {
      return instr.kind == ir::OpKind::Gather && instr.operands[0] == k;
    });
  };
  for (size_t k = 0; reuseOperands && k < operands.size(); ++k) {
    const Tensor &operand = operands[k];
    if (operand.ownsBufferAlone() && operand.memory() == Memory::Host && operand.dtype() == dtype &&
        operand.offset() == 0 && operand.shape() == shape && operand.isContiguous() && !readAsTable(k))
      return operand;
  }
  return Tensor::empty(dtype, shape);
}

Tensor runHost(const ir::ScalarGraph &body, const std::vector<Tensor> &operands, bool reuseOperands,
               HostLaunchMemo *memo, std::span<Tensor> extraOutputs) {
  Launch launch(body, operands, [&](ir::DType dtype, std::vector<int64_t> shape) {
    return outputOver(body, operands, reuseOperands, dtype, shape);
  });
  codegen::KernelSpec spec{&body, launch.layout};
  if (launch.layout == codegen::Layout::Strided) // specialized for unit and zero strides along the last axis
    spec.innerStrides = codegen::innerStridePattern(launch.strides, body.numArrays(), launch.shape.size());
  codegen::HostKernel kernel = codegen::kernelSupply().host(spec);
  int64_t count = launch.output.numElements();
  int64_t threads = std::clamp<int64_t>(count / kElementsPerThread, 1, hostThreads());
  if (memo) memo->record(operands, spec, kernel, launch.args, launch.output.shape(), launch.shape, threads);
  runOnThreads(spec, kernel, launch.args, count, threads);
  std::move(launch.extraOutputs.begin(), launch.extraOutputs.end(), extraOutputs.begin());
  return launch.output;
}

/// Whether a Strided reduction reads memory in order when it accumulates neighbouring outputs together
/// (KernelSpec::blockedOutputs) rather than one output at a time: no input is contiguous along the innermost
/// reduced axis, and one is along the last kept axis. A column sum of a C-order matrix is; a row sum is not.
bool readsAcrossOutputs(const ReductionLaunch &launch, size_t numArrays) {
  size_t rank = launch.shape.size();
  auto reducedRank = static_cast<size_t>(launch.args.reducedRank);
  if (launch.layout != codegen::Layout::Strided || reducedRank == 0 || reducedRank >= rank) return false;
  size_t lastKept = rank - reducedRank - 1;
  if (launch.shape[lastKept] < 2) return false;
  bool unitAcross = false;
  for (size_t k = 0; k < numArrays; ++k) {
    if (launch.strides[k * rank + rank - 1] == 1) return false;
    unitAcross = unitAcross || launch.strides[k * rank + lastKept] == 1;
  }
  return unitAcross;
}

Tensor runHostReduction(const ir::Op &op, const std::vector<Tensor> &operands, ir::DType dtype,
                        HostLaunchMemo *memo, std::span<Tensor> extraOutputs) {
  ReductionLaunch launch(op, operands, dtype, Tensor::empty);
  const ir::ScalarGraph &body = *op.attrs().body;
  codegen::KernelSpec spec{&body, launch.layout};
  if (launch.layout ==
      codegen::Layout::Strided) // specialized for the strides along the innermost reduced axis
    spec.innerStrides =
        launch.args.reducedRank == 0
            ? std::vector<codegen::InnerStride>(body.numArrays(), codegen::InnerStride::Zero)
            : codegen::innerStridePattern(launch.strides, body.numArrays(), launch.shape.size());
  spec.blockedOutputs = readsAcrossOutputs(launch, body.numArrays());
  codegen::HostKernel kernel = codegen::kernelSupply().host(spec);
  int64_t count = launch.output.numElements();
  int64_t work = count * std::max<int64_t>(launch.reducedCount, 1);
  int64_t threads = std::clamp<int64_t>(std::min(work / kElementsPerThread, count), 1, hostThreads());
  if (memo) memo->record(operands, spec, kernel, launch.args, launch.output.shape(), launch.space, threads);
  if (count > 0) runOnThreads(spec, kernel, launch.args, count, threads);
  std::move(launch.extraOutputs.begin(), launch.extraOutputs.end(), extraOutputs.begin());
  return launch.output;
}

/// A launch like the last one `memo` recorded: the operands' pointers and a new output bound to its
/// arguments.
Tensor runMemoized(const HostLaunchMemo &memo, const std::vector<Tensor> &operands, ir::DType dtype,
                   bool reuseOperands, std::span<Tensor> extraOutputs) {
  const ir::ScalarGraph &body = *memo.spec.body;
  bool reduction = body.reduction.has_value();
  Tensor output = reduction ? Tensor::empty(dtype, memo.outputShape)
                            : outputOver(body, operands, reuseOperands, dtype, memo.outputShape);
  for (size_t k = 0; k < extraOutputs.size(); ++k) {
    ir::DType extraDtype = body.arrayDtype(body.numInputs() + k);
    extraOutputs[k] = reduction ? Tensor::empty(extraDtype, memo.extraShape)
                                : outputOver(body, operands, reuseOperands, extraDtype, memo.extraShape);
  }
  int64_t count = output.numElements();
  if (count == 0) return output;
  ir::SmallVector<const void *, 16> inputs;
  for (const Tensor &operand : operands)
    inputs.push_back(operand.rawData());
  for (const Tensor &extra : extraOutputs)
    inputs.push_back(extra.rawData());
  codegen::KernelArgs args{static_cast<int64_t>(memo.shape.size()),
                           memo.shape.data(),
                           inputs.data(),
                           memo.strides.data(),
                           output.rawData(),
                           memo.reducedRank};
  runOnThreads(memo.spec, memo.kernel, args, count, memo.threads);
  return output;
}

/// A gather instruction of a fused program, element by element: over the broadcast shape of its table as it
/// lies in the space (ir::tableInSpace) and its index values, the table's element at its place in the space
/// plus, for each index, the index (counted from the end when negative) times the table's stride along its
/// axis.
Tensor gatherElements(const ir::ScalarInstr &gather, const Tensor &table,
                      const std::vector<Tensor> &indices) {
  std::vector<int64_t> strides = ir::tableInSpace(gather, table.strides(), int64_t(0));
  Tensor placed = table.view(ir::tableInSpace(gather, table.shape(), int64_t(1)), strides, table.offset());
  std::vector<int64_t> space = placed.shape();
  for (const Tensor &index : indices)
    space = broadcastShapes(space, index.shape());
  std::vector<Tensor> spread; // each index as i64 over the space, C order
  for (const Tensor &index : indices) {
    Tensor wide = Tensor::empty(ir::DType::I64, space);
    ir::OpAttrs attrs;
    attrs.dtype = ir::DType::I64;
    Tensor cast = runOp(ir::Op(ir::OpKind::Cast, attrs), {index}, {{ir::DType::I64, {}, ir::Place::Host}})[0];
    wide.copyFrom(cast.view(space, broadcastStrides(cast, space), cast.offset()));
    spread.push_back(wide);
  }
  std::vector<int64_t> placedStrides = broadcastStrides(placed, space);
  auto axis = static_cast<size_t>(gather.immediate);
  Tensor out = Tensor::empty(table.dtype(), space);
  size_t bytes = ir::dtypeSize(table.dtype());
  std::vector<int64_t> at(space.size(), 0);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < space.size(); ++d)
      offset += at[d] * placedStrides[d];
    for (size_t j = 0; j < spread.size(); ++j) {
      int64_t index = spread[j].data<int64_t>()[i], size = table.shape()[axis + j];
      if (index < -size || index >= size) throw indexOutOfRange(index, axis + j, size);
      offset += (index < 0 ? index + size : index) * table.strides()[axis + j];
    }
    std::memcpy(static_cast<std::byte *>(out.rawData()) + i * static_cast<int64_t>(bytes),
                static_cast<const std::byte *>(table.rawData()) + offset * static_cast<int64_t>(bytes),
                bytes);
    for (size_t d = space.size(); d-- > 0;) // the next multi-index, an odometer
      if (++at[d] < space[d])
        break;
      else
        at[d] = 0;
  }
  return out;
}

} // namespace

std::vector<Tensor> evaluateFusedByKernels(const ir::Op &fused, const std::vector<Tensor> &inputs,
                                           ir::DType dtype) {
  const ir::ScalarGraph &body = *fused.attrs().body;
  TG_ASSERT(inputs.size() == body.numInputs())
      << "fused: " << inputs.size() << " inputs for a body of " << body.numInputs();
  std::vector<Tensor> values = inputs;
  for (const ir::ScalarInstr &instr : body.body) {
    if (instr.kind == ir::OpKind::Full) {
      values.push_back(Tensor::fromData(ir::TensorData::scalar(instr.dtype, instr.immediate)));
      continue;
    }
    std::vector<Tensor> operands;
    for (uint32_t operand : instr.operands)
      operands.push_back(values[operand]);
    if (instr.kind == ir::OpKind::Gather) {
      values.push_back(gatherElements(instr, operands[0], {operands.begin() + 1, operands.end()}));
      continue;
    }
    ir::OpAttrs attrs;
    attrs.dtype = instr.dtype;
    ir::TensorType type{instr.dtype, {}, ir::Place::Host};
    values.push_back(runOp(ir::Op(instr.kind, attrs), operands, {type})[0]);
  }
  // The outputs have the broadcast shape of all inputs (a table as it lies in the space), even where the
  // program's values read fewer.
  std::vector<const ir::ScalarInstr *> tables = body.tableReaders();
  std::vector<int64_t> shape;
  for (size_t k = 0; k < inputs.size(); ++k)
    shape = broadcastShapes(shape, tables[k] ? ir::tableInSpace(*tables[k], inputs[k].shape(), int64_t(1))
                                             : inputs[k].shape());
  auto broadcast = [&](const Tensor &value) {
    std::vector<int64_t> full = broadcastShapes(shape, value.shape());
    if (full == value.shape()) return value;
    Tensor copy = Tensor::empty(value.dtype(), full);
    copy.copyFrom(value.view(full, broadcastStrides(value, full), value.offset()));
    return copy;
  };
  std::vector<Tensor> outputs{broadcast(values.back())};
  for (uint32_t extra : body.extraOutputs)
    outputs.push_back(broadcast(values[extra]));
  if (body.reduction) outputs[0] = reductionKernel(ir::Op(*body.reduction, fused.attrs()), outputs[0], dtype);
  return outputs;
}

Tensor fusedKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype, bool reuseInputs,
                   HostLaunchMemo *memo, std::span<Tensor> extraOutputs) {
  const ir::ScalarGraph &body = *op.attrs().body;
  TG_ASSERT(extraOutputs.size() == body.extraOutputs.size())
      << "fused: " << extraOutputs.size() << " places for " << body.extraOutputs.size() << " extra outputs";
  if (memo && memo->fits(inputs)) return runMemoized(*memo, inputs, dtype, reuseInputs, extraOutputs);
  return body.reduction ? runHostReduction(op, inputs, dtype, memo, extraOutputs)
                        : runHost(body, inputs, reuseInputs, memo, extraOutputs);
}

} // namespace tg::runtime
