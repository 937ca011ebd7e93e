#include "runtime/DeviceLayer.h"

#include "ir/Assert.h"
#include "ir/ScalarGraph.h"
#include "ir/SourceLoc.h"
#include "runtime/ArgReduction.h"
#include "runtime/Collectives.h"
#include "runtime/DevicePlan.h"
#include "runtime/FusedLaunch.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>

namespace tg::runtime {

namespace {

using ir::OpKind;

size_t byteSize(const Tensor &tensor) {
  return static_cast<size_t>(tensor.numElements()) * ir::dtypeSize(tensor.dtype());
}

DeviceAddress addressOf(const Tensor &tensor) {
  return static_cast<DeviceAddress>(reinterpret_cast<uintptr_t>(tensor.rawData()));
}

} // namespace

// ---- DeviceTrace ----

std::shared_ptr<DeviceTrace> DeviceTrace::fromEnvironment() {
  const char *path = std::getenv("TGC_DEVICE_TRACE");
  if (!path || !*path) return nullptr;
  std::FILE *file = std::fopen(path, "w");
  if (!file)
    throw ir::UserError(std::string("TGC_DEVICE_TRACE: cannot write '") + path +
                        "': " + std::strerror(errno));
  return std::make_shared<DeviceTrace>(file);
}

DeviceTrace::~DeviceTrace() {
  std::fclose(file_);
}

void DeviceTrace::line(const std::string &text) {
  std::fputs(text.c_str(), file_);
  std::fputc('\n', file_);
}

// ---- DeviceLayer ----

DeviceLayer::DeviceLayer(std::string name, std::shared_ptr<DeviceMemory> memory, unsigned multiprocessors)
    : name_(std::move(name)), memory_(std::move(memory)), trace_(DeviceTrace::fromEnvironment()),
      multiprocessors_(std::max(1u, multiprocessors)) {}

Tensor DeviceLayer::upload(const Tensor &host) {
  TG_ASSERT(host.memory() == Memory::Host) << "uploading a tensor that is already in device memory";
  Tensor source = host.contiguous();
  Tensor target = allocate(source.dtype(), source.shape());
  toDevice(addressOf(target), source.rawData(), byteSize(source));
  return target;
}

Tensor DeviceLayer::download(const Tensor &device) {
  TG_ASSERT(device.memory() == Memory::Device) << "downloading a tensor in host memory";
  Tensor source = contiguous(device);
  Tensor target = Tensor::empty(source.dtype(), source.shape());
  toHost(target.rawData(), addressOf(source), byteSize(source));
  return target;
}

Tensor DeviceLayer::run(const ir::Node &node, const std::vector<Tensor> &arguments,
                        std::span<Tensor> extraOutputs) {
  TG_ASSERT(extraOutputs.size() + 1 == node.outputs().size())
      << node.op().name() << ": " << extraOutputs.size() << " places for " << node.outputs().size() - 1
      << " extra outputs";
  std::vector<Tensor> inputs;
  for (const Tensor &argument : arguments)
    inputs.push_back(argument.memory() == Memory::Device ? argument : upload(argument));
  const ir::Op &op = node.op();
  ir::DType dtype = node.output()->type().dtype;
  DeviceStep step = planDeviceStep(node);
  switch (step.kind) {
  case DeviceStep::Kind::Kernel:
    return elementwise(*step.fused->attrs().body, inputs, {}, extraOutputs);
  case DeviceStep::Kind::Reduction:
    return reduce(*step.fused, inputs, dtype, extraOutputs);
  case DeviceStep::Kind::PositionalReduction:
    return argReduce(op, inputs[0]);
  case DeviceStep::Kind::Matmul:
    return matmul(inputs[0], inputs[1], dtype);
  case DeviceStep::Kind::Fill: {
    bool like = !inputs.empty(); // zeros_like, ones_like
    return elementwise(*step.fused->attrs().body, {}, like ? inputs[0].shape() : op.attrs().shape);
  }
  case DeviceStep::Kind::Broadcast: {
    ir::OpAttrs scalar = op.attrs();
    scalar.shape = {};
    Tensor value =
        upload(runOp(ir::Op(op.kind(), scalar), {}, {ir::TensorType{dtype, {}, ir::Place::Host}}).at(0));
    return elementwise(*step.fused->attrs().body, {value}, op.attrs().shape);
  }
  case DeviceStep::Kind::Creation:
    return createByIndex(op, inputs, dtype);
  case DeviceStep::Kind::View: // no element is read
    return runOp(op, inputs, {node.output()->type()}).at(0);
  case DeviceStep::Kind::Reshape:
    return runOp(op, {contiguous(inputs[0])}, {node.output()->type()}).at(0);
  case DeviceStep::Kind::Join:
    return join(op, inputs);
  case DeviceStep::Kind::Index:
    return index(node, inputs);
  case DeviceStep::Kind::Window:
    return window(node, inputs);
  case DeviceStep::Kind::Collective:
    return collective(op, inputs[0]);
  case DeviceStep::Kind::Loop:
    break; // the executor runs a loop's body step by step (Executor::runLoop)
  }
  TG_ASSERT(false) << "no device step for " << op.name();
  return {};
}

/// The seconds since `start` (on the host: a device's queued work may still run).
static double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// allreduce, allgather, broadcast: on device memory where the device has collectives, else staged through
/// host memory (the same numbers: the host's collectives are the same reductions in the same order).
Tensor DeviceLayer::collective(const ir::Op &op, const Tensor &input) {
  if (!collectivesOnDevice_) collectivesOnDevice_ = hasCollectives(noCollectives_);
  ir::DType dtype = input.dtype();
  if (!*collectivesOnDevice_) {
    ++stagedCollectives_;
    if (trace_) trace_->line(std::string("staged ") + op.name());
    return upload(collectiveKernel(op, download(input)));
  }
  ++collectives_;
  if (op.kind() != ir::OpKind::Allgather) {
    Tensor result = allocate(dtype, input.shape());
    copy(input, result);
    size_t count = static_cast<size_t>(result.numElements());
    if (trace_)
      trace_->line(std::string(op.name()) + " " + ir::dtypeName(dtype) + " " + std::to_string(count));
    auto start = std::chrono::steady_clock::now();
    if (op.kind() == ir::OpKind::Allreduce)
      allreduceOnDevice(addressOf(result), count, dtype, op.attrs().combine);
    else
      broadcastOnDevice(addressOf(result), byteSize(result));
    recordCollective(byteSize(result), secondsSince(start));
    return result;
  }
  // The gathered axis first, so that each rank's block lies in one piece; the result viewed back.
  size_t axis = static_cast<size_t>(op.attrs().axes.at(0));
  std::vector<int64_t> first{static_cast<int64_t>(axis)}, back(input.rank());
  for (size_t i = 0; i < input.rank(); ++i)
    if (i != axis) first.push_back(static_cast<int64_t>(i));
  for (size_t i = 0; i < first.size(); ++i)
    back[static_cast<size_t>(first[i])] = static_cast<int64_t>(i);
  Tensor local = contiguous(axis == 0 ? input : input.permuted(first));
  std::vector<int64_t> extents = blockExtents(local.shape()[0]);
  int64_t rowBytes = static_cast<int64_t>(ir::dtypeSize(dtype)), total = 0;
  for (size_t i = 1; i < local.rank(); ++i)
    rowBytes *= local.shape()[i];
  std::vector<size_t> counts;
  for (int64_t extent : extents) {
    counts.push_back(static_cast<size_t>(extent * rowBytes));
    total += extent;
  }
  std::vector<int64_t> shape = local.shape();
  shape[0] = total;
  Tensor joined = allocate(dtype, shape);
  if (trace_)
    trace_->line(std::string("allgather ") + ir::dtypeName(dtype) + " " +
                 std::to_string(joined.numElements()));
  auto start = std::chrono::steady_clock::now();
  allgatherOnDevice(addressOf(local), addressOf(joined), counts);
  recordCollective(byteSize(joined), secondsSince(start));
  return axis == 0 ? joined : joined.permuted(back);
}

void DeviceLayer::allreduceOnDevice(DeviceAddress, size_t, ir::DType, ir::OpKind) {
  TG_ASSERT(false) << "a device without collectives was asked for an allreduce";
}
void DeviceLayer::broadcastOnDevice(DeviceAddress, size_t) {
  TG_ASSERT(false) << "a device without collectives was asked for a broadcast";
}
void DeviceLayer::allgatherOnDevice(DeviceAddress, DeviceAddress, const std::vector<size_t> &) {
  TG_ASSERT(false) << "a device without collectives was asked for an allgather";
}

void DeviceLayer::synchronize() {
  if (trace_) trace_->line("sync");
  waitForDevice();
}

std::string DeviceLayer::report() const {
  std::ostringstream text;
  text << name_ << ": " << launches_ << " kernel launches, " << gemms_ << " gemms, " << generatedMatmuls_
       << " generated matmuls";
  if (collectives_) text << ", " << collectives_ << " collectives on the device";
  if (stagedCollectives_)
    text << ", " << stagedCollectives_ << " collectives staged through host memory (" << noCollectives_
         << ")";
  if (std::string more = deviceReport(); !more.empty()) text << "; " << more;
  return text.str();
}

Tensor DeviceLayer::allocate(ir::DType dtype, std::vector<int64_t> shape) {
  int64_t bytes = static_cast<int64_t>(ir::dtypeSize(dtype));
  for (int64_t size : shape)
    if (__builtin_mul_overflow(bytes, size, &bytes))
      throw ir::UserError("out of device memory: a tensor of this shape does not fit in memory");
  DeviceAddress block = memory_->allocate(static_cast<size_t>(bytes));
  if (trace_) trace_->line("alloc " + std::to_string(bytes));
  std::shared_ptr<std::byte> buffer(reinterpret_cast<std::byte *>(static_cast<uintptr_t>(block)),
                                    [memory = memory_, trace = trace_, bytes](std::byte *address) {
                                      if (trace) trace->line("free " + std::to_string(bytes));
                                      memory->release(
                                          static_cast<DeviceAddress>(reinterpret_cast<uintptr_t>(address)));
                                    });
  return Tensor::onDevice(std::move(buffer), dtype, std::move(shape));
}

void DeviceLayer::toDevice(DeviceAddress target, const void *source, size_t bytes) {
  if (bytes == 0) return;
  if (trace_) trace_->line("h2d " + std::to_string(bytes));
  copyToDevice(target, source, bytes);
}

void DeviceLayer::toHost(void *target, DeviceAddress source, size_t bytes) {
  if (bytes == 0) return;
  if (trace_) trace_->line("d2h " + std::to_string(bytes));
  copyToHost(target, source, bytes);
}

/// The device tensor when C-contiguous, else a contiguous copy made by a generated kernel.
Tensor DeviceLayer::contiguous(const Tensor &tensor) {
  if (tensor.isContiguous()) return tensor;
  return elementwise(copyProgram(tensor.dtype()), {tensor});
}

void DeviceLayer::copy(const Tensor &source, const Tensor &target) {
  TG_ASSERT(target.isContiguous() && source.shape() == target.shape() && source.dtype() == target.dtype())
      << "copy of " << shapeTuple(source.shape()) << " into " << shapeTuple(target.shape());
  Tensor part = contiguous(source);
  size_t bytes = byteSize(part);
  if (bytes == 0) return;
  if (trace_) trace_->line("d2d " + std::to_string(bytes));
  copyOnDevice(addressOf(target), addressOf(part), bytes);
}

/// The launch's shape, strides and input pointers copied into device memory, with a zeroed error flag after
/// them: the block (kept alive until the launch is done) and the address of each part.
struct DeviceLayer::PackedArgs {
  Tensor block;
  DeviceAddress shape, strides, inputs, errorFlag; // strides: 0 when the launch reads none
};

DeviceLayer::PackedArgs DeviceLayer::pack(const codegen::KernelArgs &args, const ir::ScalarGraph &body,
                                          bool strided) {
  // The strides with the gathered axes' words after them (KernelArgs).
  size_t numInputs = body.numArrays(), rank = static_cast<size_t>(args.rank),
         strideCount = strided ? numInputs * rank + 2 * body.gatheredAxes() : 0;
  std::vector<int64_t> words;
  words.insert(words.end(), args.shape, args.shape + rank);
  words.insert(words.end(), args.strides, args.strides + strideCount);
  for (size_t i = 0; i < numInputs; ++i)
    words.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(args.inputs[i])));
  words.push_back(0); // the error flag (an int32 in the low half)
  Tensor block = allocate(ir::DType::I64, {static_cast<int64_t>(words.size())});
  DeviceAddress base = addressOf(block);
  toDevice(base, words.data(), words.size() * sizeof(int64_t));
  return {block, base, strided ? base + rank * 8 : 0, base + (rank + strideCount) * 8,
          base + (rank + strideCount + numInputs) * 8};
}

