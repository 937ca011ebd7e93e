#include "runtime/cuda/CudaDevice.h"

#include "codegen/Kernel.h"
#include "ir/Assert.h"
#include "ir/ScalarGraph.h"
#include "ir/SourceLoc.h"
#include "runtime/ArgReduction.h"
#include "runtime/FusedLaunch.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"
#include "runtime/cuda/Cublas.h"
#include "runtime/cuda/DeviceAllocator.h"
#include "runtime/cuda/Driver.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>

namespace tg::runtime::cuda {

namespace {

using ir::OpKind;

/// Threads per block of an elementwise launch, and how many blocks per multiprocessor a grid-stride launch
/// needs to keep it busy.
constexpr unsigned kBlockSize = 256, kBlocksPerMultiprocessor = 16;
/// Transfers of at least this size go through pinned staging buffers of this size, two at a time, so that
/// copying one chunk on the host overlaps the DMA of the other.
constexpr size_t kStagingBytes = size_t(4) << 20;

/// What the device's buffers keep alive: the driver, the context and the allocator they return to.
struct Context {
  std::unique_ptr<Driver> driver;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::unique_ptr<DeviceAllocator> allocator;

  ~Context() {
    if (!driver) return;
    if (stream) driver->api().cuStreamSynchronize(stream);
    allocator.reset();
    if (stream) driver->api().cuStreamDestroy(stream);
    if (context) driver->api().cuDevicePrimaryCtxRelease(device);
  }
};

/// A body of one instruction: an elementwise op applied to the node's inputs.
std::shared_ptr<ir::ScalarGraph> singleOpBody(const ir::Node &node) {
  auto body = std::make_shared<ir::ScalarGraph>();
  ir::ScalarInstr instr{node.op().kind(), node.output()->type().dtype, {}, 0};
  for (uint32_t i = 0; i < node.inputs().size(); ++i) {
    body->inputDtypes.push_back(node.input(i)->type().dtype);
    instr.operands.push_back(i);
  }
  body->body.push_back(std::move(instr));
  return body;
}

/// Whether a kernel of `body` can store an error code (an integer pow with a negative exponent).
bool canFail(const ir::ScalarGraph &body) {
  return std::any_of(body.body.begin(), body.body.end(), [](const ir::ScalarInstr &instr) {
    return instr.kind == OpKind::Pow && instr.dtype != ir::DType::F32 && instr.dtype != ir::DType::F64;
  });
}

class CudaDevice : public Device {
public:
  explicit CudaDevice(int ordinal) : context_(std::make_shared<Context>()) {
    context_->driver = Driver::open();
    const Driver &driver = *context_->driver;
    int count = 0;
    TG_CUDA_CHECK(driver, cuDeviceGetCount, &count);
    if (ordinal >= count)
      throw ir::UserError("no CUDA GPU " + std::to_string(ordinal) + ": the driver sees " +
                          std::to_string(count));
    TG_CUDA_CHECK(driver, cuDeviceGet, &context_->device, ordinal);
    CUdevice device = context_->device;
    char name[256] = {};
    TG_CUDA_CHECK(driver, cuDeviceGetName, name, sizeof name - 1, device);
    name_ = name;
    auto attribute = [&](int which) {
      int value = 0;
      TG_CUDA_CHECK(driver, cuDeviceGetAttribute, &value, which, device);
      return value;
    };
    major_ = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    minor_ = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    multiprocessors_ = std::max(1, attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
    TG_CUDA_CHECK(driver, cuDeviceTotalMem, &memory_, device);
    TG_CUDA_CHECK(driver, cuDevicePrimaryCtxRetain, &context_->context, device);
    TG_CUDA_CHECK(driver, cuCtxSetCurrent, context_->context);
    TG_CUDA_CHECK(driver, cuStreamCreate, &context_->stream, CU_STREAM_NON_BLOCKING);
    context_->allocator = std::make_unique<DeviceAllocator>(driver);
    // PTX for this GPU's architecture; LLVM 19 knows up to sm_90, whose PTX newer GPUs compile too.
    int capability = std::min(major_ * 10 + minor_, 90);
    arch_ = "sm_" + std::to_string(capability);
    cublas_ = Cublas::open(context_->stream, cublasMissing_);
  }

  ~CudaDevice() override {
    const Driver &driver = *context_->driver;
    for (Staging &staging : staging_) {
      driver.api().cuMemFreeHost(staging.buffer);
      driver.api().cuEventDestroy(staging.event);
    }
    cublas_.reset();
    for (CUmodule module : modules_)
      driver.api().cuModuleUnload(module);
  }

  std::string describe() const override {
    std::ostringstream text;
    text << "cuda: " << name_ << " (sm_" << major_ << minor_ << ", " << multiprocessors_ << " SMs, "
         << (memory_ >> 30) << " GiB, driver " << context_->driver->version() << " from "
         << context_->driver->library() << ")";
    return text.str();
  }

  Tensor upload(const Tensor &host) override {
    TG_ASSERT(host.memory() == Memory::Host) << "uploading a tensor that is already in device memory";
    Tensor source = host.contiguous();
    Tensor target = allocate(source.dtype(), source.shape());
    copyToDevice(deviceAddress(target), source.rawData(), byteSize(source));
    return target;
  }

  Tensor download(const Tensor &device) override {
    TG_ASSERT(device.memory() == Memory::Cuda) << "downloading a tensor in host memory";
    Tensor source = contiguous(device);
    Tensor target = Tensor::empty(source.dtype(), source.shape());
    copyToHost(target.rawData(), deviceAddress(source), byteSize(source));
    return target;
  }

  Tensor run(const ir::Node &node, const std::vector<Tensor> &arguments) override {
    std::vector<Tensor> inputs;
    for (const Tensor &argument : arguments)
      inputs.push_back(argument.memory() == Memory::Cuda ? argument : upload(argument));
    const ir::Op &op = node.op();
    ir::DType dtype = node.output()->type().dtype;
    switch (op.kind()) {
    case OpKind::Fused:
      return op.attrs().body->reduction ? reduce(op, inputs, dtype) : elementwise(*op.attrs().body, inputs);
    case OpKind::Matmul:
      if (Tensor product = matmul(inputs[0], inputs[1], dtype); product.defined()) return product;
      return staged(node, inputs,
                    "no CUDA kernel for a matmul of " + std::string(ir::dtypeName(dtype)) +
                        " or above two dimensions yet");
    case OpKind::Transpose:
    case OpKind::BroadcastTo:
    case OpKind::Slice: // views: no element is read
      return runOp(op, inputs, {node.output()->type()}).at(0);
    case OpKind::Reshape:
      return runOp(op, {contiguous(inputs[0])}, {node.output()->type()}).at(0);
    case OpKind::ZerosLike:
    case OpKind::OnesLike: { // a program of one immediate, over the input's shape
      ir::ScalarGraph fill;
      fill.inputDtypes = {inputs[0].dtype()};
      fill.body.push_back({OpKind::Full, dtype, {}, op.kind() == OpKind::OnesLike ? 1.0 : 0.0});
      return elementwise(fill, inputs);
    }
    default:
      break;
    }
    if (ir::isScalarOp(op.kind())) return elementwise(*singleOpBody(node), inputs);
    if (ir::isPrologueReduction(op.kind())) {
      ir::OpAttrs attrs = op.attrs();
      auto body = std::make_shared<ir::ScalarGraph>();
      body->inputDtypes = {inputs[0].dtype()};
      body->reduction = op.kind();
      attrs.body = std::move(body);
      return reduce(ir::Op(OpKind::Fused, std::move(attrs), ir::Place::Device), inputs, dtype);
    }
    if (op.kind() == OpKind::Argmax || op.kind() == OpKind::Argmin) return argReduce(op, inputs[0]);
    if (op.kind() == OpKind::Concat || op.kind() == OpKind::Stack) return join(op, inputs);
    return staged(node, inputs, "no CUDA kernel for " + std::string(op.name()) + " yet");
  }

  void synchronize() override { TG_CUDA_CHECK(driver(), cuStreamSynchronize, context_->stream); }

  std::string report() const override {
    std::ostringstream text;
    DeviceAllocator::Stats memory = context_->allocator->stats();
    text << "cuda: " << launches_ << " kernel launches, " << modules_.size() << " modules loaded, " << gemms_
         << " cuBLAS gemms" << (cublas_ ? "" : " (" + cublasMissing_ + ")") << ", " << generatedMatmuls_
         << " generated matmuls; device memory: " << memory.driverAllocations << " cuMemAlloc, "
         << memory.reused << " reused, peak " << (memory.peakBytesInUse >> 10) << " KiB";
    if (!modules_.empty()) {
      double kernels = static_cast<double>(modules_.size());
      char line[200];
      std::snprintf(
          line, sizeof line,
          "\ncuda: per kernel, %.2f ms to make its PTX (compiled, or read from the kernel cache) and %.2f "
          "ms to load it",
          1e3 * ptxSeconds_ / kernels, 1e3 * loadSeconds_ / kernels);
      text << line;
    }
    for (const auto &[op, why] : stagedReasons_)
      text << "\ncuda: " << stagedCounts_.at(op) << " " << op
           << " node(s) ran on the host through staging: " << why;
    return text.str();
  }

private:
  const Driver &driver() const { return *context_->driver; }

  static size_t byteSize(const Tensor &tensor) {
    return static_cast<size_t>(tensor.numElements()) * ir::dtypeSize(tensor.dtype());
  }
  static CUdeviceptr deviceAddress(const Tensor &tensor) {
    return reinterpret_cast<CUdeviceptr>(tensor.rawData());
  }

  /// A C-contiguous tensor in device memory, returned to the allocator when its last view goes.
  Tensor allocate(ir::DType dtype, std::vector<int64_t> shape) {
    int64_t bytes = static_cast<int64_t>(ir::dtypeSize(dtype));
    for (int64_t size : shape)
      if (__builtin_mul_overflow(bytes, size, &bytes))
        throw ir::UserError("out of device memory: a tensor of this shape does not fit in memory");
    CUdeviceptr block = context_->allocator->allocate(static_cast<size_t>(bytes));
    std::shared_ptr<Context> context = context_;
    std::shared_ptr<std::byte> buffer(reinterpret_cast<std::byte *>(block), [context](std::byte *address) {
      context->allocator->release(reinterpret_cast<CUdeviceptr>(address));
    });
    return Tensor::onDevice(std::move(buffer), dtype, std::move(shape));
  }

  /// The device tensor when C-contiguous, else a contiguous copy made by a generated kernel.
  Tensor contiguous(const Tensor &tensor) {
    if (tensor.isContiguous()) return tensor;
    ir::ScalarGraph copy;
    copy.inputDtypes = {tensor.dtype()};
    copy.body.push_back({OpKind::Cast, tensor.dtype(), {0}, 0});
    return elementwise(copy, {tensor});
  }

  /// The function of the kernel for `spec`, its PTX compiled (or read from the kernel cache) and loaded once.
  CUfunction function(const codegen::KernelSpec &spec) {
    return function(codegen::kernelName(spec), [&] { return codegen::emitPtx(spec, arch_); });
  }

  /// The kernel `name`, loaded once from the PTX that `ptx` makes.
  CUfunction function(const std::string &name, const std::function<std::string()> &ptx) {
    if (auto found = functions_.find(name); found != functions_.end()) return found->second;
    auto start = std::chrono::steady_clock::now();
    std::string text = ptx();
    auto generated = std::chrono::steady_clock::now();
    char errorLog[8192] = {}, infoLog[8192] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {errorLog, reinterpret_cast<void *>(sizeof errorLog - 1), infoLog,
                      reinterpret_cast<void *>(sizeof infoLog - 1)};
    CUmodule module = nullptr;
    CUresult loaded = driver().api().cuModuleLoadDataEx(&module, text.c_str(), 4, options, values);
    if (loaded != CUDA_SUCCESS)
      throw ir::UserError("cuModuleLoadDataEx failed for kernel " + name + " (" + arch_ + "): " +
                          driver().describe(loaded) + (errorLog[0] ? ":\n" + std::string(errorLog) : ""));
    modules_.push_back(module);
    CUfunction function = nullptr;
    TG_CUDA_CHECK(driver(), cuModuleGetFunction, &function, module, name.c_str());
    functions_[name] = function;
    ptxSeconds_ += std::chrono::duration<double>(generated - start).count();
    loadSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - generated).count();
    return function;
  }

