// bench/gpu: tgc's CUDA device on a GPU, one table: fused elementwise kernels and reductions (GB/s against
// the card's peak), matmul through cuBLAS and through tgc's generated kernel (TFLOP/s), each case's first run
// (compile and module load included) and each result against the CPU's; then the device's report, with the
// PTX and module-load time per kernel. Device work is timed with the inputs already in device memory and a
// synchronize after each repetition. The generated kernel's row runs on a second device opened without cuBLAS
// (TGC_CUBLAS=none).
//
//   build/bench/gpu [--repeat 20]          (bench/gpu.sh runs it, from a build or from a bundle)
#include "bench/GraphBuilders.h"
#include "frontend/Diagnostics.h"
#include "frontend/GraphBuilder.h"
#include "opt/Pipeline.h"
#include "runtime/ConstantEvaluator.h"
#include "runtime/Kernels.h"
#include "runtime/Session.h"
#include "runtime/cuda/CudaDevice.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>

namespace {

using namespace tg;
using Clock = std::chrono::steady_clock;

struct Case {
  const char *name;
  const char *script;
  std::vector<std::vector<int64_t>> inputs;
  double bytes;               // moved at least per run (inputs read, output written); 0 for matmul
  double flops;               // matmul only
  bool withoutCublas = false; // run on the device without cuBLAS: matmul by the generated kernel
};

constexpr int64_t kN = 64 << 20; // 64M floats: 256 MiB an operand, far beyond any cache

std::vector<Case> cases() {
  double n = kN * 4.0;
  return {
      {"a*b+c",
       "input a : f32[n]\ninput b : f32[n]\ninput c : f32[n]\nlet r = a * b + c\noutput r\n",
       {{kN}, {kN}, {kN}},
       4 * n,
       0},
      {"exp(-x*x/2)*0.3989+y",
       "input x : f32[n]\ninput y : f32[n]\nlet r = exp(-x * x / 2.0) * 0.3989 + y\noutput r\n",
       {{kN}, {kN}},
       3 * n,
       0},
      {"tanh(a)*sigmoid(b)+log1p(c*c)-sqrt(abs(a-b))",
       "input a : f32[n]\ninput b : f32[n]\ninput c : f32[n]\n"
       "let r = tanh(a) * sigmoid(b) + log1p(c * c) - sqrt(abs(a - b))\noutput r\n",
       {{kN}, {kN}, {kN}},
       4 * n,
       0},
      {"relu(M+v) 8192x8192",
       "import nn\ninput M : f32[8192, 8192]\ninput v : f32[8192]\nlet r = nn.relu(M + v)\noutput r\n",
       {{8192, 8192}, {8192}},
       2 * n,
       0},
      {"sum(exp(x),axis=1) 8192x8192",
       "input x : f32[8192, 8192]\nlet r = sum(exp(x), axis=1)\noutput r\n",
       {{8192, 8192}},
       n,
       0},
      {"softmax rows 16384x4096",
       "import nn\ninput x : f32[16384, 4096]\nlet r = nn.softmax(x, 1)\noutput r\n",
       {{16384, 4096}},
       2 * n,
       0},
      // An embedding lookup and its gradient: 1M rows of a 100000 x 128 table, the indices made from a uniform
      // input (the index kernels' offsets, then the gather or the atomic scatter-add).
      {"gather E[idx] 100000x128, 1M rows",
       "input E : f32[100000, 128]\ninput u : f32[1048576]\nlet idx = i64((u + 1.0) * 49999.0)\n"
       "let r = E[idx]\noutput r\n",
       {{100000, 128}, {1 << 20}},
       2.0 * (1 << 20) * 128 * 4 + (1 << 20) * 4.0,
       0},
      {"scatter-add into 100000x128, 1M rows",
       "input E : f32[100000, 128]\ninput u : f32[1048576]\ninput G : f32[1048576, 128]\n"
       "let idx = i64((u + 1.0) * 49999.0)\nlet r = inc_subtensor(zeros_like(E)[idx], G)\noutput r\n",
       {{100000, 128}, {1 << 20}, {1 << 20, 128}},
       2.0 * (1 << 20) * 128 * 4 + 100000 * 128 * 4.0 + (1 << 20) * 4.0,
       0},
      {"matmul 4096^3 f32 (cuBLAS)",
       "input a : f32[4096, 4096]\ninput b : f32[4096, 4096]\nlet r = a @ b\noutput r\n",
       {{4096, 4096}, {4096, 4096}},
       0,
       2.0 * 4096 * 4096 * 4096},
      {"matmul 4096^3 f32 (generated kernel)",
       "input a : f32[4096, 4096]\ninput b : f32[4096, 4096]\nlet r = a @ b\noutput r\n",
       {{4096, 4096}, {4096, 4096}},
       0,
       2.0 * 4096 * 4096 * 4096,
       true},
  };
}

runtime::Tensor randomTensor(const std::vector<int64_t> &shape, uint32_t seed) {
  runtime::Tensor tensor = runtime::Tensor::empty(ir::DType::F32, shape);
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.data<float>()[i] = uniform(random);
  return tensor;
}

std::unique_ptr<ir::Program> compile(const char *script, bool device) {
  auto path = std::filesystem::temp_directory_path() / "tgc_bench_gpu.tg";
  std::ofstream(path) << script;
  frontend::DiagnosticEngine diags(std::cerr);
  std::unique_ptr<ir::Program> program = frontend::compileScript(path.string(), diags);
  std::filesystem::remove(path);
  if (!program) std::exit(1);
  opt::OptimizerOptions options;
  options.evaluate = runtime::evaluateConstant;
  options.device = device;
  opt::optimize(*program, options);
  return program;
}

/// The GPU opened with cuBLAS turned off (Cublas.h), so that matmul runs tgc's generated kernel.
std::unique_ptr<runtime::Device> openWithoutCublas() {
  const char *given = std::getenv("TGC_CUBLAS");
  std::string saved = given ? given : "";
  setenv("TGC_CUBLAS", "none", 1);
  std::unique_ptr<runtime::Device> device = runtime::cuda::openCudaDevice();
  if (given)
    setenv("TGC_CUBLAS", saved.c_str(), 1);
  else
    unsetenv("TGC_CUBLAS");
  return device;
}

/// The largest relative difference, scaled by the largest magnitude of `expected`.
double relativeError(const runtime::Tensor &got, const runtime::Tensor &expected) {
  ir::TensorData a = got.toData(), b = expected.toData();
  double worst = 0, scale = 1e-30;
  for (int64_t i = 0; i < b.numElements(); ++i)
    scale = std::max(scale, std::abs(b.get(i)));
  for (int64_t i = 0; i < b.numElements(); ++i)
    worst = std::max(worst, std::abs(a.get(i) - b.get(i)));
  return worst / scale;
}

/// Runs one case on `gpu` and prints its row of the table; throws ir::UserError when the device fails it.
void runCase(const Case &benchCase, runtime::Device &gpu, int repeat, double peak) {
  std::unique_ptr<ir::Program> onDevice = compile(benchCase.script, true);
  std::unique_ptr<ir::Program> onHost = compile(benchCase.script, false);
  const ir::Graph &graph = onDevice->graph;
  std::vector<runtime::Tensor> hostInputs;
  for (size_t i = 0; i < benchCase.inputs.size(); ++i)
    hostInputs.push_back(randomTensor(benchCase.inputs[i], 7 + static_cast<uint32_t>(i)));
  // Inputs go to the device once; then only the device nodes run, in order.
  std::map<const ir::Value *, runtime::Tensor> values;
  for (size_t i = 0; i < graph.inputs().size(); ++i)
    values[graph.inputs()[i]] = hostInputs[i];
  size_t kernels = 0;
  for (const ir::Node *node : graph.toposort())
    if (node->op().kind() == ir::OpKind::ToDevice)
      values[node->output()] = gpu.upload(values[node->input(0)]);
    else if (node->op().place() == ir::Place::Device)
      ++kernels;
  const ir::Value *result = nullptr;
  auto runDevice = [&] {
    for (const ir::Node *node : graph.toposort()) {
      if (node->op().kind() == ir::OpKind::ToDevice) continue;
      if (node->op().kind() == ir::OpKind::ToHost) {
        result = node->input(0);
        continue;
      }
      std::vector<runtime::Tensor> arguments;
      for (const ir::Value *input : node->inputs())
        arguments.push_back(input->isConstant() ? runtime::Tensor::fromData(input->constant())
                                                : values[input]);
      values[node->output()] = gpu.run(*node, arguments);
    }
    gpu.synchronize();
  };
  auto start = Clock::now();
  runDevice(); // compiles (or reads from the kernel cache) and loads every module
  double first = std::chrono::duration<double>(Clock::now() - start).count();
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    start = Clock::now();
    runDevice();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  runtime::Session cpu(*onHost);
  std::map<std::string, runtime::Tensor> named;
  for (size_t i = 0; i < onHost->inputs.size(); ++i)
    named[onHost->inputs[i].name] = hostInputs[i];
  runtime::Tensor expected = cpu.step(named).at(0);
  double error = result ? relativeError(gpu.download(values[result]), expected) : -1;
  double rate = benchCase.flops > 0 ? benchCase.flops / best / 1e12 : benchCase.bytes / best / 1e9;
  double share = benchCase.flops > 0 || peak == 0 ? 0 : 100 * benchCase.bytes / best / peak;
  std::printf("%-46s %10.3f %12.1f %10.1f %12.1f %12zu %12.2e\n", benchCase.name, best * 1e3, rate, share,
              first * 1e3, kernels, error);
}

} // namespace

