// bench/kernels: tgc's host kernels on the benchmark expressions of the fusion issue, float32, with 1 and 2
// threads, next to a STREAM triad probe run the same way; prints one JSON object per line for
// bench/kernels.py, which times NumPy, numexpr and PyTorch on the same expressions and prints the table.
// Then each case's kernel compile latency: cold, from the in-memory cache, and from the disk cache (in a
// child process, `--compile-only CASE`, since in this process the in-memory cache answers first).
//
//   build/bench/kernels [--repeat 5] [--threads 1,2] [--cases a*b+c,...] [--device cpu|sim]
//
// With --device sim, each case runs on the simulated device instead (its inputs uploaded and its result
// downloaded every step, as a run does), to compare the device pipeline's speed with the CPU's.
#include "runtime/Kernels.h"

#include "bench/GraphBuilders.h"
#include "codegen/Kernel.h"
#include "frontend/GraphBuilder.h"
#include "ir/ScalarGraph.h"
#include "opt/Pipeline.h"
#include "runtime/ConstantEvaluator.h"
#include "runtime/Session.h"
#include "runtime/WorkerPool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <thread>
#include <unistd.h>

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

std::unique_ptr<ir::Program> compile(const Case &benchCase, bool onDevice = false) {
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
  options.device = onDevice;
  opt::optimize(*program, options);
  return program;
}

/// The program's first fused elementwise kernel: its body, a fresh copy of it (a body the case never
/// compiles: an unused constant added, so that its first compile is cold even when the case already ran), and
/// the layout the runtime launches it with on fresh C-contiguous inputs (runtime/FusedLaunch.cpp): strided
/// when an input is broadcast, each input's last axis then read with unit stride, or stride zero where the
/// input has no such axis or it is 1 long.
struct FirstKernel {
  ir::ScalarGraph body, fresh;
  codegen::Layout layout = codegen::Layout::Contiguous;
  std::vector<codegen::InnerStride> innerStrides;
  codegen::KernelSpec spec(const ir::ScalarGraph &graph) const { return {&graph, layout, innerStrides}; }
};