  /// Copies the launch's shape, strides and input pointers into device memory, with a zeroed error flag
  /// after them; returns the block (its address) and the offsets of each part.
  struct PackedArgs {
    Tensor block;
    CUdeviceptr shape, strides, inputs, errorFlag;
  };
  PackedArgs pack(const codegen::KernelArgs &args, size_t numInputs, bool strided) {
    size_t rank = static_cast<size_t>(args.rank), strideCount = strided ? numInputs * rank : 0;
    std::vector<int64_t> words;
    words.insert(words.end(), args.shape, args.shape + rank);
    words.insert(words.end(), args.strides, args.strides + strideCount);
    for (size_t i = 0; i < numInputs; ++i)
      words.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(args.inputs[i])));
    words.push_back(0); // the error flag (an int32 in the low half)
    Tensor block = allocate(ir::DType::I64, {static_cast<int64_t>(words.size())});
    CUdeviceptr base = deviceAddress(block);
    copyToDevice(base, words.data(), words.size() * sizeof(int64_t));
    return {block, base, base + rank * 8, base + (rank + strideCount) * 8,
            base + (rank + strideCount + numInputs) * 8};
  }

  void launch(CUfunction function, unsigned blocks, unsigned threads, std::vector<void *> parameters,
              unsigned blocksY = 1, unsigned threadsY = 1) {
    TG_CUDA_CHECK(driver(), cuLaunchKernel, function, blocks, blocksY, 1, threads, threadsY, 1, 0,
                  context_->stream, parameters.data(), nullptr);
    ++launches_;
  }

