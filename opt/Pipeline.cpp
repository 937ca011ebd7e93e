#include "opt/Pipeline.h"

#include "ir/Assert.h"
#include "ir/Loop.h"
#include "ir/Printers.h"
#include "opt/Canonicalize.h"
#include "opt/ConstantFold.h"
#include "opt/CostDeviceLift.h"
#include "opt/CutTransfers.h"
#include "opt/Equilibrium.h"
#include "opt/Fusion.h"
#include "opt/GlobalDeviceLift.h"
#include "opt/LocalDeviceLift.h"
#include "opt/LoopInvariants.h"
#include "opt/Merge.h"
#include "opt/Shard.h"
#include "opt/Specialize.h"
#include "opt/Stabilize.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

namespace tg::opt {

namespace {

void runMerge(ir::Graph &graph, RewriteContext &, PassProfile &profile, const OptimizerOptions &) {
  mergeEquivalent(graph, profile);
}

/// Each scan's body optimized as a program of its own, by the whole pipeline (nested loops too), after the
/// placement passes have placed the scan: a scan on the device gets its body lifted there, its array inputs
/// and outputs kept in device memory. The scan is rebuilt around an optimized copy (a loop's body is shared
/// by every copy of its op, so it is never changed in place).
void runLoopBodies(ir::Graph &graph, RewriteContext &, PassProfile &profile,
                   const OptimizerOptions &options) {
  OptimizerOptions bodyOptions = options;
  bodyOptions.printAfter.clear();
  bodyOptions.pricePlacement = false;
  bodyOptions.placement = nullptr;
  bodyOptions.lift = "global"; // a body on the device goes there whole: its inputs already are
  bodyOptions.shard.clear();   // a loop's operands are whole (opt/Shard.h)
  std::vector<std::pair<ir::Value *, ir::Value *>> replacements;
  for (ir::Node *node : graph.toposort()) {
    if (node->op().kind() != ir::OpKind::Scan) continue;
    const ir::Loop &placed = *node->op().attrs().loop;
    std::shared_ptr<ir::Loop> loop = ir::copyLoop(placed.unplaced ? *placed.unplaced : placed);
    size_t before = loop->body.graph.liveNodeCount();
    bodyOptions.device = bodyOptions.residentBody = node->op().place() == ir::Place::Device;
    optimize(loop->body, bodyOptions);
    profile.details["loop body nodes in"] += static_cast<double>(before);
    profile.details["loop body nodes out"] += static_cast<double>(loop->body.graph.liveNodeCount());
    ir::Node *optimized =
        ir::rebuildScan(graph, *node, std::move(loop), {node->inputs().begin(), node->inputs().end()});
    for (size_t k = 0; k < node->outputs().size(); ++k)
      replacements.push_back({node->outputs()[k], optimized->outputs()[k]});
  }
  if (!replacements.empty()) graph.replaceAll(replacements);
}

void runLoopInvariants(ir::Graph &graph, RewriteContext &, PassProfile &profile, const OptimizerOptions &) {
  hoistLoopInvariants(graph, profile);
}

void runConstantFold(ir::Graph &, RewriteContext &context, PassProfile &profile, const OptimizerOptions &) {
  rewriteToFixedPoint(context, {constantFoldRule()}, profile);
}

/// A rewrite set to a fixed point, with constant folding, then merge when anything changed (rewrites often
/// make equal nodes; an unchanged graph has none, the previous merge saw to it).
void runRuleSet(RewriteContext &context, std::vector<RewriteRule> rules, PassProfile &profile) {
  rules.push_back(constantFoldRule());
  uint64_t before = context.graph.version();
  rewriteToFixedPoint(context, rules, profile);
  if (context.graph.version() == before) return;
  context.graph.removeDeadNodes();
  mergeEquivalent(context.graph, profile);
}

void runCanonicalize(ir::Graph &, RewriteContext &context, PassProfile &profile, const OptimizerOptions &) {
  std::vector<RewriteRule> rules = canonicalizeRules();
  for (RewriteRule &rule : cutTransferRules())
    rules.push_back(std::move(rule));
  runRuleSet(context, std::move(rules), profile);
}
void runStabilize(ir::Graph &, RewriteContext &context, PassProfile &profile, const OptimizerOptions &) {
  runRuleSet(context, stabilizeRules(), profile);
}
void runSpecialize(ir::Graph &, RewriteContext &context, PassProfile &profile, const OptimizerOptions &) {
  runRuleSet(context, specializeRules(), profile);
}
void runShard(ir::Graph &graph, RewriteContext &, PassProfile &profile, const OptimizerOptions &options) {
  shardAlong(graph, options.shard, profile);
}
void runLift(ir::Graph &graph, RewriteContext &context, PassProfile &profile,
             const OptimizerOptions &options) {
  TG_ASSERT(isLiftStrategy(options.lift)) << "unknown lift strategy '" << options.lift << "'";
  if (options.lift == "local")
    localDeviceLift(graph, context, profile);
  else if (options.lift == "cost")
    costDeviceLift(graph, context, profile, options.costModel);
  else
    globalDeviceLift(graph, context, profile);
}
/// Once transfers are final, what the placement costs under the model, when asked (--emit=json): every
/// strategy is priced alike.
void recordEstimate(const ir::Graph &graph, PassProfile &profile, const OptimizerOptions &options) {
  if (!options.pricePlacement) return;
  PlacementEstimate estimate = estimatePlacedGraph(graph, options.costModel);
  profile.details["estimated seconds"] = estimate.seconds();
  profile.details["estimated transfer bytes"] = estimate.transferBytes;
  profile.details["estimated transfers"] = static_cast<double>(estimate.transfers);
}
void runCutTransfers(ir::Graph &graph, RewriteContext &context, PassProfile &profile,
                     const OptimizerOptions &options) {
  uint64_t before = graph.version();
  rewriteToFixedPoint(context, cutTransferRules(), profile);
  if (graph.version() != before) {
    graph.removeDeadNodes();
    mergeEquivalent(graph, profile);
  }
  recordEstimate(graph, profile, options);
}

void runFusion(ir::Graph &graph, RewriteContext &context, PassProfile &profile, const OptimizerOptions &) {
  fuseElementwise(graph, profile, context.placement);
}

bool selected(const PassInfo &pass, const OptimizerOptions &options) {
  auto matches = [&](const std::vector<std::string> &query) {
    for (const std::string &entry : query)
      if (entry == pass.name || std::count(pass.tags.begin(), pass.tags.end(), entry)) return true;
    return false;
  };
  if (std::count(pass.tags.begin(), pass.tags.end(), "distributed")) return !options.shard.empty();
  bool byDefault = std::count(pass.tags.begin(), pass.tags.end(), "fast_run") > 0;
  bool needsDevice = std::count(pass.tags.begin(), pass.tags.end(), "device") > 0;
  return (byDefault || matches(options.include)) && !matches(options.exclude) &&
         (options.device || !needsDevice);
}

} // namespace

const std::vector<PassInfo> &passTable() {
  static const std::vector<PassInfo> table{
      {"merge", 0, {"fast_run", "fast_compile", "merge"}, runMerge},
      {"constant-fold", 0.5, {"fast_run", "fast_compile"}, runConstantFold},
      {"canonicalize", 1, {"fast_run", "fast_compile", "rewrite"}, runCanonicalize},
      {"stabilize", 1.5, {"fast_run", "rewrite"}, runStabilize},
      {"specialize", 2, {"fast_run", "rewrite"}, runSpecialize},
      {"shard", 2.5, {"fast_run", "fast_compile", "distributed"}, runShard},
      {"lift", 3, {"fast_run", "device"}, runLift},
      {"cut-transfers", 3.5, {"fast_run", "device"}, runCutTransfers},
      {"loop-bodies", 3.75, {"fast_run", "fast_compile", "loops"}, runLoopBodies},
      {"loop-invariants", 3.8, {"fast_run", "loops"}, runLoopInvariants},
      {"fusion", 4, {"fast_run", "fusion"}, runFusion},
  };
  return table;
}

bool isLiftStrategy(const std::string &name) {
  return name == "global" || name == "local" || name == "cost";
}

bool isPassOrTag(const std::string &name) {
  for (const PassInfo &pass : passTable())
    if (pass.name == name || std::count(pass.tags.begin(), pass.tags.end(), name)) return true;
  return false;
}

double OptimizerProfile::seconds() const {
  double total = 0;
  for (const PassProfile &pass : passes)
    total += pass.seconds;
  return total;
}

OptimizerProfile optimize(ir::Program &program, const OptimizerOptions &options) {
  OptimizerProfile profile;
  ir::Graph &graph = program.graph;
  RewriteContext context(graph, options.evaluate ? &options.evaluate : nullptr, options.foldLimit);
  context.placement = options.placement;
  for (size_t i = 0; i < program.params.size(); ++i)
    if (!program.params[i].value->type().isScalar())
      context.residentInputs.push_back(program.inputs.size() + i);
  for (size_t i = 0; i < program.updates.size(); ++i)
    if (!program.updates[i].value->type().isScalar())
      context.residentOutputs.push_back(program.outputs.size() + i);
  if (options.residentBody) {
    for (size_t i = 0; i < program.inputs.size(); ++i)
      if (!program.inputs[i].value->type().isScalar()) context.residentInputs.push_back(i);
    for (size_t i = 0; i < program.outputs.size(); ++i)
      if (!program.outputs[i].value->type().isScalar()) context.residentOutputs.push_back(i);
  }
  graph.removeDeadNodes(); // so that the live count is the reachable count from the first pass on
#ifndef NDEBUG
  bool verify = true;
#else
  bool verify = options.verifyEach;
#endif
  for (const PassInfo &pass : passTable()) {
    if (!selected(pass, options)) continue;
    PassProfile passProfile;
    passProfile.name = pass.name;
    auto start = std::chrono::steady_clock::now();
    passProfile.nodesBefore = graph.liveNodeCount();
    pass.run(graph, context, passProfile, options);
    graph.removeDeadNodes();
    if (verify) {
      graph.verifyOrDie();
      ++passProfile.validations;
    }
    passProfile.nodesAfter = graph.liveNodeCount();
    passProfile.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    program.syncWithGraph();
    if (options.log) {
      for (const std::string &warning : passProfile.warnings)
        *options.log << "tgc: warning: " << pass.name << ": " << warning << "\n";
      if (options.printAfter == pass.name) {
        bool changed = passProfile.nodesBefore != passProfile.nodesAfter || !passProfile.rewrites.empty();
        *options.log << "# after " << pass.name << (changed ? "" : " (unchanged)") << "\n"
                     << ir::printIr(program);
      }
    }
    profile.passes.push_back(std::move(passProfile));
    if (options.stopAfter == pass.name) break;
  }
  if (!verify) graph.verifyOrDie(); // the one validation of a release build
  return profile;
}

std::string formatProfile(const OptimizerProfile &profile) {
  std::ostringstream out;
  double total = profile.seconds();
  char line[256];
  std::snprintf(line, sizeof line, "%-16s %10s %7s %8s %8s %6s  %s\n", "pass", "seconds", "share", "nodes in",
                "out", "valid", "rewrites");
  out << line;
  for (const PassProfile &pass : profile.passes) {
    size_t applied = 0;
    for (const auto &[rule, count] : pass.rewrites)
      applied += count;
    std::snprintf(line, sizeof line, "%-16s %10.6f %6.1f%% %8zu %8zu %6zu  %zu\n", pass.name.c_str(),
                  pass.seconds, total > 0 ? 100 * pass.seconds / total : 0.0, pass.nodesBefore,
                  pass.nodesAfter, pass.validations, applied);
    out << line;
    for (const auto &[rule, count] : pass.rewrites)
      out << "    " << count << "  " << rule << "\n";
    for (const auto &[name, value] : pass.details)
      out << "    " << name << ": " << value << "\n";
  }
  std::snprintf(line, sizeof line, "%-16s %10.6f\n", "total", total);
  out << line;
  return out.str();
}

std::string profileJson(const OptimizerProfile &profile) {
  std::ostringstream out;
  out << "{\"passes\": [";
  for (size_t i = 0; i < profile.passes.size(); ++i) {
    const PassProfile &pass = profile.passes[i];
    out << (i ? ", " : "") << "{\"name\": " << ir::jsonQuote(pass.name) << ", \"seconds\": " << pass.seconds
        << ", \"nodes_before\": " << pass.nodesBefore << ", \"nodes_after\": " << pass.nodesAfter
        << ", \"validations\": " << pass.validations << ", \"rewrites\": {";
    bool first = true;
    for (const auto &[rule, count] : pass.rewrites) {
      out << (first ? "" : ", ") << ir::jsonQuote(rule) << ": " << count;
      first = false;
    }
    out << "}, \"details\": {";
    first = true;
    for (const auto &[name, value] : pass.details) {
      out << (first ? "" : ", ") << ir::jsonQuote(name) << ": " << value;
      first = false;
    }
    out << "}}";
  }
  out << "], \"seconds\": " << profile.seconds() << "}";
  return out.str();
}

} // namespace tg::opt