/// A launch of the kernel of `spec` over `count` elements (a reduction's: outputs), its arguments in device
/// memory (pack).
FusedKernelLaunch DeviceLayer::fusedLaunch(const codegen::KernelSpec &spec, const Grid &grid, int64_t count,
                                           const codegen::KernelArgs &args, const PackedArgs &packed,
                                           DeviceAddress output) {
  FusedKernelLaunch launch{spec, grid, {}};
  codegen::FusedParameters &p = launch.parameters;
  p[codegen::kFusedCount] = static_cast<uint64_t>(count);
  p[codegen::kFusedRank] = static_cast<uint64_t>(args.rank);
  p[codegen::kFusedShape] = packed.shape;
  p[codegen::kFusedInputs] = packed.inputs;
  p[codegen::kFusedStrides] = packed.strides;
  p[codegen::kFusedOutput] = output;
  p[codegen::kFusedErrorFlag] = packed.errorFlag;
  p[codegen::kFusedReducedRank] = static_cast<uint64_t>(args.reducedRank);
  return launch;
}

/// Traces and counts a launch of the kernel `name`, then runs `start` (the device's launch primitive).
void DeviceLayer::issue(const std::string &name, const Grid &grid, const std::function<void()> &start) {
  if (trace_)
    trace_->line("launch " + name + " grid " + std::to_string(grid.blocksX) + "x" +
                 std::to_string(grid.blocksY) + " block " + std::to_string(grid.threadsX) + "x" +
                 std::to_string(grid.threadsY));
  start();
  ++launches_;
}

