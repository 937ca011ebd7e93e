// The graph IR: construction with type inference, clients, replace/replaceAll, toposort, listeners, verifier.
#include "ir/Graph.h"

#include "ir/ScalarGraph.h"

#include <algorithm>
#include <gtest/gtest.h>

namespace tg::ir {
namespace {

TensorType f32(Shape shape) {
  return TensorType{DType::F32, std::move(shape), Place::Host};
}

TEST(GraphTest, AddNodeInfersTypeAndRecordsClients) {
  Graph graph;
  Value *x = graph.addInput(f32({Dim::named("n"), Dim::of(4)}), "x");
  Value *y = graph.addInput(f32({Dim::of(4)}), "y");
  Node *add = graph.addNode(Op(OpKind::Add), {x, y});
  EXPECT_EQ(add->output()->type().str(), "f32[n, 4]");
  ASSERT_EQ(x->clients().size(), 1u);
  EXPECT_EQ(x->clients()[0].node, add);
  EXPECT_EQ(y->clients()[0].index, 1u);
}

TEST(GraphTest, AFusedNodeOfSeveralOutputsLivesWhileAnyIsRead) {
  // fused(x, y) computing e = exp(x) and e + y, writing both: outputs e + y (first) and e (extra).
  Graph graph;
  Value *x = graph.addInput(f32({Dim::named("n")}), "x");
  Value *y = graph.addInput(f32({Dim::of(1)}), "y");
  OpAttrs attrs;
  auto body = std::make_shared<ScalarGraph>();
  body->inputDtypes = {DType::F32, DType::F32};
  body->body = {{OpKind::Exp, DType::F32, {0}}, {OpKind::Add, DType::F32, {2, 1}}};
  body->extraOutputs = {2};
  attrs.body = body;
  Node *fused = graph.addNode(Op(OpKind::Fused, attrs), {x, y});
  ASSERT_EQ(fused->outputs().size(), 2u);
  EXPECT_EQ(fused->outputs()[0], fused->output());
  EXPECT_EQ(fused->outputs()[1]->type().str(), "f32[n]");
  EXPECT_EQ(fused->outputs()[1]->owner(), fused);
  Node *reader = graph.addNode(Op(OpKind::Neg), {fused->outputs()[1]});
  graph.addOutput(reader->output());
  graph.removeDeadNodes();
  EXPECT_TRUE(graph.verify().empty()) << graph.verify().front();
  EXPECT_EQ(graph.liveNodeCount(), 2u) << "only the extra output is read, and that keeps the node";
  graph.setOutput(0, x);
  graph.removeDeadNodes();
  EXPECT_EQ(graph.liveNodeCount(), 0u) << "nothing reads either output";
}

TEST(GraphTest, AddNodeReportsShapeErrorsWithLocation) {
  Graph graph;
  Value *x = graph.addInput(f32({Dim::of(3)}), "x");
  Value *y = graph.addInput(f32({Dim::of(4)}), "y");
  SourceLoc loc{std::make_shared<const std::string>("a.tg"), 2, 7};
  try {
    graph.addNode(Op(OpKind::Add), {x, y}, loc);
    FAIL() << "expected a UserError";
  } catch (const UserError &error) {
    EXPECT_EQ(error.message, "cannot broadcast f32[3] with f32[4]");
    EXPECT_EQ(error.loc.str(), "a.tg:2:7");
  }
}

TEST(GraphTest, ToposortPutsProducersFirstAndSkipsDeadNodes) {
  Graph graph;
  Value *x = graph.addInput(f32({Dim::of(3)}), "x");
  Node *exp = graph.addNode(Op(OpKind::Exp), {x});
  Node *dead = graph.addNode(Op(OpKind::Log), {x});
  Node *neg = graph.addNode(Op(OpKind::Neg), {exp->output()});
  graph.addOutput(neg->output());
  std::vector<Node *> order = graph.toposort();
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], exp);
  EXPECT_EQ(order[1], neg);
  graph.removeDeadNodes();
  EXPECT_EQ(graph.nodes().size(), 2u);
  EXPECT_TRUE(x->clients().size() == 1 && x->clients()[0].node == exp) << "the dead node's use of x is gone";
  (void)dead;
}