std::optional<FirstKernel> firstKernel(const ir::Program &program) {
  for (const ir::Node *node : program.graph.toposort()) {
    if (node->op().kind() != ir::OpKind::Fused || node->op().attrs().body->reduction) continue;
    FirstKernel kernel{*node->op().attrs().body, *node->op().attrs().body, codegen::Layout::Contiguous, {}};
    ir::ScalarGraph &fresh = kernel.fresh;
    fresh.body.insert(fresh.body.begin(), ir::ScalarInstr{ir::OpKind::Full, ir::DType::F32, {}, 12345.678});
    for (size_t k = 1; k < fresh.body.size(); ++k)
      for (uint32_t &operand : fresh.body[k].operands)
        if (operand >= fresh.numInputs()) ++operand;
    const ir::Shape &shape = node->output()->type().shape;
    for (const ir::Value *input : node->inputs())
      if (input->type().shape != shape) kernel.layout = codegen::Layout::Strided;
    if (kernel.layout == codegen::Layout::Strided)
      for (const ir::Value *input : node->inputs()) {
        const ir::Shape &inputShape = input->type().shape;
        bool broadcastLastAxis = inputShape.empty() || (inputShape.back().isOne() && !shape.back().isOne());
        kernel.innerStrides.push_back(broadcastLastAxis ? codegen::InnerStride::Zero
                                                        : codegen::InnerStride::Unit);
      }
    return kernel;
  }
  return std::nullopt;
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// --compile-only CASE: prints the time compileHostKernel takes for the case's fresh body, which an earlier
/// process left in the disk cache, after a first compile has set the JIT up; and whether the disk answered.
int compileOnly(const Case &benchCase) {
  std::unique_ptr<ir::Program> program = compile(benchCase);
  std::optional<FirstKernel> kernel = firstKernel(*program);
  if (!kernel) return 1;
  codegen::compileHostKernel({&kernel->body, codegen::Layout::Strided});
  size_t hits = codegen::kernelCacheStats().diskHits;
  auto start = Clock::now();
  codegen::compileHostKernel(kernel->spec(kernel->fresh));
  double seconds = secondsSince(start);
  std::printf("%.6f %d\n", seconds, codegen::kernelCacheStats().diskHits == hits + 1 ? 1 : 0);
  return 0;
}

/// Compile latency of the case's first fused elementwise kernel: the first compile (a disk-cache miss, which
/// writes the entry), a second call (answered by the in-memory cache), and the best of `repeat` child
/// processes compiling it again (answered by the disk cache in `cacheDirectory`).
void printCompileLatency(const Case &benchCase, const ir::Program &program, const std::string &cacheDirectory,
                         int repeat) {
  std::optional<FirstKernel> kernel = firstKernel(program);
  if (!kernel) return;
  codegen::KernelSpec spec = kernel->spec(kernel->fresh);
  auto start = Clock::now();
  codegen::compileHostKernel(spec);
  double cold = secondsSince(start);
  start = Clock::now();
  codegen::compileHostKernel(spec);
  double warm = secondsSince(start);
  // The case names hold no single quote.
  std::string command = std::filesystem::read_symlink("/proc/self/exe").string() + " --compile-only '" +
                        benchCase.name + "' --cache-dir '" + cacheDirectory + "'";
  double disk = 1e30;
  for (int r = 0; r < repeat; ++r) {
    FILE *child = popen(command.c_str(), "r");
    double seconds = 0;
    int hit = 0;
    bool answered = child && std::fscanf(child, "%lf %d", &seconds, &hit) == 2;
    if (child) pclose(child);
    if (answered && hit) disk = std::min(disk, seconds);
  }
  std::printf("{\"kind\": \"compile\", \"case\": \"%s\", \"layout\": \"%s\", \"cold_ms\": %.3f, "
              "\"warm_ms\": %.4f",
              benchCase.name, spec.layout == codegen::Layout::Strided ? "strided" : "contiguous", cold * 1e3,
              warm * 1e3);
  if (disk < 1e30) std::printf(", \"disk_ms\": %.4f", disk * 1e3);
  std::printf("}\n");
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  int repeat = 5;
  std::vector<int> threadCounts{1, 2};
  std::vector<std::string> only;
  std::string compileOnlyCase, cacheDirectory, device = "cpu";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
    if (flag == "--threads") {
      threadCounts.clear();
      for (const std::string &count : bench::splitList(argv[i + 1]))
        threadCounts.push_back(std::max(1, std::atoi(count.c_str())));
    }
    if (flag == "--cases") only = bench::splitList(argv[i + 1]);
    if (flag == "--compile-only") compileOnlyCase = argv[i + 1];
    if (flag == "--cache-dir") cacheDirectory = argv[i + 1];
    if (flag == "--device") device = argv[i + 1];
  }
  if (device != "cpu" && device != "sim") {
    std::fprintf(stderr, "bench/kernels: --device takes cpu or sim, not '%s'\n", device.c_str());
    return 2;
  }
  if (!compileOnlyCase.empty()) {
    codegen::setKernelCacheDirectory(cacheDirectory);
    for (const Case &benchCase : cases())
      if (compileOnlyCase == benchCase.name) return compileOnly(benchCase);
    std::fprintf(stderr, "bench/kernels: no case named '%s'\n", compileOnlyCase.c_str());
    return 2;
  }
  // A disk cache of this run's own, so that every run starts cold and the user's cache is left alone.
  std::filesystem::path cache = std::filesystem::temp_directory_path() /
                                ("tgc_bench_kernels_cache_" + std::to_string(static_cast<long>(getpid())));
  std::filesystem::remove_all(cache);
  codegen::setKernelCacheDirectory(cache.string());
  for (int threads : threadCounts) {
    double seconds = triadSeconds(threads, repeat);
    std::printf("{\"kind\": \"triad\", \"threads\": %d, \"seconds\": %.6f, \"gbps\": %.2f}\n", threads,
                seconds, 3.0 * kN * 4 / seconds / 1e9);
  }
  for (const Case &benchCase : cases()) {
    if (!only.empty() && std::find(only.begin(), only.end(), benchCase.name) == only.end()) continue;
    std::unique_ptr<ir::Program> program = compile(benchCase, device == "sim");
    std::map<std::string, runtime::Tensor> inputs;
    for (size_t i = 0; i < program->inputs.size(); ++i)
      inputs[program->inputs[i].name] = randomTensor(benchCase.inputs.at(i), static_cast<uint32_t>(i + 1));
    runtime::Session session(*program); // on a simulated device of its own when the graph has device nodes
    size_t kernels = program->graph.toposort().size();
    for (int threads : threadCounts) {
      runtime::setHostThreads(threads);
      session.step(inputs); // compiles the kernels, touches the memory
      double seconds = best(repeat, [&] { session.step(inputs); });
      std::printf(
          "{\"kind\": \"tgc\", \"device\": \"%s\", \"case\": \"%s\", \"threads\": %d, \"kernels\": %zu, "
          "\"seconds\": %.6f, \"gbps\": %.2f}\n",
          device.c_str(), benchCase.name, threads, kernels, seconds, benchCase.bytesPerRun / seconds / 1e9);
      std::fflush(stdout);
    }
    if (device == "cpu") printCompileLatency(benchCase, *program, cache.string(), repeat);
  }
  std::filesystem::remove_all(cache);
  return 0;
}