/// A fused kernel's launch; where the kernel can fail, its error flag read back and its error thrown.
void DeviceLayer::issue(const FusedKernelLaunch &fused) {
  issue(codegen::kernelName(fused.spec), fused.grid, [&] { launch(fused); });
  if (!kernelCanFail(*fused.spec.body)) return;
  int32_t code = 0;
  toHost(&code, fused.parameters[codegen::kFusedErrorFlag], sizeof code);
  if (code != codegen::kKernelOk) throw codegen::kernelError(*fused.spec.body, code);
}

Tensor DeviceLayer::elementwise(const ir::ScalarGraph &body, const std::vector<Tensor> &inputs,
                                std::vector<int64_t> shape, std::span<Tensor> extraOutputs) {
  Launch bound(
      body, inputs,
      [this](ir::DType dtype, std::vector<int64_t> size) { return allocate(dtype, std::move(size)); },
      std::move(shape));
  std::move(bound.extraOutputs.begin(), bound.extraOutputs.end(), extraOutputs.begin());
  int64_t count = bound.output.numElements();
  if (count == 0) return bound.output;
  bool strided = bound.layout == codegen::Layout::Strided;
  PackedArgs packed = pack(bound.args, body, strided);
  issue(fusedLaunch({&body, bound.layout}, elementwiseGrid(count, multiprocessors_), count, bound.args,
                    packed, addressOf(bound.output)));
  return bound.output;
}