TEST(GraphTest, ReplaceMovesEveryClientIncludingOutputs) {
  Graph graph;
  Value *x = graph.addInput(f32({Dim::of(3)}), "x");
  Node *exp = graph.addNode(Op(OpKind::Exp), {x});
  Node *neg = graph.addNode(Op(OpKind::Neg), {exp->output()});
  graph.addOutput(exp->output());
  graph.addOutput(neg->output());
  Node *sin = graph.addNode(Op(OpKind::Sin), {x});
  graph.replace(exp->output(), sin->output());
  EXPECT_EQ(neg->input(0), sin->output());
  EXPECT_EQ(graph.outputs()[0], sin->output());
  EXPECT_TRUE(exp->output()->clients().empty());
  EXPECT_EQ(sin->output()->clients().size(), 2u);
  EXPECT_TRUE(graph.verify().empty());
  // The cached order is rebuilt after the change.
  EXPECT_EQ(graph.toposort().front(), sin);
}

class CountingListener : public GraphListener {
public:
  void onNodeAdded(Node *) override { ++added; }
  void onInputChanged(Node *, size_t, Value *, Value *) override { ++changed; }
  void onNodeRemoved(Node *) override { ++removed; }
  int added = 0, changed = 0, removed = 0;
};

TEST(GraphTest, ReplaceAllNotifiesListenersOfEveryChange) {
  Graph graph;
  CountingListener listener;
  graph.addListener(&listener);
  Value *x = graph.addInput(f32({Dim::of(3)}), "x");
  Node *a = graph.addNode(Op(OpKind::Exp), {x});
  Node *b = graph.addNode(Op(OpKind::Log), {x});
  Node *sum = graph.addNode(Op(OpKind::Add), {a->output(), b->output()});
  graph.addOutput(sum->output());
  Node *c = graph.addNode(Op(OpKind::Sin), {x});
  Node *d = graph.addNode(Op(OpKind::Cos), {x});
  graph.replaceAll({{a->output(), c->output()}, {b->output(), d->output()}});
  EXPECT_EQ(listener.added, 5);
  EXPECT_EQ(listener.changed, 2);
  graph.removeDeadNodes();
  EXPECT_EQ(listener.removed, 2);
  graph.removeListener(&listener);
}

TEST(GraphTest, VerifierAcceptsAWellFormedGraph) {
  Graph graph;
  Value *x = graph.addInput(TensorType{DType::I32, {Dim::of(2), Dim::of(3)}, Place::Host}, "x");
  OpAttrs attrs;
  attrs.axes = {1};
  Node *sum = graph.addNode(Op(OpKind::Sum, attrs), {x});
  EXPECT_EQ(sum->output()->type().str(), "i64[2]");
  graph.addOutput(sum->output());
  EXPECT_TRUE(graph.verify().empty());
}

TEST(GraphTest, VerifierReportsANodeWhoseInputsNoLongerFit) {
  Graph graph;
  Value *x = graph.addInput(f32({Dim::of(4)}), "x");
  Value *y = graph.addInput(f32({Dim::of(4)}), "y");
  Value *z = graph.addInput(f32({Dim::of(5)}), "z");
  Node *add = graph.addNode(Op(OpKind::Add), {x, y});
  graph.addOutput(add->output());
  graph.substitute(y, z); // same dtype and rank, so allowed unchecked; the shapes no longer broadcast
  std::vector<std::string> problems = graph.verify();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("node 0 (add): "), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("broadcast"), std::string::npos) << problems[0];
}

/// x -> exp -> exp -> ... (`length` nodes), the last one the graph's output.
Node *buildExpChain(Graph &graph, Value *x, int length) {
  Node *node = nullptr;
  for (int i = 0; i < length; ++i)
    node = graph.addNode(Op(OpKind::Exp), {node ? node->output() : x});
  graph.addOutput(node->output());
  return node;
}