  /// Reads a launch's error flag back (waiting for it) and throws the kernel's error.
  void checkErrorFlag(CUdeviceptr flag) {
    int32_t code = 0;
    TG_CUDA_CHECK(driver(), cuMemcpyDtoHAsync, &code, flag, sizeof code, context_->stream);
    synchronize();
    if (code != codegen::kKernelOk) throw ir::UserError(codegen::kernelErrorMessage(code));
  }

  Tensor elementwise(const ir::ScalarGraph &body, const std::vector<Tensor> &inputs) {
    Launch bound(body, inputs, [this](ir::DType dtype, std::vector<int64_t> shape) {
      return allocate(dtype, std::move(shape));
    });
    int64_t count = bound.output.numElements();
    if (count == 0) return bound.output;
    bool strided = bound.layout == codegen::Layout::Strided;
    CUfunction kernel = function({&body, bound.layout});
    PackedArgs packed = pack(bound.args, inputs.size(), strided);
    int64_t rank = bound.args.rank;
    CUdeviceptr output = deviceAddress(bound.output), strides = strided ? packed.strides : 0;
    int64_t blocks = std::min<int64_t>((count + kBlockSize - 1) / kBlockSize,
                                       int64_t(multiprocessors_) * kBlocksPerMultiprocessor);
    launch(kernel, static_cast<unsigned>(blocks), kBlockSize,
           {&count, &rank, &packed.shape, &packed.inputs, &strides, &output, &packed.errorFlag});
    if (canFail(body)) checkErrorFlag(packed.errorFlag);
    return bound.output;
  }