Tensor DeviceLayer::reduce(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype,
                           std::span<Tensor> extraOutputs) {
  ReductionLaunch bound(op, inputs, dtype, [this](ir::DType type, std::vector<int64_t> shape) {
    return allocate(type, std::move(shape));
  });
  std::move(bound.extraOutputs.begin(), bound.extraOutputs.end(), extraOutputs.begin());
  int64_t count = bound.output.numElements();
  if (count == 0) return bound.output;
  const ir::ScalarGraph &body = *op.attrs().body;
  if (bound.reducedCount == 0) { // nothing to read: one fill kernel, not a block per output
    return elementwise(fillProgram(dtype, emptyReduction(*body.reduction)), {}, bound.output.shape());
  }
  PackedArgs packed = pack(bound.args, body, true);
  issue(fusedLaunch({&body, bound.layout}, reductionGrid(count, bound.reducedCount, multiprocessors_), count,
                    bound.args, packed, addressOf(bound.output)));
  return bound.output;
}

/// eye, arange, rand, randn: the creation kernel over the op's shape.
Tensor DeviceLayer::createByIndex(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype) {
  // arange of an input takes its length from the input's first axis, rand and randn their shape.
  std::vector<int64_t> shape = op.attrs().shape;
  if (!inputs.empty())
    shape = op.kind() == OpKind::Arange ? std::vector<int64_t>{inputs[0].shape().at(0)} : inputs[0].shape();
  Tensor out = allocate(dtype, shape);
  int64_t count = out.numElements();
  if (count == 0) return out;
  CreationKernelLaunch kernel{op.kind(), dtype, elementwiseGrid(count, multiprocessors_), {}};
  codegen::CreationArgs &args = kernel.args;
  args.count = count;
  args.output = out.rawData();
  if (op.kind() == OpKind::Eye) args.p0 = op.attrs().shape.at(1);
  if (op.kind() == OpKind::Rand || op.kind() == OpKind::Randn)
    args.p0 = static_cast<int64_t>(op.attrs().seed);
  if (op.kind() == OpKind::Arange) {
    ArangeTerms terms = arangeTerms(op.attrs(), dtype);
    args.p0 = terms.first, args.p1 = terms.step, args.x0 = terms.floatFirst, args.x1 = terms.floatStep;
  }
  issue(codegen::creationKernelName(op.kind(), dtype), kernel.grid, [&] { launch(kernel); });
  return out;
}

