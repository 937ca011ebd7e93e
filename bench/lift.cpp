// bench/lift: the global lift against the local one (Theano's node-by-node lift, the measured baseline), side
// by side in one run on the same graphs: elementwise chains, wide trees and MLP gradients, with a host-only
// op about every 1,000 nodes. Each graph is built fresh and run through the device passes alone (lift, then
// cut-transfers); the table shows the lift pass's seconds (best of --repeat runs), nanoseconds per node, the
// ratio local/global, and, as a check that both placed the graph alike, the transfers left after
// cut-transfers and the validations each made. Flat ns/node means linear time; the local lift validates the
// whole graph after every move, so it is quadratic: sizes above --local-max print "skipped", and its runs,
// long enough that noise matters little, may be repeated fewer times (--local-repeat, default --repeat).
//
//   build/bench/lift [--sizes 1000,10000,50000,1000000] [--repeat 3] [--graphs chain,wide-tree,mlp-grad]
//                    [--local-max 50000] [--local-repeat N] [--host-only-every 1000]
#include "bench/GraphBuilders.h"
#include "opt/Pipeline.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace tg;

struct Measurement {
  size_t nodes = 0;
  double seconds = 0; // the lift pass, best of the repeats
  size_t transfers = 0, validations = 0;
};

/// Builds the graph and runs the lift pass with `strategy`, then cut-transfers, on it.
Measurement measureOnce(const bench::GraphBuilder &build, size_t size, size_t hostOnlyEvery,
                        const std::string &strategy) {
  ir::Program program;
  build(program, size, hostOnlyEvery);
  program.graph.removeDeadNodes();
  opt::OptimizerOptions options;
  options.device = true;
  options.lift = strategy;
  options.exclude = {"merge", "constant-fold", "canonicalize", "stabilize", "specialize"};
  Measurement run;
  run.nodes = program.graph.toposort().size();
  for (const opt::PassProfile &pass : opt::optimize(program, options).passes) {
    if (pass.name != "lift") continue;
    run.seconds = pass.seconds;
    run.validations = pass.validations;
  }
  for (const ir::Node *node : program.graph.toposort())
    run.transfers += node->op().kind() == ir::OpKind::ToDevice || node->op().kind() == ir::OpKind::ToHost;
  return run;
}

/// The best of `repeat` runs for each size. The sizes take turns within each round, so that a slow spell of
/// a shared machine hits them alike and the time per node compares across sizes.
std::vector<Measurement> measure(const bench::GraphBuilder &build, const std::vector<size_t> &sizes,
                                 size_t hostOnlyEvery, const std::string &strategy, int repeat) {
  std::vector<Measurement> best(sizes.size());
  for (int r = 0; r < repeat; ++r)
    for (size_t s = 0; s < sizes.size(); ++s) {
      Measurement run = measureOnce(build, sizes[s], hostOnlyEvery, strategy);
      if (r == 0 || run.seconds < best[s].seconds) best[s] = run;
    }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<size_t> sizes{1000, 10000, 50000, 1000000};
  int repeat = 3, localRepeat = 0;
  size_t localMax = 50000, hostOnlyEvery = 1000;
  std::vector<std::string> graphs{"chain", "wide-tree", "mlp-grad"};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--sizes") {
      sizes = bench::parseSizes(argv[i + 1]);
    } else if (flag == "--repeat") {
      repeat = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--graphs") {
      graphs = bench::splitList(argv[i + 1]);
    } else if (flag == "--local-repeat") {
      localRepeat = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--local-max") {
      localMax = std::strtoul(argv[i + 1], nullptr, 10);
    } else if (flag == "--host-only-every") {
      hostOnlyEvery = std::strtoul(argv[i + 1], nullptr, 10);
    }
  }

  std::printf("%-10s %8s %12s %8s %12s %8s %12s %15s %17s\n", "graph", "nodes", "global s", "ns/node",
              "local s", "ns/node", "local/global", "transfers g/l", "validations g/l");
  for (const auto &[name, build] : bench::graphBuilders()) {
    if (std::find(graphs.begin(), graphs.end(), name) == graphs.end()) continue;
    std::vector<Measurement> globals = measure(build, sizes, hostOnlyEvery, "global", repeat);
    for (size_t s = 0; s < sizes.size(); ++s) {
      const Measurement &global = globals[s];
      std::optional<Measurement> local;
      if (sizes[s] <= localMax)
        local = measure(build, {sizes[s]}, hostOnlyEvery, "local", localRepeat ? localRepeat : repeat)[0];
      std::printf("%-10s %8zu %12.6f %8.0f", name.c_str(), global.nodes, global.seconds,
                  1e9 * global.seconds / global.nodes);
      if (local) {
        std::printf(" %12.6f %8.0f %12.1f %7zu/%-7zu %8zu/%-8zu\n", local->seconds,
                    1e9 * local->seconds / local->nodes, local->seconds / global.seconds, global.transfers,
                    local->transfers, global.validations, local->validations);
      } else {
        std::printf(" %12s %8s %12s %7zu/%-7s %8zu/%-8s\n", "skipped", "", "", global.transfers, "-",
                    global.validations, "-");
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
