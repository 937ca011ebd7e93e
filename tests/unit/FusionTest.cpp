// The fusion pass: fused nodes compute what their clusters did (random graphs, run before and after: the
// fused ones through generated kernels, within the ulps libmvec and libm differ by) and the order the pass
// leaves without a walk is valid (verify(): a node kept alive or removed wrongly fails it), clusters respect
// the kernel-argument limit, and a 10,000-node elementwise chain becomes kernels of the size cap that run.
// Kernel counts for scripts are pinned by the golden tests in tests/lit/fusion.
#include "opt/Fusion.h"

#include "ir/Graph.h"
#include "ir/ScalarGraph.h"
#include "runtime/Executor.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <random>

namespace tg::opt {
namespace {

using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::Value;

ir::TensorType f32(std::vector<int64_t> shape) {
  ir::Shape dims;
  for (int64_t d : shape)
    dims.push_back(ir::Dim::of(d));
  return {DType::F32, dims, ir::Place::Host};
}

runtime::Tensor randomTensor(const ir::TensorType &type, std::mt19937 &random) {
  std::vector<int64_t> shape;
  for (const ir::Dim &d : type.shape)
    shape.push_back(d.size());
  ir::TensorData data(DType::F32, shape);
  std::uniform_real_distribution<double> uniform(-2, 2);
  for (int64_t i = 0; i < data.numElements(); ++i)
    data.set(i, uniform(random));
  return runtime::Tensor::fromData(data);
}

std::vector<ir::TensorData> run(const ir::Graph &graph, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<runtime::Tensor> inputs;
  for (const Value *input : graph.inputs())
    inputs.push_back(randomTensor(input->type(), random));
  runtime::Executor executor(graph);
  std::vector<ir::TensorData> results;
  for (const runtime::Tensor &output : executor.run(inputs))
    results.push_back(output.toData());
  return results;
}

size_t countKernels(const ir::Graph &graph) {
  size_t kernels = 0;
  for (const Node *node : graph.toposort()) {
    EXPECT_FALSE(node->op().kind() != OpKind::Fused && ir::isScalarOp(node->op().kind()))
        << node->op().str() << " was left outside a kernel";
    kernels += node->op().kind() == OpKind::Fused;
  }
  return kernels;
}

/// A random DAG of elementwise ops over inputs of broadcastable shapes, with 0-d constants, values read by
/// several nodes, and a reduction in the middle (which fusion must leave alone).
void buildRandomGraph(ir::Graph &graph, uint32_t seed) {
  std::mt19937 random(seed);
  auto pick = [&random](size_t count) { return std::uniform_int_distribution<size_t>(0, count - 1)(random); };
  std::vector<Value *> values{graph.addInput(f32({3, 4}), "x"), graph.addInput(f32({4}), "v"),
                              graph.addInput(f32({3, 1}), "s")};
  static const OpKind unary[] = {OpKind::Exp, OpKind::Neg, OpKind::Tanh, OpKind::Abs, OpKind::Sigmoid};
  static const OpKind binary[] = {OpKind::Add, OpKind::Mul, OpKind::Sub, OpKind::Maximum};
  for (int i = 0; i < 30; ++i) {
    auto operand = [&] { return values[values.size() - 1 - pick(std::min<size_t>(values.size(), 5))]; };
    Value *made;
    switch (pick(6)) {
    case 0:
      made = graph.addConstant(ir::TensorData::scalar(DType::F32, 0.25 * double(pick(8))));
      break;
    case 1: {
      ir::OpAttrs attrs;
      attrs.axes = {0};
      attrs.keepdims = true;
      Value *x = operand();
      made = x->type().rank() == 2 ? graph.addNode(ir::Op(OpKind::Sum, attrs), {x})->output() : x;
      break;
    }
    case 2:
    case 3:
      made = graph.addNode(ir::Op(unary[pick(5)]), {operand()})->output();
      break;
    default:
      made = graph.addNode(ir::Op(binary[pick(4)]), {operand(), operand()})->output();
    }
    values.push_back(made);
  }
  for (int i = 0; i < 3; ++i) {
    Value *output = values[values.size() - 1 - pick(6)];
    if (output->owner()) graph.addOutput(output);
  }
  if (graph.outputs().empty()) graph.addOutput(values.back()->owner() ? values.back() : values[0]);
}

bool sameBits(const ir::TensorData &a, const ir::TensorData &b) {
  return a.shape == b.shape && a.bytes == b.bytes;
}

/// Equal but for the last bits of transcendental functions: the generated host kernels call libmvec's vector
/// exp, tanh, ... where the CPU kernels call libm, a few ulp apart.
bool closeEnough(const ir::TensorData &a, const ir::TensorData &b) {
  if (a.shape != b.shape || a.dtype != b.dtype) return false;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    double x = a.get(i), y = b.get(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    if (std::abs(x - y) > 1e-5 * std::max(std::abs(x), std::abs(y)) + 1e-30) return false;
  }
  return true;
}

TEST(FusionTest, FusedGraphsComputeWhatTheirClustersDid) {
  size_t fusedOps = 0, kernels = 0, multiOutput = 0;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    ir::Graph before, after;
    buildRandomGraph(before, seed);
    buildRandomGraph(after, seed);
    PassProfile profile;
    fuseElementwise(after, profile);
    after.removeDeadNodes();
    ASSERT_TRUE(after.verify().empty()) << "seed " << seed << ": " << after.verify().front();
    kernels += countKernels(after);
    for (const Node *node : after.toposort())
      multiOutput += node->outputs().size() > 1;
    fusedOps += static_cast<size_t>(profile.details["fused ops"]);
    std::vector<ir::TensorData> expected = run(before, seed), actual = run(after, seed);
    ASSERT_EQ(expected.size(), actual.size());
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_TRUE(closeEnough(expected[i], actual[i])) << "seed " << seed << ", output " << i;
  }
  EXPECT_GT(fusedOps, kernels + 500) << "the random graphs should have many multi-op clusters";
  EXPECT_GT(multiOutput, 50u) << "and many kernels that write values read outside them";
}

/// Fuses `graph`, checks it, and returns its fused nodes in order.
std::vector<const Node *> fuseAndList(ir::Graph &graph) {
  PassProfile profile;
  fuseElementwise(graph, profile);
  graph.removeDeadNodes();
  EXPECT_TRUE(graph.verify().empty()) << graph.verify().front();
  std::vector<const Node *> fused;
  for (const Node *node : graph.toposort())
    if (node->op().kind() == OpKind::Fused) fused.push_back(node);
  return fused;
}

void expectSameResults(const std::vector<ir::TensorData> &before, const std::vector<ir::TensorData> &after) {
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_TRUE(closeEnough(before[i], after[i])) << "output " << i;
}

TEST(FusionTest, AValueReadOutsideItsClusterIsAnOutputOfTheKernel) {
  // logreg's forward chain: z = x + b, p = sigmoid(z), c = clip(p): each value is also read by the gradient
  // (here: graph outputs and a matmul), so one kernel writes all three.
  ir::Graph graph;
  Value *x = graph.addInput(f32({8, 8}), "x");
  Value *b = graph.addInput(f32({8}), "b");
  Value *z = graph.addNode(ir::Op(OpKind::Add), {x, b})->output();
  Value *p = graph.addNode(ir::Op(OpKind::Sigmoid), {z})->output();
  Value *low = graph.addConstant(ir::TensorData::scalar(DType::F32, 0.1));
  Value *high = graph.addConstant(ir::TensorData::scalar(DType::F32, 0.9));
  Value *c = graph.addNode(ir::Op(OpKind::Clip), {p, low, high})->output();
  graph.addOutput(c);
  graph.addOutput(graph.addNode(ir::Op(OpKind::Matmul), {p, x})->output());
  graph.addOutput(z);
  std::vector<ir::TensorData> before = run(graph, 3);
  std::vector<const Node *> fused = fuseAndList(graph);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0]->outputs().size(), 3u) << fused[0]->op().str();
  EXPECT_EQ(fused[0]->inputs().size(), 2u) << "x and b; the body computes the rest";
  expectSameResults(before, run(graph, 3));
}