/// Traces and counts an index kernel's launch; the offsets kernel's error report read back and thrown.
void DeviceLayer::issue(const IndexKernelLaunch &index) {
  issue(codegen::indexKernelName(index.kind, index.dtype), index.grid, [&] { launch(index); });
}

/// gather, scatter_add, scatter_set, set_slice: the offsets of the index positions (uploaded where they
/// depend on shapes alone, then each index array's part added by the offsets kernel), then the op's index
/// kernel over them, a scatter writing into a device copy of x.
Tensor DeviceLayer::index(const ir::Node &node, const std::vector<Tensor> &inputs) {
  using codegen::IndexKernel;
  const ir::Op &op = node.op();
  OpKind kind = op.kind();
  ir::DType dtype = node.output()->type().dtype;
  Tensor x = contiguous(inputs[0]), out = x;
  if (kind != OpKind::Gather) { // the scatters write into a copy of x
    out = allocate(dtype, x.shape());
    if (size_t bytes = byteSize(x)) {
      if (trace_) trace_->line("d2d " + std::to_string(bytes));
      copyOnDevice(addressOf(out), addressOf(x), bytes);
    }
  }
  IndexLayout layout;
  std::vector<Tensor> indices;
  if (kind == OpKind::SetSlice) {
    layout = regionLayout(sliceView(out, op.attrs().slices), out.offset());
  } else {
    indices.assign(inputs.begin() + (kind == OpKind::Gather ? 1 : 2), inputs.end());
    std::vector<std::vector<int64_t>> indexShapes;
    for (const Tensor &index : indices)
      indexShapes.push_back(index.shape());
    layout = indexLayout(op, x.shape(), indexShapes);
  }
  Tensor update =
      kind == OpKind::Gather ? Tensor() : contiguous(broadcastUpdate(op, inputs[1], layout.shape));
  int64_t count = layout.outer * layout.positions * layout.inner;
  if (kind == OpKind::Gather) out = allocate(dtype, layout.shape);
  if (count == 0) return out;
  Tensor offsets = allocate(ir::DType::I64, {layout.positions});
  if (!layout.baseOffsets.empty())
    toDevice(addressOf(offsets), layout.baseOffsets.data(), layout.baseOffsets.size() * sizeof(int64_t));
  for (size_t i = 0; i < indices.size(); ++i) {
    const IndexLayout::Index &axis = layout.indices[i];
    // the index, i64 over the positions' shape, in C order
    Tensor values = elementwise(toI64Program(indices[i].dtype()), {indices[i]}, layout.indexShape);
    Tensor report = allocate(ir::DType::I64, {2});
    const int64_t clear[2] = {0, 0};
    toDevice(addressOf(report), clear, sizeof clear);
    IndexKernelLaunch launch{
        IndexKernel::Offsets, ir::DType::I64, elementwiseGrid(layout.positions, multiprocessors_), {}};
    codegen::IndexArgs &args = launch.args;
    args.count = layout.positions;
    args.output = offsets.rawData();
    args.input = values.rawData();
    args.size = axis.size;
    args.stride = axis.stride;
    args.accumulate = i > 0 || !layout.baseOffsets.empty();
    args.error = report.data<int64_t>();
    issue(launch);
    int64_t outside[2];
    toHost(outside, addressOf(report), sizeof outside);
    if (outside[0]) throw indexOutOfRange(outside[1], axis.axis, axis.size);
  }
  IndexKernelLaunch launch{
      indexKernels(node).back().first, dtype, elementwiseGrid(count, multiprocessors_), {}};
  codegen::IndexArgs &args = launch.args;
  args.count = count;
  args.output = out.rawData();
  args.input = kind == OpKind::Gather ? x.rawData() : update.rawData();
  args.offsets = offsets.data<int64_t>();
  args.positions = layout.positions;
  args.inner = layout.inner;
  args.rowElements = layout.rowElements;
  issue(launch);
  return out;
}

/// A launch of the window kernel `kind` (codegen/Kernel.h) over `out`'s elements, with g's sizes.
void DeviceLayer::windowKernel(codegen::WindowKernel kind, const Geometry &g, const Tensor &out,
                               const Tensor &input, const Tensor &second) {
  int64_t count = out.numElements();
  WindowKernelLaunch launch{kind, out.dtype(), elementwiseGrid(count, multiprocessors_), {}};
  codegen::WindowArgs &args = launch.args;
  args.count = count;
  args.output = out.rawData();
  args.input = input.rawData();
  args.second = second.rawData();
  args.images = g.n, args.channels = g.channels, args.inH = g.inH, args.inW = g.inW, args.kH = g.kH;
  args.kW = g.kW, args.outH = g.outH, args.outW = g.outW, args.strideH = g.strideH, args.strideW = g.strideW;
  args.dilationH = g.dilationH, args.dilationW = g.dilationW, args.padTop = g.padTop,
  args.padLeft = g.padLeft;
  issue(codegen::windowKernelName(kind, out.dtype()), launch.grid, [&] { this->launch(launch); });
}

