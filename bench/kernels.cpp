// bench/kernels: tgc's host kernels on the benchmark expressions of the fusion issue, float32, with 1 and 2
// threads, next to a STREAM triad probe run the same way; prints one JSON object per line for
// bench/kernels.py, which times NumPy, numexpr and PyTorch on the same expressions and prints the table.
//
//   build/bench/kernels [--repeat 5] [--threads 1,2] [--cases a*b+c,...]
#include "runtime/Kernels.h"

#include "bench/GraphBuilders.h"
#include "codegen/Kernel.h"
#include "frontend/GraphBuilder.h"
#include "ir/ScalarGraph.h"
#include "opt/Pipeline.h"
#include "runtime/ConstantEvaluator.h"
#include "runtime/Session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

namespace {

using namespace tg;
using Clock = std::chrono::steady_clock;

struct Case {
  const char *name;
  const char *script;                       // the expression as a tgc script
  std::vector<std::vector<int64_t>> inputs; // shapes of a, b, c, ... in declaration order
  double bytesPerRun; // the bytes a kernel must move at least: every input read, the output written
};

constexpr int64_t kN = 16 << 20; // 16M elements

std::vector<Case> cases() {
  double n = kN * 4.0;
  return {
      {"a*b+c",
       "input a : f32[n]\ninput b : f32[n]\ninput c : f32[n]\nlet r = a * b + c\noutput r\n",
       {{kN}, {kN}, {kN}},
       4 * n},
      {"exp(-x*x/2)*0.3989+y",
       "input x : f32[n]\ninput y : f32[n]\nlet r = exp(-x * x / 2.0) * 0.3989 + y\noutput r\n",
       {{kN}, {kN}},
       3 * n},
      {"tanh(a)*sigmoid(b)+log1p(c*c)-sqrt(abs(a-b))",
       "input a : f32[n]\ninput b : f32[n]\ninput c : f32[n]\n"
       "let r = tanh(a) * sigmoid(b) + log1p(c * c) - sqrt(abs(a - b))\noutput r\n",
       {{kN}, {kN}, {kN}},
       4 * n},
      {"relu(M+v)",
       "import nn\ninput M : f32[4096, 4096]\ninput v : f32[4096]\nlet r = nn.relu(M + v)\noutput r\n",
       {{4096, 4096}, {4096}},
       2 * n},
      {"sum(exp(x),axis=1)",
       "input x : f32[4096, 4096]\nlet r = sum(exp(x), axis=1)\noutput r\n",
       {{4096, 4096}},
       n},
      {"softmax(rows of 4096x1024)",
       "import nn\ninput x : f32[4096, 1024]\nlet r = nn.softmax(x, 1)\noutput r\n",
       {{4096, 1024}},
       2 * 4096 * 1024 * 4.0},
  };
}

runtime::Tensor randomTensor(const std::vector<int64_t> &shape, uint32_t seed) {
  runtime::Tensor tensor = runtime::Tensor::empty(ir::DType::F32, shape);
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  float *data = tensor.data<float>();
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    data[i] = uniform(random);
  return tensor;
}

/// The best time of `repeat` calls of f, in seconds.
template <typename F>
double best(int repeat, F f) {
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    auto start = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

/// STREAM's triad, a[i] = b[i] + s * c[i], on `threads` threads: what the memory system gives a kernel.
double triadSeconds(int threads, int repeat) {
  std::vector<float> a(kN), b(kN, 1.0f), c(kN, 2.0f);
  auto run = [&] {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        int64_t begin = kN * t / threads, end = kN * (t + 1) / threads;
        for (int64_t i = begin; i < end; ++i)
          a[i] = b[i] + 0.5f * c[i];
      });
    for (std::thread &worker : workers)
      worker.join();
  };
  run(); // first touch
  return best(repeat, run);
}