TEST(GraphTest, SweepsAfterSmallAndLargeChangesRemoveExactlyTheUnreachable) {
  Graph graph;
  CountingListener listener;
  graph.addListener(&listener);
  Value *x = graph.addInput(f32({Dim::of(3)}), "x");
  Node *last = buildExpChain(graph, x, 100);
  graph.removeDeadNodes();
  EXPECT_EQ(graph.liveNodeCount(), 100u);
  // A small change (one of 100 nodes): the sweep follows the change, through the nodes only it read.
  Node *lastButOne = last->input(0)->owner();
  Node *sin = graph.addNode(Op(OpKind::Sin), {lastButOne->input(0)});
  graph.substitute(lastButOne->output(), sin->output());
  graph.removeDeadNodes();
  EXPECT_EQ(listener.removed, 1);
  EXPECT_EQ(graph.liveNodeCount(), 100u);
  EXPECT_TRUE(graph.verify().empty());
  // The whole chain replaced by one node, with the order known (as after verify): the dead are what the
  // order no longer lists.
  Node *cos = graph.addNode(Op(OpKind::Cos), {x});
  graph.setOutput(0, cos->output());
  EXPECT_EQ(graph.toposort(), std::vector<Node *>{cos});
  graph.removeDeadNodes();
  EXPECT_EQ(listener.removed, 101);
  EXPECT_EQ(graph.liveNodeCount(), 1u);
  EXPECT_EQ(graph.nodes(), std::vector<Node *>{cos});
  ASSERT_EQ(x->clients().size(), 1u);
  EXPECT_EQ(x->clients()[0].node, cos);
  EXPECT_TRUE(graph.verify().empty());
  graph.removeListener(&listener);
}

/// x -> exp -> neg -> output 0: nodes 0 and 1.
struct ExpNeg {
  Value *x;
  Node *exp, *neg;
};
ExpNeg buildExpNeg(Graph &graph) {
  Value *x = graph.addInput(f32({Dim::of(3)}), "x");
  Node *exp = graph.addNode(Op(OpKind::Exp), {x});
  Node *neg = graph.addNode(Op(OpKind::Neg), {exp->output()});
  graph.addOutput(neg->output());
  return {x, exp, neg};
}

TEST(GraphTest, AnAssertedOrderDropsTheKnownDead) {
  Graph graph;
  CountingListener listener;
  graph.addListener(&listener);
  auto [x, exp, neg] = buildExpNeg(graph);
  Node *tanh = graph.addNode(Op(OpKind::Tanh), {x});
  graph.substitute(neg->output(), tanh->output());
  graph.assumeToposort({tanh}, std::vector<Node *>{neg, exp});
  EXPECT_EQ(listener.removed, 2);
  EXPECT_EQ(graph.liveNodeCount(), 1u);
  ASSERT_EQ(x->clients().size(), 1u);
  EXPECT_EQ(x->clients()[0].node, tanh);
  EXPECT_TRUE(graph.verify().empty());
  graph.removeDeadNodes(); // nothing left for the sweep
  EXPECT_EQ(listener.removed, 2);
  EXPECT_EQ(graph.nodes(), std::vector<Node *>{tanh});
  graph.removeListener(&listener);
}

TEST(GraphTest, ANodeRemovedWhileReadIsRefusedOrReported) {
  Graph graph;
  auto [x, exp, neg] = buildExpNeg(graph);
  // `neg` still reads `exp`: a debug build refuses to remove it, a release build leaves it to verify().
#ifndef NDEBUG
  EXPECT_DEATH(graph.assumeToposort({neg}, std::vector<Node *>{exp}), "is removed while node 1 reads it");
#else
  graph.assumeToposort({neg}, std::vector<Node *>{exp});
  std::vector<std::string> problems = graph.verify();
  EXPECT_NE(std::find(problems.begin(), problems.end(), "node 1 (neg): input 0 comes from a removed node"),
            problems.end());
#endif
}

TEST(GraphTest, VerifierChecksTheOrderAPassAsserts) {
  // x -> exp -> neg -> output, and tanh(x), which nothing reads.
  Graph graph;
  auto [x, exp, neg] = buildExpNeg(graph);
  Node *tanh = graph.addNode(Op(OpKind::Tanh), {x});
  auto problemsWith = [&graph](std::vector<Node *> order) {
    graph.assumeToposort(std::move(order), {});
    std::string all;
    for (const std::string &problem : graph.verify())
      all += problem + "; ";
    return all;
  };
  auto mentions = [](const std::string &problems, const std::string &text) {
    return problems.find(text) != std::string::npos;
  };
  // An asserted order says every other node is removed; tanh is not.
  EXPECT_PRED2(mentions, problemsWith({exp, neg}), "the order lists 2 of the 3 live nodes");
  EXPECT_PRED2(mentions, problemsWith({exp, tanh, neg}), "node 2 (tanh): is listed but nothing reads it");
  graph.assumeToposort({exp, neg}, std::vector<Node *>{tanh});
  EXPECT_EQ(problemsWith({exp, neg}), "");
  EXPECT_PRED2(mentions, problemsWith({neg, exp}),
               "node 1 (neg): input 0 comes from node 0, listed after it");
  EXPECT_PRED2(mentions, problemsWith({neg}),
               "node 1 (neg): input 0 comes from node 0, which the order does not list");
  EXPECT_PRED2(mentions, problemsWith({exp}), "output 0 comes from node 1, which the order does not list");
  EXPECT_PRED2(mentions, problemsWith({exp, exp, neg}), "node 0 (exp): is listed twice in the order");
  EXPECT_PRED2(mentions, problemsWith({exp, tanh, neg}),
               "node 2 (tanh): is listed in the order although removed");
}