/// A tensor of zeros, by a fill kernel.
Tensor DeviceLayer::zeros(ir::DType dtype, const std::vector<int64_t> &shape) {
  return elementwise(fillProgram(dtype, 0), {}, shape);
}

/// conv, conv_transpose, conv_filter_grad as gemms of column matrices: `col` [channels * kH * kW, n * outH *
/// outW] holds every window of every image (im2col), so that with the filters w as [filters, channels /
/// groups * kH * kW] and gy channels first ([filters, n * outH * outW], a generated copy), per channel group
/// g (its rows of w and gy, its rows of col):
///
///   conv              y_g = w_g @ col_g, channels first, given as a view [n, filters, ...] of that
///   conv_transpose    col_g = w_g^T @ gy_g, summed into x's shape by col2im
///   conv_filter_grad  dw_g = gy_g @ col_g^T
///
/// max_pool, max_pool_grad and max_pool_gather: their window kernel.
Tensor DeviceLayer::window(const ir::Node &node, const std::vector<Tensor> &inputs) {
  using codegen::WindowKernel;
  const ir::Op &op = node.op();
  OpKind kind = op.kind();
  ir::DType dtype = node.output()->type().dtype;
  Tensor a = contiguous(inputs[0]), b = inputs.size() > 1 ? contiguous(inputs[1]) : Tensor();
  bool pooling = !ir::isConvolution(kind);
  WindowShapes shapes = pooling ? poolingShapes(op, a.shape()) : convolutionShapes(op, a.shape(), b.shape());
  const Geometry &g = shapes.geometry;
  int64_t outCount = 1;
  for (int64_t size : shapes.output)
    outCount *= size;
  if (pooling || outCount == 0) {
    Tensor out = allocate(dtype, shapes.output);
    if (outCount > 0) windowKernel(windowKernels(node).at(0).first, g, out, a, b);
    return out;
  }
  int64_t windowSize = g.kH * g.kW, perGroup = g.channelsPerGroup() * windowSize,
          filters = g.filtersPerGroup();
  int64_t columns = g.n * g.outH * g.outW;
  int64_t inner = kind == OpKind::Conv ? perGroup : kind == OpKind::ConvTranspose ? filters : columns;
  if (inner == 0 || columns == 0) return zeros(dtype, shapes.output); // sums of nothing
  std::vector<int64_t> channelsFirst(a.rank());                       // [n, c, ...] <-> [c, n, ...]
  for (size_t d = 0; d < channelsFirst.size(); ++d)
    channelsFirst[d] = static_cast<int64_t>(d < 2 ? 1 - d : d);
  // Group g's part of a matrix of `rows` x `cols` (row-major, its groups stacked by rows) at `base`.
  auto part = [](const Tensor &base, int64_t group, int64_t rows, int64_t cols, bool transposed) {
    int64_t offset = base.offset() + group * rows * cols;
    return transposed ? base.view({cols, rows}, {1, cols}, offset)
                      : base.view({rows, cols}, {cols, 1}, offset);
  };
  auto at = [&](const Tensor &base, int64_t group, int64_t groupElements) {
    return addressOf(base) + static_cast<DeviceAddress>(group * groupElements) * ir::dtypeSize(dtype);
  };
  Tensor col = allocate(dtype, {g.channels * windowSize, columns});
  if (kind == OpKind::ConvTranspose) { // (gy, w) -> dx
    Tensor gy = contiguous(a.permuted(channelsFirst));
    for (int64_t group = 0; group < g.groups; ++group)
      multiply(part(b, group, filters, perGroup, true), part(gy, group, filters, columns, false),
               at(col, group, perGroup * columns), dtype);
    Tensor dx = allocate(dtype, shapes.output);
    windowKernel(WindowKernel::Col2im, g, dx, col);
    return dx;
  }
  windowKernel(WindowKernel::Im2col, g, col, a);
  if (kind == OpKind::Conv) { // (x, w) -> y
    std::vector<int64_t> yFirst = shapes.output;
    std::swap(yFirst[0], yFirst[1]);
    Tensor y = allocate(dtype, yFirst);
    for (int64_t group = 0; group < g.groups; ++group)
      multiply(part(b, group, filters, perGroup, false), part(col, group, perGroup, columns, false),
               at(y, group, filters * columns), dtype);
    // A view: the elementwise kernel that reads it next (a bias, an activation) moves it back to [n, filters,
    // ...] in the pass it makes anyway.
    return y.permuted(channelsFirst);
  }
  Tensor gy = contiguous(b.permuted(channelsFirst)); // conv_filter_grad: (x, gy) -> dw
  Tensor dw = allocate(dtype, shapes.output);
  for (int64_t group = 0; group < g.groups; ++group)
    multiply(part(gy, group, filters, columns, false), part(col, group, perGroup, columns, true),
             at(dw, group, filters * perGroup), dtype);
  return dw;
}