std::unique_ptr<ir::Program> compile(const Case &benchCase) {
  auto path = std::filesystem::temp_directory_path() / "tgc_bench_kernels.tg";
  std::ofstream(path) << benchCase.script;
  frontend::DiagnosticEngine diags(std::cerr);
  std::unique_ptr<ir::Program> program = frontend::compileScript(path.string(), diags);
  std::filesystem::remove(path);
  if (!program) {
    std::fprintf(stderr, "bench/kernels: %s does not compile\n", benchCase.name);
    std::exit(1);
  }
  opt::OptimizerOptions options;
  options.evaluate = runtime::evaluateConstant;
  opt::optimize(*program, options);
  return program;
}

/// Compile latency of the case's first fused elementwise kernel: the first compile, and a second call
/// (answered by the in-memory cache). A body never seen before is made by renaming an immediate.
void printCompileLatency(const Case &benchCase, const ir::Program &program) {
  for (const ir::Node *node : program.graph.toposort()) {
    if (node->op().kind() != ir::OpKind::Fused || node->op().attrs().body->reduction) continue;
    ir::ScalarGraph body = *node->op().attrs().body;
    // A fresh body, so that the first compile is cold even when the case already ran.
    body.body.insert(body.body.begin(), ir::ScalarInstr{ir::OpKind::Full, ir::DType::F32, {}, 12345.678});
    for (size_t k = 1; k < body.body.size(); ++k)
      for (uint32_t &operand : body.body[k].operands)
        if (operand >= body.numInputs()) ++operand;
    codegen::KernelSpec spec{&body, codegen::Layout::Contiguous};
    auto start = Clock::now();
    codegen::compileHostKernel(spec);
    double cold = std::chrono::duration<double>(Clock::now() - start).count();
    start = Clock::now();
    codegen::compileHostKernel(spec);
    double warm = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("{\"kind\": \"compile\", \"case\": \"%s\", \"cold_ms\": %.3f, \"warm_ms\": %.4f}\n",
                benchCase.name, cold * 1e3, warm * 1e3);
    return;
  }
}

} // namespace

int main(int argc, char **argv) {
  int repeat = 5;
  std::vector<int> threadCounts{1, 2};
  std::vector<std::string> only;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
    if (flag == "--threads") {
      threadCounts.clear();
      for (const std::string &count : bench::splitList(argv[i + 1]))
        threadCounts.push_back(std::max(1, std::atoi(count.c_str())));
    }
    if (flag == "--cases") only = bench::splitList(argv[i + 1]);
  }
  for (int threads : threadCounts) {
    double seconds = triadSeconds(threads, repeat);
    std::printf("{\"kind\": \"triad\", \"threads\": %d, \"seconds\": %.6f, \"gbps\": %.2f}\n", threads,
                seconds, 3.0 * kN * 4 / seconds / 1e9);
  }
  for (const Case &benchCase : cases()) {
    if (!only.empty() && std::find(only.begin(), only.end(), benchCase.name) == only.end()) continue;
    std::unique_ptr<ir::Program> program = compile(benchCase);
    std::map<std::string, runtime::Tensor> inputs;
    for (size_t i = 0; i < program->inputs.size(); ++i)
      inputs[program->inputs[i].name] = randomTensor(benchCase.inputs.at(i), static_cast<uint32_t>(i + 1));
    runtime::Session session(*program);
    size_t kernels = program->graph.toposort().size();
    for (int threads : threadCounts) {
      runtime::setHostThreads(threads);
      session.step(inputs); // compiles the kernels, touches the memory
      double seconds = best(repeat, [&] { session.step(inputs); });
      std::printf(
          "{\"kind\": \"tgc\", \"case\": \"%s\", \"threads\": %d, \"kernels\": %zu, \"seconds\": %.6f, "
          "\"gbps\": %.2f}\n",
          benchCase.name, threads, kernels, seconds, benchCase.bytesPerRun / seconds / 1e9);
      std::fflush(stdout);
    }
    printCompileLatency(benchCase, *program);
  }
  return 0;
}
