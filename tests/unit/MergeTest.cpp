// Merge on random graphs full of duplicates: it removes the nodes it merges and keeps the graph's order
// without a new walk (Graph::assumeToposort), checked by verify(), leaving exactly the nodes a walk from the
// outputs reaches.
#include "opt/Merge.h"

#include "ir/Graph.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <random>
#include <set>

namespace tg::opt {
namespace {

using ir::Node;
using ir::OpKind;
using ir::Value;

/// A random DAG over two inputs and a few repeated constants, drawn from few op kinds so that many nodes
/// compute the same thing; some nodes are never read (dead from the start).
void buildRandomGraph(ir::Graph &graph, uint32_t seed) {
  std::mt19937 random(seed);
  auto pick = [&random](size_t count) { return std::uniform_int_distribution<size_t>(0, count - 1)(random); };
  ir::TensorType type{ir::DType::F32, {ir::Dim::of(3)}, ir::Place::Host};
  std::vector<Value *> values{graph.addInput(type, "x"), graph.addInput(type, "y")};
  for (int i = 0; i < 40; ++i) {
    if (pick(6) == 0) {
      values.push_back(graph.addConstant(ir::TensorData::scalar(ir::DType::F32, double(pick(2)))));
      continue;
    }
    // Reads mostly recent values, so that chains of duplicates form (merging one makes its readers equal).
    auto operand = [&] { return values[values.size() - 1 - pick(std::min<size_t>(values.size(), 6))]; };
    static const OpKind unary[] = {OpKind::Exp, OpKind::Neg}, binary[] = {OpKind::Add, OpKind::Mul};
    Node *node = pick(2) ? graph.addNode(ir::Op(unary[pick(2)]), {operand()})
                         : graph.addNode(ir::Op(binary[pick(2)]), {operand(), operand()});
    values.push_back(node->output());
  }
  for (int i = 0; i < 3; ++i)
    graph.addOutput(values[values.size() - 1 - pick(10)]);
}

/// The graph's order, checked by verify(): each node the outputs depend on once, producers first.
std::vector<Node *> checkedOrder(const ir::Graph &graph) {
  std::vector<std::string> problems = graph.verify();
  EXPECT_TRUE(problems.empty()) << problems.front();
  return graph.toposort();
}

TEST(MergeTest, KeepsAValidOrderAndLeavesNoDuplicates) {
  size_t merged = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    ir::Graph graph;
    buildRandomGraph(graph, seed);
    PassProfile profile;
    mergeEquivalent(graph, profile);
    merged += profile.rewrites["merge nodes"];
    std::vector<Node *> assumed = checkedOrder(graph);
    std::set<std::pair<std::string, std::vector<Value *>>> seen;
    for (Node *node : assumed) {
      std::vector<Value *> inputs(node->inputs().begin(), node->inputs().end());
      EXPECT_TRUE(seen.insert({node->op().str(), inputs}).second)
          << "seed " << seed << ": node " << node->id() << " still has a duplicate";
    }
  }
  EXPECT_GT(merged, 100u) << "the graphs should hold many duplicates";
}

TEST(MergeTest, FindsEqualReadersOfAValueWhoseReadersOutgrowTheScan) {
  // v and w are equal; v's four readers are kept while v has few readers (found by scanning them), then w's
  // five readers move onto v, past the scan's limit, and must still find their equals among v's readers.
  ir::Graph graph;
  Value *x = graph.addInput(ir::TensorType{ir::DType::F32, {ir::Dim::of(3)}, ir::Place::Host}, "x");
  auto read = [&](Value *value, OpKind kind) { return graph.addNode(ir::Op(kind), {value})->output(); };
  static const OpKind kinds[] = {OpKind::Sin, OpKind::Cos, OpKind::Neg, OpKind::Abs, OpKind::Tanh};
  Value *v = read(x, OpKind::Exp);
  for (size_t i = 0; i < 4; ++i)
    graph.addOutput(read(v, kinds[i]));
  Value *w = read(x, OpKind::Exp);
  for (OpKind kind : kinds)
    graph.addOutput(read(w, kind));
  PassProfile profile;
  mergeEquivalent(graph, profile);
  EXPECT_EQ(profile.rewrites["merge nodes"], 5u); // w, and w's sin, cos, neg and abs
  graph.removeDeadNodes();
  EXPECT_EQ(graph.liveNodeCount(), 6u); // exp and its five distinct readers
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(graph.outputs()[i], graph.outputs()[4 + i]) << "output " << i;
  EXPECT_TRUE(graph.verify().empty());
}

TEST(MergeTest, LeavesExactlyTheReachableNodes) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    ir::Graph graph;
    buildRandomGraph(graph, seed);
    PassProfile profile;
    mergeEquivalent(graph, profile);
    std::vector<Node *> reachable = checkedOrder(graph);
    std::sort(reachable.begin(), reachable.end(), [](Node *a, Node *b) { return a->id() < b->id(); });
    ASSERT_EQ(graph.nodes(), reachable) << "seed " << seed;
    EXPECT_EQ(graph.liveNodeCount(), reachable.size()) << "seed " << seed;
    for (Node *node : reachable)
      for (Value *input : node->inputs())
        for (const ir::Use &use : input->clients())
          EXPECT_TRUE(!use.node || std::binary_search(reachable.begin(), reachable.end(), use.node,
                                                      [](Node *a, Node *b) { return a->id() < b->id(); }))
              << "seed " << seed << ": a dead reader is still listed";
  }
}

} // namespace
} // namespace tg::opt
