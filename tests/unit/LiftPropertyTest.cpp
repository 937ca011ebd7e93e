// The two placement strategies against each other on random graphs: the global lift (one forward and one
// backward pass, one validation) and the local one (Theano's node-by-node lift, kept as the baseline).
//
// Each graph is built from a fixed seed (tests/unit/RandomGraphs.h). The same seed builds the same graph
// again, so each graph is built three times: lifted globally, lifted locally (each followed by
// cut-transfers), and left as it is. The properties, over 300 graphs each:
//   - without host-only ops, both strategies give the same placement;
//   - with sort, argsort and cumsum sprinkled in, the global lift never leaves more transfers than the local;
//   - both lifted graphs verify, and (on one graph in 6, to keep the test fast) compute exactly the numbers
//     the unlifted graph computes on random inputs, transfers being copies;
// and, through the optimizer as `tgc --lift=...` runs it, the lift pass runs the strategy asked for.
//
// "The same placement" is checked as strongly as it can be: the same graph after cut-transfers, up to node
// ids. Both graphs are printed canonically (each node of the topological order, which is a depth-first walk
// from the outputs along input order, so equal graphs list their nodes alike, as its op, place, pin and
// inputs by position) and the texts must be equal. That implies the same multiset of (op, place), and also
// that the same values cross in the same direction, into the same readers: a multiset could not tell a
// transfer that feeds the wrong node, nor two transfers of one value from one transfer read twice.
#include "ir/Program.h"
#include "opt/CutTransfers.h"
#include "opt/Equilibrium.h"
#include "opt/GlobalDeviceLift.h"
#include "opt/LocalDeviceLift.h"
#include "opt/Merge.h"
#include "opt/Pipeline.h"
#include "tests/unit/RandomGraphs.h"

#include <cstdio>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tg {
namespace {

using namespace tg::testing;

constexpr int kGraphs = 300;     // per property
constexpr int kNumericEvery = 6; // run the executor on one graph in this many

enum class Strategy { Global, Local };

/// The lift with `strategy`, then cut-transfers as the pipeline runs it.
opt::PassProfile lift(RandomGraph &random, Strategy strategy) {
  opt::RewriteContext context(random.graph, nullptr, 0);
  context.residentInputs = random.residentInputs;
  context.residentOutputs = random.residentOutputs;
  opt::PassProfile profile, cut;
  if (strategy == Strategy::Global)
    opt::globalDeviceLift(random.graph, context, profile);
  else
    opt::localDeviceLift(random.graph, context, profile);
  random.graph.removeDeadNodes();
  opt::rewriteToFixedPoint(context, opt::cutTransferRules(), cut);
  random.graph.removeDeadNodes();
  opt::mergeEquivalent(random.graph, cut);
  random.graph.removeDeadNodes();
  return profile;
}

struct Lifted {
  std::unique_ptr<RandomGraph> global, local;
  opt::PassProfile globalProfile, localProfile;
};

/// The graph of `seed` lifted both ways, both verified, and on a subset run against the unlifted graph.
Lifted liftBothWays(uint32_t seed, bool hostOnly) {
  Lifted lifted{makeGraph(seed, hostOnly), makeGraph(seed, hostOnly), {}, {}};
  std::unique_ptr<RandomGraph> unlifted = makeGraph(seed, hostOnly);
  lifted.globalProfile = lift(*lifted.global, Strategy::Global);
  lifted.localProfile = lift(*lifted.local, Strategy::Local);
  std::string where = "seed " + std::to_string(seed) + (hostOnly ? " (with host-only ops)" : "");
  for (const auto *random : {lifted.global.get(), lifted.local.get()}) {
    std::vector<std::string> problems = random->graph.verify();
    EXPECT_TRUE(problems.empty()) << where << ": " << problems.front() << "\n" << canonical(random->graph);
  }
  if (seed % kNumericEvery == 0) {
    std::vector<runtime::Tensor> inputs = randomInputs(unlifted->graph, seed);
    std::vector<runtime::Tensor> expected = runOnSim(unlifted->graph, inputs);
    expectSameNumbers(expected, runOnSim(lifted.global->graph, inputs), where + ", global");
    expectSameNumbers(expected, runOnSim(lifted.local->graph, inputs), where + ", local");
  }
  return lifted;
}

TEST(LiftPropertyTest, WithoutHostOnlyOpsBothStrategiesPlaceAlike) {
  size_t moved = 0, graphsWithPins = 0;
  for (uint32_t seed = 1; seed <= kGraphs; ++seed) {
    Lifted lifted = liftBothWays(seed, false);
    ASSERT_EQ(canonical(lifted.global->graph), canonical(lifted.local->graph)) << "seed " << seed;
    moved += static_cast<size_t>(lifted.localProfile.details["moved"]);
    graphsWithPins += lifted.localProfile.details["moved: pinned by @device"] > 0;
  }
  // The graphs exercise the lifts: most nodes move, and some graphs pin nodes to the device.
  EXPECT_GT(moved, static_cast<size_t>(kGraphs) * 5);
  EXPECT_GT(graphsWithPins, 0u);
}

TEST(LiftPropertyTest, WithHostOnlyOpsTheGlobalLiftNeverTransfersMore) {
  size_t same = 0;
  for (uint32_t seed = 1001; seed <= 1000 + kGraphs; ++seed) {
    Lifted lifted = liftBothWays(seed, true);
    EXPECT_LE(transfers(lifted.global->graph), transfers(lifted.local->graph))
        << "seed " << seed << "\nglobal:\n"
        << canonical(lifted.global->graph) << "local:\n"
        << canonical(lifted.local->graph);
    same += canonical(lifted.global->graph) == canonical(lifted.local->graph);
  }
  RecordProperty("graphs placed alike", static_cast<int>(same));
  std::printf("[          ] %zu of %d graphs with host-only ops placed alike by both lifts\n", same, kGraphs);
}

TEST(LiftPropertyTest, TheLiftPassRunsTheChosenStrategy) {
  // Through the optimizer, as `tgc --lift=...` runs it: the global lift validates once, the local one after
  // every move, and both place the graph alike.
  std::map<std::string, std::string> placed;
  for (const std::string strategy : {"global", "local"}) {
    std::unique_ptr<RandomGraph> random = makeGraph(7, true);
    opt::OptimizerOptions options;
    options.device = true;
    options.lift = strategy;
    options.exclude = {"loops",     "merge",      "constant-fold", "canonicalize",
                       "stabilize", "specialize", "fusion"};
    opt::OptimizerProfile profile = opt::optimize(random->program, options);
    ASSERT_EQ(profile.passes.size(), 2u);
    const opt::PassProfile &lift = profile.passes[0];
    ASSERT_EQ(lift.name, "lift");
    if (strategy == "global") {
      EXPECT_EQ(lift.validations, 1u);
    } else {
      EXPECT_GT(lift.details.at("moved"), 5);
      EXPECT_GE(static_cast<double>(lift.validations), lift.details.at("moved"));
    }
    placed[strategy] = canonical(random->graph);
  }
  EXPECT_EQ(placed["global"], placed["local"]);
}

} // namespace
} // namespace tg
