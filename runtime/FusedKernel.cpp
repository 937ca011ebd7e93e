// Fused nodes on the CPU runtime. A host fused node runs its generated kernel (codegen's host JIT), split
// across threads; a device fused node on the simulated device runs the device kernel's code compiled for the
// host, block by block over a simulated grid, so that the index math that goes into the PTX is what runs.
// A reduction with a prologue runs its program as a generated elementwise kernel, then the CPU reduction
// kernel over the result (one round trip through memory more than a single generated reduction kernel would
// make). evaluateFusedByKernels, the program run op by op by the CPU kernels, is the reference the generated
// kernels are tested against.
#include "codegen/Kernel.h"
#include "ir/ScalarGraph.h"
#include "ir/SourceLoc.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace tg::runtime {

namespace {

/// Elements below which a host kernel runs on the calling thread alone (a thread costs more than it saves).
constexpr int64_t kElementsPerThread = 1 << 16;
/// The simulated device's launch shape: what the CUDA runtime will pick for a 1-D elementwise launch.
constexpr int64_t kSimBlockSize = 256, kSimMaxBlocks = 4096;

/// A fused node's operands bound for one call: the output, strides, pointers and the layout they allow.
struct Launch {
  Tensor output;
  std::vector<int64_t> shape, strides;
  std::vector<const void *> inputs;
  codegen::Layout layout = codegen::Layout::Contiguous;
  codegen::KernelArgs args{};

  Launch(const ir::ScalarGraph &body, const std::vector<Tensor> &operands) {
    for (const Tensor &input : operands)
      shape = broadcastShapes(shape, input.shape());
    output = Tensor::empty(body.resultDtype(), shape);
    for (const Tensor &input : operands) {
      inputs.push_back(input.rawData());
      if (input.shape() != shape || !input.isContiguous()) layout = codegen::Layout::Strided;
    }
    if (layout == codegen::Layout::Strided)
      for (const Tensor &input : operands) {
        std::vector<int64_t> along = broadcastStrides(input, shape);
        strides.insert(strides.end(), along.begin(), along.end());
      }
    args = {static_cast<int64_t>(shape.size()), shape.data(), inputs.data(), strides.data(),
            output.rawData()};
  }
};

std::atomic<int> configuredThreads{0}; // 0: the machine's cores

void check(int32_t code) {
  if (code != codegen::kKernelOk) throw ir::UserError(codegen::kernelErrorMessage(code));
}

Tensor runHost(const ir::ScalarGraph &body, const std::vector<Tensor> &operands) {
  Launch launch(body, operands);
  codegen::HostKernel kernel = codegen::compileHostKernel({&body, launch.layout});
  int64_t count = launch.output.numElements();
  int64_t threads = std::clamp<int64_t>(count / kElementsPerThread, 1, hostThreads());
  if (threads <= 1) {
    check(kernel(&launch.args, 0, count));
    return launch.output;
  }
  std::vector<std::thread> workers;
  std::vector<int32_t> codes(static_cast<size_t>(threads), codegen::kKernelOk);
  for (int64_t t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      codes[static_cast<size_t>(t)] = kernel(&launch.args, count * t / threads, count * (t + 1) / threads);
    });
  for (std::thread &worker : workers)
    worker.join();
  for (int32_t code : codes)
    check(code);
  return launch.output;
}

Tensor runSimulatedDevice(const ir::ScalarGraph &body, const std::vector<Tensor> &operands) {
  Launch launch(body, operands);
  codegen::SimDeviceKernel kernel = codegen::compileSimDeviceKernel({&body, launch.layout});
  int64_t count = launch.output.numElements();
  int64_t blocks = std::clamp<int64_t>((count + kSimBlockSize - 1) / kSimBlockSize, 1, kSimMaxBlocks);
  for (int64_t block = 0; block < blocks; ++block)
    check(kernel(&launch.args, count, block, kSimBlockSize, blocks));
  return launch.output;
}

} // namespace

void setHostThreads(int threads) {
  configuredThreads = std::max(threads, 0);
}

int hostThreads() {
  int threads = configuredThreads;
  return threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

Tensor evaluateFusedByKernels(const ir::Op &fused, const std::vector<Tensor> &inputs, ir::DType dtype) {
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
    ir::OpAttrs attrs;
    attrs.dtype = instr.dtype;
    ir::TensorType type{instr.dtype, {}, ir::Place::Host};
    values.push_back(runOp(ir::Op(instr.kind, attrs), operands, {type})[0]);
  }
  // The result has the broadcast shape of all inputs, even where the program's last value reads fewer.
  Tensor result = values.back();
  std::vector<int64_t> shape = result.shape();
  for (const Tensor &input : inputs)
    shape = broadcastShapes(shape, input.shape());
  if (shape != result.shape()) {
    Tensor broadcast = Tensor::empty(result.dtype(), shape);
    broadcast.copyFrom(result.view(shape, broadcastStrides(result, shape), result.offset()));
    result = broadcast;
  }
  if (!body.reduction) return result;
  return reductionKernel(ir::Op(*body.reduction, fused.attrs()), result, dtype);
}

Tensor fusedKernel(const ir::Op &op, const std::vector<Tensor> &inputs, ir::DType dtype) {
  const ir::ScalarGraph &body = *op.attrs().body;
  auto run = [&](const ir::ScalarGraph &program) {
    return op.place() == ir::Place::Device ? runSimulatedDevice(program, inputs) : runHost(program, inputs);
  };
  if (!body.reduction) return run(body);
  ir::ScalarGraph prologue = body;
  prologue.reduction.reset();
  return reductionKernel(ir::Op(*body.reduction, op.attrs()), run(prologue), dtype);
}

} // namespace tg::runtime
