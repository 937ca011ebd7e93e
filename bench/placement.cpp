// bench/placement: what each placement strategy costs under the cost model (opt/CostModel.h), side by side on
// the same graphs: the estimated time (compute and transfers) and the bytes moved of the local, global and
// cost-aware lifts, and the ratio cost/global. The graphs: the examples at several batch sizes (their
// symbolic dimension n bound to each), elementwise chains with a host-only op every k nodes
// (bench/GraphBuilders.h), and the scenarios the cost lift was built for. Estimates, not timings: the same
// model prices every strategy, so the table says which placement the model prefers and by how much;
// `bench/gpu.sh` times real runs.
//
//   build/bench/placement [--batches 100,10000,1000000] [--chain-every 10,100,1000] [--chain-nodes 2000]
//                         [--cost-model FILE.json]
#include "bench/GraphBuilders.h"
#include "frontend/Diagnostics.h"
#include "frontend/GraphBuilder.h"
#include "opt/Pipeline.h"
#include "runtime/ConstantEvaluator.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace {

using namespace tg;

const char *const kStrategies[] = {"local", "global", "cost"};

/// A graph to place: how to build its program, and the sizes of its symbolic dimensions.
struct Case {
  std::string name;
  std::function<std::unique_ptr<ir::Program>()> build;
  std::map<std::string, int64_t> dims;
};

struct Estimate {
  double seconds = 0, bytes = 0;
};

Estimate place(const Case &graph, const std::string &strategy, const opt::CostModel &model) {
  std::unique_ptr<ir::Program> program = graph.build();
  opt::OptimizerOptions options;
  options.device = true;
  options.lift = strategy;
  options.costModel = model;
  options.costModel.dims = graph.dims;
  options.pricePlacement = true;
  options.stopAfter = "cut-transfers";
  options.evaluate = runtime::evaluateConstant;
  Estimate estimate;
  for (const opt::PassProfile &pass : opt::optimize(*program, options).passes) {
    if (pass.name != "cut-transfers") continue;
    estimate.seconds = pass.details.at("estimated seconds");
    estimate.bytes = pass.details.at("estimated transfer bytes");
  }
  return estimate;
}

/// A script's program; the script is written to a file first when it is given as text.
std::function<std::unique_ptr<ir::Program>()> script(const std::string &path) {
  return [path] {
    frontend::DiagnosticEngine diags(std::cerr);
    std::unique_ptr<ir::Program> program = frontend::compileScript(path, diags);
    if (!program) std::exit(1);
    return program;
  };
}

std::string writeScenario(const std::string &name, const std::string &text) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("tgc_placement_" + name + ".tg");
  std::ofstream(path) << text;
  return path.string();
}

std::string megabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g MB", bytes / 1e6);
  return text;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<size_t> batches{100, 10000, 1000000}, chainEvery{10, 100, 1000};
  size_t chainNodes = 2000;
  opt::CostModel model = opt::CostModel::defaults();
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--batches")
      batches = bench::parseSizes(argv[i + 1]);
    else if (flag == "--chain-every")
      chainEvery = bench::parseSizes(argv[i + 1]);
    else if (flag == "--chain-nodes")
      chainNodes = std::strtoul(argv[i + 1], nullptr, 10);
    else if (flag == "--cost-model")
      model.loadOverrides(argv[i + 1]);
  }
  std::vector<Case> cases;
  for (const char *example : {"logreg", "mlp", "normalize"})
    for (size_t batch : batches)
      cases.push_back({std::string(example) + " n=" + std::to_string(batch),
                       script(std::string(TGC_SOURCE_DIR) + "/examples/" + example + ".tg"),
                       {{"n", static_cast<int64_t>(batch)}}});
  for (size_t every : chainEvery)
    for (size_t rows : {size_t(1024), size_t(1000000)})
      cases.push_back({"chain/" + std::to_string(every) + " n=" + std::to_string(rows),
                       [=] {
                         auto program = std::make_unique<ir::Program>();
                         bench::buildChain(*program, chainNodes, every);
                         return program;
                       },
                       {{"n", static_cast<int64_t>(rows)}}});
  const std::pair<const char *, const char *> scenarios[] = {
      {"slice-of-large-input", "input X : f32[100000, 64]\ninput W : f32[64, 64]\noutput X[0:2, :] @ W\n"},
      {"matmul-between-sorts",
       "input A : f32[4096, 4096]\nlet s = sort(A)\nlet p = s @ s\noutput cumsum(p, axis=1)\n"},
      {"tiny-elementwise", "input x : f32[8]\noutput exp(x) + 1.0\n"},
      {"reduce-large-input", "input X : f32[4000000, 16]\nlet s = sum(X, axis=0)\noutput sort(s)\n"},
  };
  for (const auto &[name, text] : scenarios)
    cases.push_back({name, script(writeScenario(name, text)), {}});

  std::printf("%-28s %11s %11s %11s %11s %11s %11s %9s\n", "graph", "local", "moved", "global", "moved",
              "cost", "moved", "cost/glob");
  for (const Case &graph : cases) {
    Estimate estimates[3];
    for (int s = 0; s < 3; ++s)
      estimates[s] = place(graph, kStrategies[s], model);
    std::printf("%-28s", graph.name.c_str());
    for (const Estimate &estimate : estimates)
      std::printf(" %11s %11s", opt::formatSeconds(estimate.seconds).c_str(),
                  megabytes(estimate.bytes).c_str());
    std::printf(" %9.3f\n", estimates[2].seconds / estimates[1].seconds);
    std::fflush(stdout);
  }
  return 0;
}
