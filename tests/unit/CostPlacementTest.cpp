// The cost-aware placement (--lift=cost) on random graphs (tests/unit/RandomGraphs.h), each priced by a
// random cost model whose speeds span orders of magnitude, so that the best placement mixes host and device:
//   - on 300 graphs of at most 14 nodes, the minimum cut's estimated time equals the least over every
//     placement the pins and lifters allow (brute force);
//   - the lift builds the placement the cut chose: the placed graph verifies, is priced as the cut estimated
//     it (estimatePlacedGraph), and on a subset computes exactly what the unplaced graph computes;
//   - on 300 larger graphs with host-only ops, its estimate never exceeds the global or the local lift's;
//   - the cost model's override file is read field by field, and a bad one is an error naming the field.
#include "opt/CostDeviceLift.h"
#include "opt/CutTransfers.h"
#include "opt/Equilibrium.h"
#include "opt/GlobalDeviceLift.h"
#include "opt/LocalDeviceLift.h"
#include "opt/Pipeline.h"
#include "tests/unit/RandomGraphs.h"

#include <cstdio>
#include <gtest/gtest.h>

namespace tg {
namespace {

using namespace tg::testing;

constexpr int kGraphs = 300;
constexpr size_t kMaxBruteForceNodes = 14;

/// Speeds drawn log-uniformly over wide ranges, around the tiny tensors of the random graphs (tens of
/// bytes), so that launches, memory, arithmetic and copies all matter somewhere.
opt::CostModel randomModel(uint32_t seed) {
  std::mt19937 random(seed * 7919u + 17u);
  auto logUniform = [&](double low, double high) {
    return std::exp(std::uniform_real_distribution<double>(std::log(low), std::log(high))(random));
  };
  auto place = [&](double scale) {
    return opt::PlaceSpeeds{logUniform(1e6, 1e9) * scale, logUniform(1e6, 1e9) * scale,
                            logUniform(1e6, 1e9) * scale, logUniform(1e6, 1e9) * scale,
                            logUniform(1e-8, 2e-6)};
  };
  opt::CostModel model = opt::CostModel::defaults();
  model.host = place(1);
  model.device = place(10);
  model.linkBytesPerSecond = logUniform(1e6, 1e9);
  model.linkLatencySeconds = logUniform(1e-8, 2e-6);
  return model;
}

opt::PlacementProblem problemOf(const RandomGraph &random, const opt::CostModel &model) {
  return opt::PlacementProblem(random.graph, model, random.residentInputs, random.residentOutputs);
}

/// The least estimated time over every placement allowed: nodes that must be on the device are, the rest
/// that may run on either place take every combination.
double bruteForce(const opt::PlacementProblem &problem) {
  size_t n = problem.nodes().size();
  std::vector<bool> placement(n, false);
  std::vector<size_t> free;
  for (size_t i = 0; i < n; ++i) {
    if (!problem.canRunOnHost(i))
      placement[i] = true;
    else if (problem.canRunOnDevice(i))
      free.push_back(i);
  }
  double best = std::numeric_limits<double>::infinity();
  for (uint64_t mask = 0; mask < (uint64_t(1) << free.size()); ++mask) {
    for (size_t k = 0; k < free.size(); ++k)
      placement[free[k]] = (mask >> k) & 1;
    best = std::min(best, problem.estimate(placement).seconds());
  }
  return best;
}

bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({1e-12, std::fabs(a), std::fabs(b)});
}

/// The cost lift with `model`, as the pipeline runs it (without the merge that cut-transfers ends with, so
/// that duplicate nodes are priced alike by every strategy).
void liftByCost(RandomGraph &random, const opt::CostModel &model, opt::PlacementReasons *reasons = nullptr) {
  opt::RewriteContext context(random.graph, nullptr, 0);
  context.residentInputs = random.residentInputs;
  context.residentOutputs = random.residentOutputs;
  context.placement = reasons;
  opt::PassProfile profile, cut;
  opt::costDeviceLift(random.graph, context, profile, model);
  random.graph.removeDeadNodes();
  opt::rewriteToFixedPoint(context, opt::cutTransferRules(), cut);
  random.graph.removeDeadNodes();
}

void liftByRule(RandomGraph &random, bool global) {
  opt::RewriteContext context(random.graph, nullptr, 0);
  context.residentInputs = random.residentInputs;
  context.residentOutputs = random.residentOutputs;
  opt::PassProfile profile, cut;
  if (global)
    opt::globalDeviceLift(random.graph, context, profile);
  else
    opt::localDeviceLift(random.graph, context, profile);
  random.graph.removeDeadNodes();
  opt::rewriteToFixedPoint(context, opt::cutTransferRules(), cut);
  random.graph.removeDeadNodes();
}

TEST(CostPlacementTest, TheCutIsOptimalOnEverySmallGraph) {
  int graphs = 0, mixed = 0;
  size_t largest = 0, mostFree = 0;
  for (uint32_t seed = 1; graphs < kGraphs; ++seed) {
    std::unique_ptr<RandomGraph> random = makeGraph(seed, seed % 2 == 0, 8);
    if (random->graph.toposort().size() > kMaxBruteForceNodes) continue;
    ++graphs;
    opt::CostModel model = randomModel(seed);
    opt::PlacementProblem problem = problemOf(*random, model);
    std::vector<bool> chosen = problem.solve();
    for (size_t i = 0; i < chosen.size(); ++i) {
      ASSERT_TRUE(chosen[i] ? problem.canRunOnDevice(i) : problem.canRunOnHost(i))
          << "seed " << seed << ": node " << i << " placed where it cannot run";
    }
    double cut = problem.estimate(chosen).seconds(), best = bruteForce(problem);
    largest = std::max(largest, chosen.size());
    size_t free = 0;
    for (size_t i = 0; i < chosen.size(); ++i)
      free += problem.canRunOnHost(i) && problem.canRunOnDevice(i);
    mostFree = std::max(mostFree, free);
    ASSERT_TRUE(near(cut, best)) << "seed " << seed << ": the cut's placement takes " << cut
                                 << " s, the best " << best << " s\n"
                                 << canonical(random->graph);
    bool anyDevice = std::count(chosen.begin(), chosen.end(), true) > 0;
    bool anyHost = std::count(chosen.begin(), chosen.end(), false) > 0;
    mixed += anyDevice && anyHost;
  }
  // The random models make the choice matter: many optima put some nodes on each place.
  std::printf("[          ] %d of %d optimal placements use both places; %zu nodes, %zu free, at most\n",
              mixed, kGraphs, largest, mostFree);
  EXPECT_GT(mixed, kGraphs / 5);
}

TEST(CostPlacementTest, TheLiftBuildsThePlacementTheCutChose) {
  for (uint32_t seed = 1; seed <= 120; ++seed) {
    bool hostOnly = seed % 2 == 0;
    int steps = seed % 3 == 0 ? kMaxSteps : 10;
    opt::CostModel model = randomModel(seed);
    std::unique_ptr<RandomGraph> unplaced = makeGraph(seed, hostOnly, steps);
    std::unique_ptr<RandomGraph> placed = makeGraph(seed, hostOnly, steps);
    opt::PlacementProblem problem = problemOf(*unplaced, model);
    double estimated = problem.estimate(problem.solve()).seconds();
    opt::PlacementReasons reasons;
    liftByCost(*placed, model, &reasons);
    std::vector<std::string> problems = placed->graph.verify();
    ASSERT_TRUE(problems.empty()) << "seed " << seed << ": " << problems.front();
    double priced = opt::estimatePlacedGraph(placed->graph, model).seconds();
    EXPECT_TRUE(near(priced, estimated)) << "seed " << seed << ": the placed graph takes " << priced
                                         << " s, the cut estimated " << estimated << " s\n"
                                         << canonical(placed->graph);
    for (const ir::Node *node : placed->graph.toposort()) {
      bool transfer = node->op().kind() == OpKind::ToDevice || node->op().kind() == OpKind::ToHost;
      if (transfer) continue;
      auto reason = reasons.find(node);
      ASSERT_NE(reason, reasons.end()) << "seed " << seed << ": no reason for " << node->op().str();
      std::string where = node->op().place() == ir::Place::Device ? "device: " : "host: ";
      EXPECT_EQ(reason->second.rfind(where, 0), 0u) << reason->second;
    }
    if (seed % 6 == 0) {
      std::vector<runtime::Tensor> inputs = randomInputs(unplaced->graph, seed);
      expectSameNumbers(runOnSim(unplaced->graph, inputs), runOnSim(placed->graph, inputs),
                        "seed " + std::to_string(seed));
    }
  }
}

TEST(CostPlacementTest, NeverSlowerThanTheGlobalOrLocalLift) {
  int better = 0;
  for (uint32_t seed = 2001; seed < 2001 + kGraphs; ++seed) {
    // Half of the graphs under the default model, which the placements of real scripts see.
    opt::CostModel model = seed % 2 ? randomModel(seed) : opt::CostModel::defaults();
    std::unique_ptr<RandomGraph> cost = makeGraph(seed, true), global = makeGraph(seed, true),
                                 local = makeGraph(seed, true);
    liftByCost(*cost, model);
    liftByRule(*global, true);
    liftByRule(*local, false);
    double byCost = opt::estimatePlacedGraph(cost->graph, model).seconds();
    double byGlobal = opt::estimatePlacedGraph(global->graph, model).seconds();
    double byLocal = opt::estimatePlacedGraph(local->graph, model).seconds();
    EXPECT_LE(byCost, byGlobal * (1 + 1e-9)) << "seed " << seed;
    EXPECT_LE(byCost, byLocal * (1 + 1e-9)) << "seed " << seed;
    better += byCost < byGlobal * (1 - 1e-9);
  }
  std::printf("[          ] the cost lift beat the global lift's estimate on %d of %d graphs\n", better,
              kGraphs);
  EXPECT_GT(better, kGraphs / 4);
}

TEST(CostPlacementTest, ThePipelineRunsTheCostLiftAndPricesEveryStrategy) {
  std::map<std::string, double> estimates;
  for (const std::string strategy : {"global", "local", "cost"}) {
    std::unique_ptr<RandomGraph> random = makeGraph(11, true);
    opt::OptimizerOptions options;
    options.device = true;
    options.lift = strategy;
    options.pricePlacement = true;
    options.exclude = {"loops",     "merge",      "constant-fold", "canonicalize",
                       "stabilize", "specialize", "fusion"};
    opt::OptimizerProfile profile = opt::optimize(random->program, options);
    ASSERT_EQ(profile.passes.size(), 2u);
    if (strategy != "local") { // one, at the end
      EXPECT_EQ(profile.passes[0].validations, 1u) << strategy;
    }
    const auto &details = profile.passes[1].details;
    ASSERT_TRUE(details.count("estimated seconds")) << strategy;
    EXPECT_TRUE(details.count("estimated transfer bytes")) << strategy;
    estimates[strategy] = details.at("estimated seconds");
    EXPECT_GT(estimates[strategy], 0) << strategy;
  }
  EXPECT_LE(estimates["cost"], estimates["global"] * (1 + 1e-9));
  EXPECT_LE(estimates["cost"], estimates["local"] * (1 + 1e-9));
}

TEST(CostPlacementTest, OverridesAreReadFieldByField) {
  opt::CostModel model = opt::CostModel::defaults();
  model.applyOverrides(R"({"device": {"memory_gb_per_s": 2000, "launch_us": 3},
                           "link": {"gb_per_s": 50, "latency_us": 0}, "default_dim": 64})",
                       "test.json");
  EXPECT_DOUBLE_EQ(model.device.memoryBytesPerSecond, 2e12);
  EXPECT_DOUBLE_EQ(model.device.launchSeconds, 3e-6);
  EXPECT_DOUBLE_EQ(model.device.f32FlopsPerSecond, opt::CostModel::defaults().device.f32FlopsPerSecond);
  EXPECT_DOUBLE_EQ(model.linkBytesPerSecond, 50e9);
  EXPECT_DOUBLE_EQ(model.linkLatencySeconds, 0);
  EXPECT_EQ(model.defaultDim, 64);
  auto error = [&](const std::string &json) {
    try {
      model.applyOverrides(json, "bad.json");
    } catch (const ir::UserError &e) {
      return e.message;
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("{"), "bad.json: not valid JSON");
  EXPECT_EQ(error("[1]"), "bad.json: expected a JSON object");
  EXPECT_EQ(error(R"({"host": {"memory_gb_per_s": 0}})"),
            "bad.json: host.memory_gb_per_s must be a positive number, got 0");
  EXPECT_EQ(error(R"({"host": {"launch_us": -1}})"),
            "bad.json: host.launch_us must be a non-negative number, got -1");
  EXPECT_NE(error(R"({"device": {"bandwidth": 1}})").find("unknown field \"device.bandwidth\""),
            std::string::npos);
  EXPECT_NE(error(R"({"gpu": {}})").find("unknown field \"gpu\""), std::string::npos);
  EXPECT_NE(error(R"({"link": {"gb_per_s": "fast"}})").find("link.gb_per_s must be a positive number"),
            std::string::npos);
  EXPECT_NE(error(R"({"default_dim": 1.5})").find("default_dim must be a non-negative integer"),
            std::string::npos);
}

