// The optimizer database (Theano's optdb): one ordered table of named passes with positions and tags,
// selected by include/exclude queries and run in order, each timed and profiled. docs/optimizer.md lists the
// passes.
#pragma once

#include "ir/Program.h"
#include "opt/CostModel.h"
#include "opt/Rewrite.h"

#include <ostream>
#include <string>
#include <vector>

namespace tg::opt {

struct OptimizerOptions {
  std::vector<std::string> include; // pass names or tags added to the default selection (tag fast_run)
  std::vector<std::string> exclude; // pass names or tags removed from it
  std::string printAfter;           // print the graph after this pass to `log`
  std::string stopAfter;            // run no pass after this one
  bool verifyEach = false;          // verify the graph after every pass (always done in debug builds)
  bool device = false;              // a device is in use: run the placement passes (tag device)
  bool residentBody = false;   // a device loop's body: its array inputs and outputs stay in device memory
  std::string lift = "global"; // the lift pass's strategy: global, local (the legacy baseline), cost
  std::string shard; // a distributed run's batch dimension: the shard pass splits the step along it (tag
                     // distributed, run whenever this is set, whatever the selection: without it the ranks'
                     // results are wrong)
  CostModel costModel = CostModel::defaults(); // what --lift=cost minimizes, and what prices every placement
  bool pricePlacement = false;           // record the lift's estimate (PlacementEstimate) in its profile
  PlacementReasons *placement = nullptr; // filled with why each node runs where it does, when set
  ConstantEvaluator evaluate;            // how constant folding computes; empty: no folding
  int64_t foldLimit = 1 << 16;           // the most elements a folded constant may have
  std::ostream *log = nullptr;           // where --print-after and warnings go
};

struct OptimizerProfile {
  std::vector<PassProfile> passes;
  double seconds() const;
};

struct PassInfo {
  const char *name;
  double position;
  std::vector<std::string> tags;
  void (*run)(ir::Graph &graph, RewriteContext &context, PassProfile &profile,
              const OptimizerOptions &options);
};

/// Every pass, in position order.
const std::vector<PassInfo> &passTable();
/// Whether `name` names a pass or a tag of one (for checking --stop-after and friends).
bool isPassOrTag(const std::string &name);
/// Whether `name` is a strategy of the lift pass (OptimizerOptions::lift): global, local or cost.
bool isLiftStrategy(const std::string &name);

/// Runs the selected passes over `program.graph` in order, removing dead nodes after each, and keeps the
/// program's outputs and updates pointing at the rewritten values. Afterwards the graph verifies.
OptimizerProfile optimize(ir::Program &program, const OptimizerOptions &options);

/// The --opt-profile table: per pass seconds, share of the total, nodes before/after, validations, and the
/// rewrites applied by rule name.
std::string formatProfile(const OptimizerProfile &profile);
/// {"passes": [{"name", "seconds", "nodes_before", "nodes_after", "validations", "rewrites": {...}}]}
std::string profileJson(const OptimizerProfile &profile);

} // namespace tg::opt