/// concat (or stack: concat of the inputs with a size-1 axis added) along axis k: each input, with k moved
/// first, made contiguous and copied after the previous one; the result is that buffer viewed with k back
/// in place (a strided view, which every device op reads).
Tensor DeviceLayer::join(const ir::Op &op, std::vector<Tensor> inputs) {
  bool stack = op.kind() == OpKind::Stack;
  size_t rank = inputs[0].rank() + (stack ? 1 : 0);
  size_t axis = normalizeAxis(op.attrs().axes.at(0), rank);
  checkJoinShapes(inputs, op.name(), stack ? inputs[0].rank() : axis);
  if (stack)
    for (Tensor &input : inputs) {
      std::vector<int64_t> shape = input.shape(), strides = input.strides();
      shape.insert(shape.begin() + static_cast<ptrdiff_t>(axis), 1);
      strides.insert(strides.begin() + static_cast<ptrdiff_t>(axis), 0);
      input = input.view(shape, strides, input.offset());
    }
  std::vector<int64_t> perm{static_cast<int64_t>(axis)}; // the buffer's axes: k, then the others in order
  for (size_t d = 0; d < rank; ++d)
    if (d != axis) perm.push_back(static_cast<int64_t>(d));
  std::vector<int64_t> shape = inputs[0].permuted(perm).shape();
  shape[0] = 0;
  for (const Tensor &input : inputs)
    shape[0] += input.shape()[axis];
  Tensor buffer = allocate(inputs[0].dtype(), shape);
  size_t offset = 0;
  for (const Tensor &input : inputs) {
    Tensor part = contiguous(input.permuted(perm));
    size_t bytes = byteSize(part);
    if (bytes > 0) {
      if (trace_) trace_->line("d2d " + std::to_string(bytes));
      copyOnDevice(addressOf(buffer) + offset, addressOf(part), bytes);
    }
    offset += bytes;
  }
  std::vector<int64_t> back(rank); // result axis d is buffer axis back[d]
  for (size_t j = 0; j < rank; ++j)
    back[static_cast<size_t>(perm[j])] = static_cast<int64_t>(j);
  return buffer.permuted(back);
}

/// argmax / argmin as two generated reductions (runtime/ArgReduction.h).
Tensor DeviceLayer::argReduce(const ir::Op &op, Tensor x) {
  const ir::OpAttrs &attrs = op.attrs();
  size_t inputRank = x.rank();
  bool flatten = attrs.axes.empty(); // over the flattened array
  if (flatten) {
    x = contiguous(x);
    x = x.view({x.numElements()}, {1}, x.offset());
  }
  size_t axis = flatten ? 0 : normalizeAxis(attrs.axes.at(0), x.rank());
  int64_t length = x.shape()[axis];
  ir::checkReductionOfElements(op.kind(), length);
  ArgReduction plan = planArgReduction(op, x.dtype(), axis, attrs.keepdims && !flatten);
  Tensor extreme = reduce(plan.extreme, {x}, x.dtype());
  // Each position's index along the axis, broadcast over the other axes.
  Tensor positions = Tensor::empty(ir::DType::I64, {length});
  for (int64_t i = 0; i < length; ++i)
    positions.data<int64_t>()[i] = i;
  std::vector<int64_t> shape(x.rank(), 1), strides(x.rank(), 0);
  shape[axis] = length;
  strides[axis] = 1;
  Tensor index = upload(positions).view(shape, strides, 0);
  Tensor result = reduce(plan.first, {x, extreme, index}, ir::DType::I64);
  if (flatten && attrs.keepdims) // every axis of the input kept, as 1
    result = result.view(std::vector<int64_t>(inputRank, 1), std::vector<int64_t>(inputRank, 0), 0);
  return result;
}