TEST(FusionTest, AKernelComesAfterWhatItReadsAndBeforeWhatReadsItsOutputs) {
  // e = exp(x) is read by a matmul whose product the root reads: a kernel computing e and e * m would read
  // its own output. e stays a kernel of its own.
  ir::Graph graph;
  Value *x = graph.addInput(f32({6, 6}), "x");
  Value *e = graph.addNode(ir::Op(OpKind::Exp), {x})->output();
  Value *m = graph.addNode(ir::Op(OpKind::Matmul), {e, x})->output();
  graph.addOutput(graph.addNode(ir::Op(OpKind::Mul), {e, m})->output());
  std::vector<ir::TensorData> before = run(graph, 5);
  std::vector<const Node *> fused = fuseAndList(graph);
  ASSERT_EQ(fused.size(), 2u);
  for (const Node *node : fused)
    EXPECT_EQ(node->outputs().size(), 1u) << node->op().str();
  expectSameResults(before, run(graph, 5));
}

TEST(FusionTest, AReductionWritesItsPrologueValueWhenMemoryMustHoldIt) {
  // relu's gradient: v = where(y > 0, g, 0) is read by a matmul (the weights' gradient) and summed (the
  // bias's): one kernel reads y and g once, writing v and the sum. Over either axis, so that both the
  // row (contiguous) and the column (strided, blocked) reduction write it.
  for (int64_t axis : {0, 1}) {
    ir::Graph graph;
    Value *y = graph.addInput(f32({64, 96}), "y");
    Value *g = graph.addInput(f32({64, 96}), "g");
    Value *w = graph.addInput(f32({96, 8}), "w");
    Value *zero = graph.addConstant(ir::TensorData::scalar(DType::F32, 0));
    Value *mask = graph.addNode(ir::Op(OpKind::Gt), {y, zero})->output();
    Value *v = graph.addNode(ir::Op(OpKind::Where), {mask, g, zero})->output();
    ir::OpAttrs attrs;
    attrs.axes = {axis};
    graph.addOutput(graph.addNode(ir::Op(OpKind::Sum, attrs), {v})->output());
    graph.addOutput(graph.addNode(ir::Op(OpKind::Matmul), {v, w})->output());
    std::vector<ir::TensorData> before = run(graph, 11);
    std::vector<const Node *> fused = fuseAndList(graph);
    ASSERT_EQ(fused.size(), 1u) << "axis " << axis;
    ASSERT_TRUE(fused[0]->op().attrs().body->reduction);
    EXPECT_EQ(fused[0]->outputs().size(), 2u);
    expectSameResults(before, run(graph, 11));
  }
}