int main(int argc, char **argv) {
  int repeat = 20;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
  std::unique_ptr<runtime::Device> device, withoutCublas;
  try {
    device = runtime::cuda::openCudaDevice();
    withoutCublas = openWithoutCublas();
  } catch (const ir::UserError &error) {
    std::fprintf(stderr, "bench/gpu: %s\n", error.message.c_str());
    return 1;
  }
  std::printf("%s\n", device->describe().c_str());
  double peak = 0; // bytes/s, from the driver's attributes (bench/gpu.sh passes them in when it knows)
  if (const char *given = std::getenv("TGC_GPU_PEAK_GBS")) peak = std::atof(given) * 1e9;
  std::printf("%-46s %10s %12s %10s %12s %12s %12s\n", "case", "ms", "GB/s|TFLOP/s", "% peak", "first run ms",
              "kernels", "rel. error");
  int failed = 0;
  for (const Case &benchCase : cases()) {
    try {
      runCase(benchCase, benchCase.withoutCublas ? *withoutCublas : *device, repeat, peak);
    } catch (const ir::UserError &error) { // the other rows are still worth having
      std::printf("%-46s error: %s\n", benchCase.name, error.message.c_str());
      ++failed;
    }
    std::fflush(stdout);
  }
  std::printf("%s\n", device->report().c_str());
  std::printf("without cuBLAS: %s\n", withoutCublas->report().c_str());
  return failed ? 1 : 0;
}