  Tensor reduce(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype) {
    ReductionLaunch bound(op, inputs, dtype, [this](ir::DType type, std::vector<int64_t> shape) {
      return allocate(type, std::move(shape));
    });
    int64_t count = bound.output.numElements();
    if (count == 0) return bound.output;
    const ir::ScalarGraph &body = *op.attrs().body;
    CUfunction kernel = function({&body, bound.layout});
    PackedArgs packed = pack(bound.args, inputs.size(), true);
    int64_t rank = bound.args.rank, reducedRank = bound.args.reducedRank;
    CUdeviceptr output = deviceAddress(bound.output);
    // One block per output, in whole warps, as many threads as the reduced elements need (up to 256).
    int64_t threads = std::clamp<int64_t>((bound.reducedCount + 31) / 32 * 32, 32, 256);
    int64_t blocks = std::min<int64_t>(count, int64_t(multiprocessors_) * 64);
    launch(kernel, static_cast<unsigned>(blocks), static_cast<unsigned>(threads),
           {&count, &rank, &packed.shape, &packed.inputs, &packed.strides, &output, &packed.errorFlag,
            &reducedRank});
    if (canFail(body)) checkErrorFlag(packed.errorFlag);
    return bound.output;
  }

  /// concat (or stack: concat of the inputs with a size-1 axis added) along axis k: each input, with k moved
  /// first, made contiguous and copied after the previous one; the result is that buffer viewed with k back
  /// in place (a strided view, which every device op reads).
  Tensor join(const ir::Op &op, std::vector<Tensor> inputs) {
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
      if (bytes > 0)
        TG_CUDA_CHECK(driver(), cuMemcpyDtoDAsync, deviceAddress(buffer) + offset, deviceAddress(part), bytes,
                      context_->stream);
      offset += bytes;
    }
    std::vector<int64_t> back(rank); // result axis d is buffer axis back[d]
    for (size_t j = 0; j < rank; ++j)
      back[static_cast<size_t>(perm[j])] = static_cast<int64_t>(j);
    return buffer.permuted(back);
  }

  /// argmax / argmin as two generated reductions (runtime/ArgReduction.h).
  Tensor argReduce(const ir::Op &op, Tensor x) {
    const ir::OpAttrs &attrs = op.attrs();
    size_t inputRank = x.rank();
    bool flatten = attrs.axes.empty(); // over the flattened array
    if (flatten) {
      x = contiguous(x);
      x = x.view({x.numElements()}, {1}, x.offset());
    }
    size_t axis = flatten ? 0 : normalizeAxis(attrs.axes.at(0), x.rank());
    int64_t length = x.shape()[axis];
    if (length == 0)
      throw ir::UserError(std::string("zero-size array to reduction operation ") + op.name() +
                          " which has no identity");
    ArgReduction plan = planArgReduction(op, x.dtype(), axis, length, attrs.keepdims && !flatten);
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

  /// Through cuBLAS, or the generated matmul kernel without it: f32 or f64 operands of rank 1 or 2. An
  /// undefined tensor when neither can.
  Tensor matmul(const Tensor &left, const Tensor &right, ir::DType dtype) {
    bool floating = dtype == ir::DType::F32 || dtype == ir::DType::F64;
    if (!floating || left.rank() > 2 || right.rank() > 2) return {};
    auto asMatrix = [](const Tensor &x, bool isLeft) {
      if (x.rank() == 2) return x;
      int64_t size = x.shape()[0], stride = x.strides()[0];
      return isLeft ? x.view({1, size}, {size * stride, stride}, x.offset())
                    : x.view({size, 1}, {stride, 1}, x.offset());
    };
    Tensor a = asMatrix(left, true), b = asMatrix(right, false);
    int64_t n = a.shape()[0], k = a.shape()[1], m = b.shape()[1];
    if (b.shape()[0] != k)
      throw ir::UserError("matmul: inner dimensions do not match: " + shapeTuple(left.shape()) + " @ " +
                          shapeTuple(right.shape()));
    Tensor out = allocate(dtype, {n, m});
    std::vector<int64_t> resultShape;
    if (left.rank() > 1) resultShape.push_back(n);
    if (right.rank() > 1) resultShape.push_back(m);
    Tensor result = out.view(resultShape, Tensor::contiguousStrides(resultShape), 0);
    if (n == 0 || m == 0) return result;
    if (k == 0) {
      TG_CUDA_CHECK(driver(), cuMemsetD8Async, deviceAddress(out), 0, byteSize(out), context_->stream);
      return result;
    }
    if (!cublas_) {
      generatedMatmul(a, b, out);
      return result;
    }
    cublas_->gemm(dtype, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), operand(a),
                  operand(b), deviceAddress(out));
    ++gemms_;
    return result;
  }

  /// out (n x m) = a @ b by the generated kernel (codegen's matmul section), reading a and b in place.
  void generatedMatmul(const Tensor &a, const Tensor &b, const Tensor &out) {
    ir::DType dtype = out.dtype();
    CUfunction kernel =
        function(codegen::matmulKernelName(dtype), [&] { return codegen::emitMatmulPtx(dtype, arch_); });
    int64_t n = a.shape()[0], k = a.shape()[1], m = b.shape()[1];
    int64_t aRow = a.strides()[0], aCol = a.strides()[1], bRow = b.strides()[0], bCol = b.strides()[1];
    CUdeviceptr aData = deviceAddress(a), bData = deviceAddress(b), cData = deviceAddress(out);
    auto blocks = [](int64_t size) {
      return static_cast<unsigned>((size + codegen::kMatmulTile - 1) / codegen::kMatmulTile);
    };
    launch(kernel, blocks(m), codegen::kMatmulThreads,
           {&n, &m, &k, &aData, &aRow, &aCol, &bData, &bRow, &bCol, &cData}, blocks(n),
           codegen::kMatmulThreads);
    ++generatedMatmuls_;
  }

  /// A matrix as cuBLAS reads it: in place when row-major or transposed, else a contiguous copy.
  Cublas::Operand operand(const Tensor &matrix) {
    int64_t rows = matrix.shape()[0], cols = matrix.shape()[1];
    int64_t rowStride = matrix.strides()[0], colStride = matrix.strides()[1];
    if ((colStride == 1 || cols == 1) && rowStride >= std::max<int64_t>(1, cols))
      return {deviceAddress(matrix), false, static_cast<int>(rowStride)};
    if ((rowStride == 1 || rows == 1) && colStride >= std::max<int64_t>(1, rows))
      return {deviceAddress(matrix), true, static_cast<int>(colStride)};
    // The copy's block may go back to the allocator before the gemm runs: it is reused only by work queued
    // later on the same stream.
    Tensor copy = contiguous(matrix);
    return {deviceAddress(copy), false, static_cast<int>(std::max<int64_t>(1, cols))};
  }

  /// Runs the node's CPU kernel on host copies of its inputs and uploads the result.
  Tensor staged(const ir::Node &node, const std::vector<Tensor> &inputs, const std::string &why) {
    std::vector<Tensor> host;
    for (const Tensor &input : inputs)
      host.push_back(download(input));
    std::string name = node.op().name();
    ++stagedCounts_[name];
    stagedReasons_[name] = why;
    return upload(runOp(node.op(), host, {node.output()->type()}).at(0));
  }

  /// A pinned host buffer of kStagingBytes and the event that says when the copy using it is done.
  struct Staging {
    void *buffer = nullptr;
    CUevent event = nullptr;
    bool pending = false;
  };
  /// Two staging buffers, or none when pinned memory cannot be had (copies then go from pageable memory).
  Staging *stagingBuffers() {
    if (stagingTried_) return staging_.empty() ? nullptr : staging_.data();
    stagingTried_ = true;
    for (int i = 0; i < 2; ++i) {
      Staging staging;
      if (driver().api().cuMemHostAlloc(&staging.buffer, kStagingBytes, 0) != CUDA_SUCCESS ||
          driver().api().cuEventCreate(&staging.event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
        if (staging.buffer) driver().api().cuMemFreeHost(staging.buffer);
        break;
      }
      staging_.push_back(staging);
    }
    if (staging_.size() < 2) {
      for (Staging &staging : staging_) {
        driver().api().cuMemFreeHost(staging.buffer);
        driver().api().cuEventDestroy(staging.event);
      }
      staging_.clear();
      return nullptr;
    }
    return staging_.data();
  }

  void copyToDevice(CUdeviceptr target, const void *source, size_t bytes) {
    if (bytes == 0) return;
    Staging *staging = bytes >= kStagingBytes ? stagingBuffers() : nullptr;
    if (!staging) { // small, or no pinned memory: the driver stages pageable memory itself
      TG_CUDA_CHECK(driver(), cuMemcpyHtoDAsync, target, source, bytes, context_->stream);
      return;
    }
    for (size_t done = 0, chunk = 0; done < bytes; done += kStagingBytes, ++chunk) {
      Staging &buffer = staging[chunk % 2];
      if (buffer.pending) TG_CUDA_CHECK(driver(), cuEventSynchronize, buffer.event);
      size_t size = std::min(kStagingBytes, bytes - done);
      std::memcpy(buffer.buffer, static_cast<const std::byte *>(source) + done, size);
      TG_CUDA_CHECK(driver(), cuMemcpyHtoDAsync, target + done, buffer.buffer, size, context_->stream);
      TG_CUDA_CHECK(driver(), cuEventRecord, buffer.event, context_->stream);
      buffer.pending = true;
    }
  }

  /// Waits for the work that computes `source`, then copies it.
  void copyToHost(void *target, CUdeviceptr source, size_t bytes) {
    if (bytes == 0) return;
    Staging *staging = bytes >= kStagingBytes ? stagingBuffers() : nullptr;
    if (!staging) {
      TG_CUDA_CHECK(driver(), cuMemcpyDtoHAsync, target, source, bytes, context_->stream);
      synchronize();
      return;
    }
    size_t chunks = (bytes + kStagingBytes - 1) / kStagingBytes;
    auto issue = [&](size_t chunk) {
      Staging &buffer = staging[chunk % 2];
      size_t offset = chunk * kStagingBytes, size = std::min(kStagingBytes, bytes - offset);
      TG_CUDA_CHECK(driver(), cuMemcpyDtoHAsync, buffer.buffer, source + offset, size, context_->stream);
      TG_CUDA_CHECK(driver(), cuEventRecord, buffer.event, context_->stream);
    };
    issue(0);
    for (size_t chunk = 0; chunk < chunks; ++chunk) {
      if (chunk + 1 < chunks) issue(chunk + 1); // its buffer's last chunk was copied out below already
      Staging &buffer = staging[chunk % 2];
      TG_CUDA_CHECK(driver(), cuEventSynchronize, buffer.event);
      size_t offset = chunk * kStagingBytes;
      std::memcpy(static_cast<std::byte *>(target) + offset, buffer.buffer,
                  std::min(kStagingBytes, bytes - offset));
    }
    for (Staging &buffer : staging_)
      buffer.pending = false; // everything queued before the last chunk has run
  }

  std::shared_ptr<Context> context_;
  std::string name_, arch_;
  int major_ = 0, minor_ = 0, multiprocessors_ = 1;
  size_t memory_ = 0;
  std::unique_ptr<Cublas> cublas_;
  std::string cublasMissing_; // why there is no cuBLAS
  std::map<std::string, CUfunction> functions_;
  std::vector<CUmodule> modules_;
  std::vector<Staging> staging_;
  bool stagingTried_ = false;
  size_t launches_ = 0, gemms_ = 0, generatedMatmuls_ = 0;
  double ptxSeconds_ = 0, loadSeconds_ = 0; // making and loading the modules so far
  std::map<std::string, size_t> stagedCounts_;
  std::map<std::string, std::string> stagedReasons_;
};

} // namespace

std::unique_ptr<Device> openCudaDevice(int ordinal) {
  return std::make_unique<CudaDevice>(ordinal);
}

} // namespace tg::runtime::cuda