TEST(CostPlacementTest, DerivedDimensionsAreSizedFromTheirSymbols) {
  opt::CostModel model = opt::CostModel::defaults();
  model.dims = {{"n", 100000}, {"m", 7}};
  EXPECT_EQ(model.symbolSize("n"), 100000);
  EXPECT_EQ(model.symbolSize("n[0:2]"), 2);
  EXPECT_EQ(model.symbolSize("n[:-1]"), 99999);
  EXPECT_EQ(model.symbolSize("n[::2]"), 50000);
  EXPECT_EQ(model.symbolSize("n[5::-1]"), 6);
  EXPECT_EQ(model.symbolSize("n[::-1]"), 100000);
  EXPECT_EQ(model.symbolSize("m[10:20]"), 0);
  EXPECT_EQ(model.symbolSize("n+m"), 100007);
  EXPECT_EQ(model.symbolSize("n[0:2]+m[1:]"), 8);
  EXPECT_EQ(model.symbolSize("n[0:2][1:]"), 1);
  EXPECT_EQ(model.symbolSize("k"), model.defaultDim);
  EXPECT_EQ(model.symbolSize("reshape1"), model.defaultDim);
}

TEST(CostPlacementTest, AGatherMovesTheRowsItReadsNotTheWholeTable) {
  ir::Graph graph;
  ir::Value *table = graph.addInput({ir::DType::F32, {ir::Dim::of(100000), ir::Dim::of(128)}}, "E");
  ir::Value *index = graph.addInput({ir::DType::I64, {ir::Dim::of(1000)}}, "idx");
  ir::OpAttrs axis;
  axis.axes = {0};
  ir::Node *gather = graph.addNode(ir::Op(ir::OpKind::Gather, axis), {table, index}, {});
  opt::CostModel model = opt::CostModel::defaults();
  // 1000 rows of 128 f32 read and written, and 1000 i64 indices read.
  EXPECT_DOUBLE_EQ(model.memoryBytes(*gather), 2 * 1000 * 128 * 4 + 1000 * 8);
}