/// matmul with NumPy's semantics (a 1-D left operand is a row, a 1-D right operand a column, leading batch
/// axes broadcast): each batch's matrix product through gemm where the device has it for the dtype, else
/// through the generated matmul kernel (integers, bools, or a GPU without cuBLAS).
Tensor DeviceLayer::matmul(const Tensor &left, const Tensor &right, ir::DType dtype) {
  MatmulPlan plan = planMatmul(left, right);
  const Tensor &a = plan.a, &b = plan.b;
  int64_t n = plan.n, k = plan.k, m = plan.m;
  const std::vector<int64_t> &batch = plan.batch;
  std::vector<int64_t> stridesA = batchStrides(a, batch), stridesB = batchStrides(b, batch);
  std::vector<int64_t> shape = batch;
  shape.insert(shape.end(), {n, m});
  if (k == 0) { // sums of nothing
    return elementwise(fillProgram(dtype, 0), {}, plan.resultShape);
  }
  Tensor out = allocate(dtype, shape);
  Tensor result = out.view(plan.resultShape, Tensor::contiguousStrides(plan.resultShape), 0);
  int64_t matrices = 1;
  for (int64_t size : batch)
    matrices *= size;
  size_t element = ir::dtypeSize(dtype);
  for (int64_t index = 0; index < matrices && n > 0 && m > 0; ++index) {
    int64_t offsetA = a.offset(), offsetB = b.offset();
    for (size_t d = batch.size(), rest = static_cast<size_t>(index); d-- > 0;) {
      auto position = static_cast<int64_t>(rest % static_cast<size_t>(batch[d]));
      rest /= static_cast<size_t>(batch[d]);
      offsetA += position * stridesA[d];
      offsetB += position * stridesB[d];
    }
    Tensor matrixA = a.view({n, k}, {a.strides()[a.rank() - 2], a.strides()[a.rank() - 1]}, offsetA);
    Tensor matrixB = b.view({k, m}, {b.strides()[b.rank() - 2], b.strides()[b.rank() - 1]}, offsetB);
    multiply(matrixA, matrixB, addressOf(out) + static_cast<DeviceAddress>(index * n * m) * element, dtype);
  }
  return result;
}

/// c (n x m, C order, at `c`) = a (n x k) @ b (k x m), k > 0.
void DeviceLayer::multiply(const Tensor &a, const Tensor &b, DeviceAddress c, ir::DType dtype) {
  int64_t n = a.shape()[0], k = a.shape()[1], m = b.shape()[1];
  if (!hasGemm(dtype)) {
    // The generated kernel reads a and b in place, through their strides.
    auto pointer = [](DeviceAddress address) {
      return reinterpret_cast<void *>(static_cast<uintptr_t>(address));
    };
    MatmulKernelLaunch kernel{dtype, matmulGrid(n, m),
                              codegen::MatmulArgs{n, m, k, pointer(addressOf(a)), a.strides()[0],
                                                  a.strides()[1], pointer(addressOf(b)), b.strides()[0],
                                                  b.strides()[1], pointer(c)}};
    issue(codegen::matmulKernelName(dtype), kernel.grid, [&] { launch(kernel); });
    ++generatedMatmuls_;
    return;
  }
  // Each operand read in place when row-major or transposed, else copied to C order first; the copies live
  // until the gemm is issued (the simulated device runs it at once, on memory a freed block would not own).
  auto operand = [this](const Tensor &matrix, DeviceAddress &address, bool &transposed, int64_t &leading) {
    int64_t rows = matrix.shape()[0], cols = matrix.shape()[1];
    int64_t rowStride = matrix.strides()[0], colStride = matrix.strides()[1];
    if ((colStride == 1 || cols == 1) && rowStride >= std::max<int64_t>(1, cols)) {
      address = addressOf(matrix), transposed = false, leading = rowStride;
      return matrix;
    }
    if ((rowStride == 1 || rows == 1) && colStride >= std::max<int64_t>(1, rows)) {
      address = addressOf(matrix), transposed = true, leading = colStride;
      return matrix;
    }
    Tensor copy = contiguous(matrix);
    address = addressOf(copy), transposed = false, leading = std::max<int64_t>(1, cols);
    return copy;
  };
  Gemm product;
  product.dtype = dtype, product.n = n, product.m = m, product.k = k, product.c = c;
  Tensor readA = operand(a, product.a, product.transposeA, product.leadingA);
  Tensor readB = operand(b, product.b, product.transposeB, product.leadingB);
  if (trace_) {
    std::ostringstream line;
    line << "gemm " << ir::dtypeName(dtype) << " n " << n << " m " << m << " k " << k << " ta "
         << product.transposeA << " tb " << product.transposeB << " lda " << product.leadingA << " ldb "
         << product.leadingB;
    trace_->line(line.str());
  }
  gemm(product);
  ++gemms_;
}

} // namespace tg::runtime