TEST(GraphTest, ConstantsCarryTheirData) {
  Graph graph;
  Value *c = graph.addConstant(TensorData::scalar(DType::F64, 2.5));
  EXPECT_TRUE(c->isConstant());
  EXPECT_EQ(c->type().str(), "f64");
  EXPECT_EQ(c->constant().get(0), 2.5);
}

TEST(TypeTest, BroadcastFollowsNumPyAndKeepsSymbols) {
  auto shape = broadcastShapes({Dim::of(3), Dim::of(1)}, {Dim::of(4)});
  ASSERT_TRUE(shape);
  EXPECT_EQ(shapeString(*shape), "[3, 4]");
  EXPECT_FALSE(broadcastShapes({Dim::of(3)}, {Dim::of(4)}));
  shape = broadcastShapes({Dim::named("n"), Dim::of(1)}, {Dim::of(1), Dim::of(5)});
  ASSERT_TRUE(shape);
  EXPECT_EQ(shapeString(*shape), "[n, 5]");
}

TEST(TypeTest, ReshapeInfersTheOneSymbolicSizeItCanName) {
  Graph graph;
  Value *labels = graph.addInput(f32({Dim::named("n")}), "labels");
  Value *rows = graph.addInput(f32({Dim::named("n"), Dim::of(3)}), "rows");
  Value *grid = graph.addInput(f32({Dim::named("n"), Dim::named("m")}), "grid");
  auto reshaped = [&](Value *input, std::vector<int64_t> target) {
    OpAttrs attrs;
    attrs.shape = std::move(target);
    return graph.addNode(Op(OpKind::Reshape, attrs), {input})->output()->type().str();
  };
  EXPECT_EQ(reshaped(labels, {-1, 1}), "f32[n, 1]");
  EXPECT_EQ(reshaped(rows, {-1, 3}), "f32[n, 3]");
  EXPECT_EQ(reshaped(rows, {3, -1}), "f32[3, n]");
  // The sizes no longer match one symbol: the -1 is a new one.
  EXPECT_EQ(reshaped(rows, {-1}), "f32[reshape0]");
  EXPECT_EQ(reshaped(rows, {-1, 1, 1}), "f32[reshape0, 1, 1]");
  EXPECT_EQ(reshaped(grid, {-1, 1}), "f32[reshape0, 1]");
}

TEST(TypeTest, PromotionFollowsNumPy) {
  EXPECT_EQ(promote(DType::I32, DType::F32), DType::F64);
  EXPECT_EQ(promote(DType::I32, DType::I64), DType::I64);
  EXPECT_EQ(promote(DType::Bool, DType::I32), DType::I32);
  EXPECT_EQ(promote(DType::F32, DType::F64), DType::F64);
  EXPECT_EQ(promote(DType::F32, DType::F32), DType::F32);
}

TEST(OpTest, EqualOpsHashEqualAndPrintTheirAttributes) {
  OpAttrs attrs;
  attrs.axes = {0, 2};
  attrs.keepdims = true;
  Op a(OpKind::Sum, attrs), b(OpKind::Sum, attrs);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(a, Op(OpKind::Sum));
  EXPECT_EQ(a.str(), "sum{axes=[0, 2], keepdims}");
  EXPECT_STREQ(opInfo(OpKind::Sort).name, "sort");
  EXPECT_FALSE(opInfo(OpKind::Sort).hasDevice);
  EXPECT_TRUE(opInfo(OpKind::Exp).hasDevice);
}

} // namespace
} // namespace tg::ir