TEST(FusionTest, AClusterReadsAtMostTheKernelArgumentLimit) {
  // sum of 150 distinct inputs, as a left-leaning tree of adds: one cluster would read 150 inputs.
  ir::Graph graph;
  Value *total = graph.addInput(f32({8}), "x0");
  for (int i = 1; i < 150; ++i)
    total = graph.addNode(ir::Op(OpKind::Add), {total, graph.addInput(f32({8}), "x" + std::to_string(i))})
                ->output();
  graph.addOutput(total);
  ir::Graph reference;
  Value *sum = reference.addInput(f32({8}), "x0");
  for (int i = 1; i < 150; ++i)
    sum =
        reference.addNode(ir::Op(OpKind::Add), {sum, reference.addInput(f32({8}), "x" + std::to_string(i))})
            ->output();
  reference.addOutput(sum);

  PassProfile profile;
  fuseElementwise(graph, profile);
  graph.removeDeadNodes();
  size_t kernels = 0;
  for (const Node *node : graph.toposort()) {
    ASSERT_EQ(node->op().kind(), OpKind::Fused);
    EXPECT_LE(node->inputs().size(), kMaxFusedInputs);
    ++kernels;
  }
  EXPECT_EQ(kernels, 3u) << "150 inputs need three kernels of at most 64";
  EXPECT_TRUE(sameBits(run(graph, 1)[0], run(reference, 1)[0]));
}

TEST(FusionTest, ATenThousandNodeChainIsCutIntoKernelsOfTheCapThatRun) {
  ir::Graph graph, reference;
  for (ir::Graph *g : {&graph, &reference}) {
    Value *chain = g->addInput(f32({5}), "x");
    Value *half = g->addConstant(ir::TensorData::scalar(DType::F32, 0.5));
    for (int i = 0; i < 10000; ++i)
      chain = g->addNode(ir::Op(i % 2 ? OpKind::Tanh : OpKind::Add),
                         i % 2 ? std::vector<Value *>{chain} : std::vector<Value *>{chain, half})
                  ->output();
    g->addOutput(chain);
  }
  PassProfile profile;
  fuseElementwise(graph, profile);
  graph.removeDeadNodes();
  // Cut from the end: full kernels, and what is left first.
  const std::vector<Node *> &kernels = graph.toposort();
  ASSERT_EQ(kernels.size(), (10000 + kMaxKernelOps - 1) / kMaxKernelOps);
  for (size_t k = 0; k < kernels.size(); ++k) {
    EXPECT_EQ(kernels[k]->op().kind(), OpKind::Fused);
    EXPECT_EQ(kernels[k]->op().attrs().body->memberNames().size(),
              k == 0 ? 10000 % kMaxKernelOps : kMaxKernelOps);
    EXPECT_EQ(kernels[k]->inputs().size(), 1u) << "the constant is an immediate";
  }
  EXPECT_TRUE(closeEnough(run(graph, 3)[0], run(reference, 3)[0]));
}