TEST(CostPlacementTest, AnOpenGpuRefinesTheModelAndOverridesStillWin) {
  opt::CostModel model = opt::CostModel::defaults();
  model.applyOverrides(R"({"device": {"f64_gflop_per_s": 1}})", "mine.json");
  model.refineDevice(132, 9, 0, 1.98e9, 2.619e9, 5120); // an H200
  EXPECT_DOUBLE_EQ(model.device.f32FlopsPerSecond, 132 * 128 * 2 * 1.98e9);
  EXPECT_DOUBLE_EQ(model.device.memoryBytesPerSecond, 0.85 * 2 * 2.619e9 * 5120 / 8);
  EXPECT_DOUBLE_EQ(model.device.f64FlopsPerSecond, 1e9); // the file's, not the GPU's
  opt::CostModel a100 = opt::CostModel::defaults();
  a100.refineDevice(108, 8, 0, 1.41e9, 1.215e9, 5120);
  EXPECT_DOUBLE_EQ(a100.device.f32FlopsPerSecond, 108 * 64 * 2 * 1.41e9);
  EXPECT_DOUBLE_EQ(a100.device.f64FlopsPerSecond, 108 * 32 * 2 * 1.41e9);
  opt::CostModel consumer = opt::CostModel::defaults();
  consumer.refineDevice(128, 8, 9, 2.52e9, 0, 0); // no memory figures: the bandwidth stays
  EXPECT_DOUBLE_EQ(consumer.device.f64FlopsPerSecond, 128 * 4 * 2 * 2.52e9);
  EXPECT_DOUBLE_EQ(consumer.device.memoryBytesPerSecond,
                   opt::CostModel::defaults().device.memoryBytesPerSecond);
}

} // namespace
} // namespace tg