TEST(FusionTest, AComparedValueIsComputedOnce) {
  // max's gradient compares x with its maximum: y = sin(x); mask = (y == max(y)). Copied into the max's
  // prologue, sin would be computed by two kernels, with last bits that may differ (vector math in one,
  // scalar in the other), and the mask could be false everywhere. sin becomes a kernel of its own that both
  // read.
  ir::Graph graph;
  Value *x = graph.addInput(f32({8}), "x");
  Value *y = graph.addNode(ir::Op(OpKind::Sin), {x})->output();
  ir::OpAttrs all;
  all.axes = {0};
  all.keepdims = true;
  Value *top = graph.addNode(ir::Op(OpKind::Max, all), {y})->output();
  Value *mask = graph.addNode(ir::Op(OpKind::Eq), {y, top})->output();
  graph.addOutput(
      graph.addNode(ir::Op(OpKind::Cos), {graph.addNode(ir::Op(OpKind::Where), {mask, x, y})->output()})
          ->output());
  PassProfile profile;
  fuseElementwise(graph, profile);
  graph.removeDeadNodes();
  ASSERT_TRUE(graph.verify().empty()) << graph.verify().front();
  size_t sines = 0;
  for (const Node *node : graph.toposort())
    for (const std::string &member :
         node->op().attrs().body ? node->op().attrs().body->memberNames() : std::vector<std::string>{})
      sines += member == "sin";
  EXPECT_EQ(sines, 1u) << "sin is computed by one kernel, read by the max and by the comparison";
}

TEST(FusionTest, SixtyFourBitIntegersBeyondDoublesStayInputs) {
  ir::Graph graph;
  Value *x = graph.addInput({DType::I64, {ir::Dim::of(2)}, ir::Place::Host}, "x");
  Value *big = graph.addConstant(ir::TensorData(DType::I64, {}));
  int64_t value = (int64_t(1) << 60) + 1;
  std::memcpy(const_cast<uint8_t *>(big->constant().bytes.data()), &value, sizeof value);
  Value *small = graph.addConstant(ir::TensorData::scalar(DType::I64, 3));
  Value *y =
      graph.addNode(ir::Op(OpKind::Add), {graph.addNode(ir::Op(OpKind::Mul), {x, small})->output(), big})
          ->output();
  graph.addOutput(y);
  PassProfile profile;
  fuseElementwise(graph, profile);
  graph.removeDeadNodes();
  ASSERT_EQ(graph.toposort().size(), 1u);
  const Node *kernel = graph.toposort()[0];
  ASSERT_EQ(kernel->inputs().size(), 2u);
  EXPECT_EQ(kernel->input(1), big);
  ir::TensorData input(DType::I64, {2});
  input.data<int64_t>()[0] = 1;
  input.data<int64_t>()[1] = -2;
  runtime::Executor executor(graph);
  ir::TensorData result = executor.run({runtime::Tensor::fromData(input)})[0].toData();
  EXPECT_EQ(result.data<int64_t>()[0], value + 3);
  EXPECT_EQ(result.data<int64_t>()[1], value - 6);
}

TEST(FusionTest, FillsAreImmediatesOfTheKernelsThatReadThem) {
  // mean's gradient: sum(ones_like(x)) counts x's elements; ones_like(x) is read by a second kernel too, and
  // zeros_like(g) by a third. Each is an immediate in every kernel that reads it (no kernel fills a tensor),
  // and x stays an input of the count for its shape alone.
  ir::Graph graph;
  Value *x = graph.addInput(f32({3, 5}), "x");
  Value *g = graph.addInput(f32({3, 5}), "g");
  Value *ones = graph.addNode(ir::Op(OpKind::OnesLike), {x})->output();
  ir::OpAttrs all;
  all.axes = {0, 1};
  Value *count = graph.addNode(ir::Op(OpKind::Sum, all), {ones})->output();
  Value *scaled = graph.addNode(ir::Op(OpKind::Mul), {ones, g})->output();
  Value *zeros = graph.addNode(ir::Op(OpKind::ZerosLike), {g})->output();
  graph.addOutput(count);
  graph.addOutput(graph.addNode(ir::Op(OpKind::Exp), {scaled})->output());
  graph.addOutput(graph.addNode(ir::Op(OpKind::Sub), {scaled, zeros})->output());
  std::vector<ir::TensorData> before = run(graph, 7);
  PassProfile profile;
  fuseElementwise(graph, profile);
  graph.removeDeadNodes();
  ASSERT_TRUE(graph.verify().empty()) << graph.verify().front();
  for (const Node *node : graph.toposort())
    EXPECT_EQ(node->op().kind(), OpKind::Fused) << node->op().str() << " is not in a kernel";
  EXPECT_EQ(countKernels(graph), 3u)
      << "the count, ones * g with its exp (ones * g also an output), and it minus zeros";
  const Node *counting = graph.outputs()[0]->owner();
  ASSERT_EQ(counting->inputs().size(), 1u);
  EXPECT_EQ(counting->input(0), x);
  std::vector<ir::TensorData> after = run(graph, 7);
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(after[0].get(0), 15.0);
  for (size_t output = 1; output < after.size(); ++output)
    for (int64_t i = 0; i < before[output].numElements(); ++i)
      EXPECT_NEAR(after[output].get(i), before[output].get(i), 1e-5 * std::abs(before[output].get(i)));
}

} // namespace
} // namespace tg::opt
