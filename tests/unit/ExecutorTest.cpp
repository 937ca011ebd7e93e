// The executor and sessions on hand-built graphs and programs.
#include "runtime/Executor.h"

#include "opt/Fusion.h"
#include "runtime/HostAllocator.h"
#include "runtime/Kernels.h"
#include "runtime/Session.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <memory>

namespace {

using tg::ir::Dim;
using tg::ir::DType;
using tg::ir::Graph;
using tg::ir::Op;
using tg::ir::OpAttrs;
using tg::ir::OpKind;
using tg::ir::TensorData;
using tg::ir::TensorType;
using tg::ir::UserError;
using tg::runtime::Tensor;

Tensor f32(std::vector<int64_t> shape, const std::vector<double> &values) {
  TensorData data(DType::F32, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i)
    data.set(static_cast<int64_t>(i), values[i]);
  return Tensor::fromData(data);
}

std::vector<double> values(const Tensor &t) {
  TensorData data = t.toData();
  std::vector<double> result;
  for (int64_t i = 0; i < data.numElements(); ++i)
    result.push_back(data.get(i));
  return result;
}

OpAttrs axes(std::vector<int64_t> list) {
  OpAttrs attrs;
  attrs.axes = std::move(list);
  return attrs;
}

tg::ir::SourceLoc at(int line, int column) {
  return {std::make_shared<const std::string>("t.tg"), line, column};
}

TEST(ExecutorTest, EvaluatesAGraph) {
  // out0 = sum(X @ w + 1, axis 0), out1 = X (an input as an output), out2 = the constant itself.
  Graph graph;
  tg::ir::Value *x = graph.addInput({DType::F32, {Dim::named("n"), Dim::of(2)}}, "X");
  tg::ir::Value *w = graph.addInput({DType::F32, {Dim::of(2)}}, "w");
  tg::ir::Value *one = graph.addConstant(TensorData::scalar(DType::F32, 1));
  tg::ir::Value *product = graph.addNode(Op(OpKind::Matmul), {x, w})->output();
  tg::ir::Value *shifted = graph.addNode(Op(OpKind::Add), {product, one})->output();
  graph.addOutput(graph.addNode(Op(OpKind::Sum, axes({0})), {shifted})->output());
  graph.addOutput(x);
  graph.addOutput(one);

  tg::runtime::Executor executor(graph);
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> outputs = executor.run({f32({3, 2}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, -1})});
    ASSERT_EQ(outputs.size(), 3u);
    EXPECT_EQ(values(outputs[0]), std::vector<double>{0}); // (-1 + 1) * 3
    EXPECT_EQ(outputs[1].shape(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(values(outputs[2]), std::vector<double>{1});
  }
  std::vector<Tensor> outputs = executor.run({f32({1, 2}, {5, 1}), f32({2}, {2, 0})});
  EXPECT_EQ(values(outputs[0]), std::vector<double>{11});
}

TEST(ExecutorTest, RunTimeErrorsGetTheNodesLocation) {
  Graph graph;
  tg::ir::Value *x = graph.addInput({DType::F32, {Dim::named("n")}}, "x");
  tg::ir::Value *y = graph.addInput({DType::F32, {Dim::named("m")}}, "y");
  graph.addOutput(graph.addNode(Op(OpKind::Add), {x, y}, at(3, 9))->output());
  tg::runtime::Executor executor(graph);
  try {
    executor.run({f32({3}, {1, 2, 3}), f32({2}, {1, 2})});
    FAIL() << "no error";
  } catch (const UserError &error) {
    EXPECT_EQ(error.message, "cannot broadcast shapes (3,) and (2,)");
    EXPECT_EQ(error.loc.str(), "t.tg:3:9");
  }
}

/// The message of the UserError that checkInputs throws.
std::string checkError(const std::vector<tg::ir::Value *> &inputs, const std::vector<Tensor> &tensors) {
  try {
    tg::runtime::checkInputs(inputs, tensors);
  } catch (const UserError &error) {
    return error.message;
  }
  return "(no error)";
}

TEST(ExecutorTest, ChecksInputsAgainstTheirTypes) {
  Graph graph;
  tg::ir::Value *x = graph.addInput({DType::F32, {Dim::named("n"), Dim::of(4)}}, "X");
  tg::ir::Value *y = graph.addInput({DType::F32, {Dim::named("n")}}, "y");
  std::vector<tg::ir::Value *> inputs = {x, y};
  Tensor good = f32({5, 4}, std::vector<double>(20));
  EXPECT_EQ(checkError(inputs, {good, f32({5}, std::vector<double>(5))}), "(no error)");
  EXPECT_EQ(checkError(inputs, {good, f32({4}, std::vector<double>(4))}),
            "input 'y': dimension 0 is n=4, but n=5 from input 'X'");
  EXPECT_EQ(checkError(inputs, {f32({5, 3}, std::vector<double>(15)), f32({5}, std::vector<double>(5))}),
            "input 'X': dimension 1 is 3, but the script declares f32[n, 4]");
  EXPECT_EQ(checkError(inputs, {f32({20}, std::vector<double>(20)), f32({5}, std::vector<double>(5))}),
            "input 'X' has shape (20,), but the script declares f32[n, 4]");
  EXPECT_EQ(checkError(inputs, {Tensor::empty(DType::F64, {5, 4}), f32({5}, std::vector<double>(5))}),
            "input 'X' has dtype f64, but the script declares f32[n, 4]");
}

/// input X : f32[n]; param w : f32 = full(2.0); output loss = sum(X * w); update w = w + 1.
std::unique_ptr<tg::ir::Program> counterProgram() {
  auto program = std::make_unique<tg::ir::Program>();
  OpAttrs full;
  full.dtype = DType::F32;
  full.scalars = {tg::ir::Number::ofFloat(2.0)};
  tg::ir::Value *initial = program->init.addNode(Op(OpKind::Full, full), {})->output();
  program->init.addOutput(initial);

  Graph &graph = program->graph;
  tg::ir::Value *x = graph.addInput({DType::F32, {Dim::named("n")}}, "X");
  tg::ir::Value *w = graph.addInput({DType::F32, {}}, "w");
  tg::ir::Value *scaled = graph.addNode(Op(OpKind::Mul), {x, w})->output();
  tg::ir::Value *loss = graph.addNode(Op(OpKind::Sum, axes({0})), {scaled})->output();
  tg::ir::Value *one = graph.addConstant(TensorData::scalar(DType::F32, 1));
  tg::ir::Value *next = graph.addNode(Op(OpKind::Add), {w, one})->output();
  graph.addOutput(loss);
  graph.addOutput(next);
  program->inputs.push_back({"X", x, {}});
  program->params.push_back({"w", w, initial, {}});
  program->outputs.push_back({"loss", loss});
  program->updates.push_back({0, next});
  return program;
}

TEST(ExecutorTest, RunsOnlyWhatTheAskedOutputsNeed) {
  // out0 = x + 1 runs; out1 = x + y would fail (the shapes do not broadcast) but is not asked for.
  Graph graph;
  tg::ir::Value *x = graph.addInput({DType::F32, {Dim::named("n")}}, "x");
  tg::ir::Value *y = graph.addInput({DType::F32, {Dim::named("m")}}, "y");
  tg::ir::Value *one = graph.addConstant(TensorData::scalar(DType::F32, 1));
  graph.addOutput(graph.addNode(Op(OpKind::Add), {x, one})->output());
  graph.addOutput(graph.addNode(Op(OpKind::Add), {x, y})->output());
  tg::runtime::Executor executor(graph);
  std::vector<Tensor> inputs{f32({3}, {1, 2, 3}), f32({2}, {1, 2})};
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> outputs = executor.run(inputs, 1);
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(values(outputs[0]), (std::vector<double>{2, 3, 4}));
  }
  EXPECT_THROW(executor.run(inputs), UserError);
  EXPECT_EQ(values(executor.run(inputs, 1)[0]), (std::vector<double>{2, 3, 4})) << "after a failed run";
}

/// y = x * 2 + 1 as one fused node.
std::unique_ptr<Graph> fusedAffine() {
  auto graph = std::make_unique<Graph>();
  tg::ir::Value *x = graph->addInput({DType::F32, {Dim::named("n")}}, "x");
  tg::ir::Value *two = graph->addConstant(TensorData::scalar(DType::F32, 2));
  tg::ir::Value *one = graph->addConstant(TensorData::scalar(DType::F32, 1));
  tg::ir::Value *twice = graph->addNode(Op(OpKind::Mul), {x, two})->output();
  graph->addOutput(graph->addNode(Op(OpKind::Add), {twice, one})->output());
  tg::opt::PassProfile profile;
  tg::opt::fuseElementwise(*graph, profile);
  graph->removeDeadNodes();
  EXPECT_EQ(graph->toposort().size(), 1u);
  return graph;
}

TEST(ExecutorTest, AnElementwiseKernelWritesOverAValueOnlyItsCallerGaveUp) {
  std::unique_ptr<Graph> graph = fusedAffine();
  const tg::ir::Node &node = *graph->toposort()[0];
  std::vector<tg::ir::TensorType> types{node.output()->type()};
  std::vector<Tensor> alone{f32({3}, {1, 2, 3})};
  Tensor result = tg::runtime::runOp(node.op(), alone, types, /*reuseInputs=*/true)[0];
  EXPECT_TRUE(result.sharesBuffer(alone[0])) << "a dead operand of the result's type holds the result";
  EXPECT_EQ(values(result), (std::vector<double>{3, 5, 7}));

  std::vector<Tensor> fresh{f32({3}, {1, 2, 3})};
  EXPECT_FALSE(tg::runtime::runOp(node.op(), fresh, types)[0].sharesBuffer(fresh[0])) << "not given up";
  Tensor kept = f32({3}, {1, 2, 3});
  std::vector<Tensor> shared{kept};
  EXPECT_FALSE(tg::runtime::runOp(node.op(), shared, types, true)[0].sharesBuffer(kept)) << "still read";
  std::vector<Tensor> view{f32({4}, {0, 1, 2, 3}).view({3}, {1}, 1)};
  EXPECT_FALSE(tg::runtime::runOp(node.op(), view, types, true)[0].sharesBuffer(view[0])) << "an offset view";
  EXPECT_EQ(values(view[0]), (std::vector<double>{1, 2, 3}));

  // The executor never writes its inputs, though nothing else holds them.
  tg::runtime::Executor executor(*graph);
  std::vector<Tensor> inputs{f32({3}, {1, 2, 3})};
  for (int run = 0; run < 3; ++run) {
    Tensor output = executor.run(inputs)[0];
    EXPECT_FALSE(output.sharesBuffer(inputs[0]));
    EXPECT_EQ(values(output), (std::vector<double>{3, 5, 7}));
  }
  EXPECT_EQ(values(inputs[0]), (std::vector<double>{1, 2, 3}));
}

TEST(ExecutorTest, AFusedNodesLastLaunchServesOperandsOfItsShapesAndStridesOnly) {
  // y = x * v + 1 and its row sums, two fused nodes; run again with the same operands (the kept launch), then
  // with a transposed view (other strides), another shape, and the first operands again.
  Graph graph;
  tg::ir::Value *x = graph.addInput({DType::F32, {Dim::named("n"), Dim::named("m")}}, "x");
  tg::ir::Value *v = graph.addInput({DType::F32, {Dim::named("m")}}, "v");
  tg::ir::Value *one = graph.addConstant(TensorData::scalar(DType::F32, 1));
  tg::ir::Value *scaled = graph.addNode(Op(OpKind::Mul), {x, v})->output();
  tg::ir::Value *y = graph.addNode(Op(OpKind::Add), {scaled, one})->output();
  graph.addOutput(y);
  graph.addOutput(graph.addNode(Op(OpKind::Sum, axes({1})), {y})->output());
  tg::opt::PassProfile profile;
  tg::opt::fuseElementwise(graph, profile);
  graph.removeDeadNodes();
  tg::runtime::Executor executor(graph);
  auto expectRun = [&](const Tensor &xs, const Tensor &vs, const char *what) {
    std::vector<Tensor> outputs = executor.run({xs, vs});
    std::vector<double> xv = values(xs.contiguous()), vv = values(vs);
    size_t rows = static_cast<size_t>(xs.shape()[0]), cols = static_cast<size_t>(xs.shape()[1]);
    std::vector<double> want(rows * cols), sums(rows, 0);
    for (size_t i = 0; i < rows; ++i)
      for (size_t j = 0; j < cols; ++j) {
        want[i * cols + j] = xv[i * cols + j] * vv[j] + 1;
        sums[i] += want[i * cols + j];
      }
    EXPECT_EQ(values(outputs[0]), want) << what;
    EXPECT_EQ(values(outputs[1]), sums) << what;
  };
  Tensor x23 = f32({2, 3}, {1, 2, 3, 4, 5, 6}), v3 = f32({3}, {1, 10, 100});
  expectRun(x23, v3, "first run");
  expectRun(f32({2, 3}, {6, 5, 4, 3, 2, 1}), v3, "same shapes and strides, new values");
  Tensor transposed = f32({3, 2}, {1, 2, 3, 4, 5, 6}).permuted({1, 0});
  expectRun(transposed, v3, "a transposed view");
  expectRun(f32({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), v3, "another shape");
  expectRun(x23, v3, "the first operands again");
}

TEST(ExecutorTest, ABufferPoolHandsFreedBuffersOutAgainAndKeepsWhatOneRoundNeeds) {
  auto pool = std::make_unique<tg::runtime::HostBufferPool>();
  std::byte *first = nullptr;
  std::shared_ptr<std::byte> outlives;
  {
    tg::runtime::HostBufferPool::Scope scope(*pool);
    for (int round = 0; round < 3; ++round) {
      std::shared_ptr<std::byte> a = tg::runtime::allocateHostBuffer(1000);
      std::shared_ptr<std::byte> b = tg::runtime::allocateHostBuffer(1000);
      std::shared_ptr<std::byte> c = tg::runtime::allocateHostBuffer(64);
      if (round == 0)
        first = b.get();
      else
        EXPECT_TRUE(a.get() == first || b.get() == first) << "round " << round << " reuses a buffer";
      EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % 64, 0u);
      a.reset(), b.reset(), c.reset();
      EXPECT_EQ(pool->freeBuffers(), 3u);
      pool->trim();
      EXPECT_EQ(pool->freeBuffers(), 3u) << "one round took as many";
    }
    std::shared_ptr<std::byte> d = tg::runtime::allocateHostBuffer(1000);
    pool->trim(); // this round took one buffer of 1000 bytes and none of 64
    EXPECT_EQ(pool->freeBuffers(), 1u);
    outlives = tg::runtime::allocateHostBuffer(500);
  }
  EXPECT_NE(tg::runtime::allocateHostBuffer(1000).get(), nullptr) << "no pool outside the scope";
  EXPECT_EQ(pool->freeBuffers(), 2u) << "d came back; one allocated outside the scope is not the pool's";
  pool.reset();
  std::memset(outlives.get(), 1, 500); // still the holder's until it lets go, after the pool is gone
  outlives.reset();
}

TEST(ExecutorTest, SessionAppliesUpdatesAfterEachStep) {
  auto program = counterProgram();
  tg::runtime::Session session(*program);
  EXPECT_EQ(values(session.param("w")), std::vector<double>{2});
  Tensor x = f32({3}, {1, 2, 3});
  EXPECT_EQ(values(session.step({{"X", x}})[0]), std::vector<double>{12});
  EXPECT_EQ(values(session.step({{"X", x}})[0]), std::vector<double>{18});
  EXPECT_EQ(values(session.param("w")), std::vector<double>{4});
}

TEST(ExecutorTest, SessionRunsWithoutUpdatesAndTakesNewParams) {
  auto program = counterProgram();
  tg::runtime::Session session(*program);
  Tensor x = f32({3}, {1, 2, 3});
  EXPECT_EQ(values(session.step({{"X", x}}, /*applyUpdates=*/false)[0]), std::vector<double>{12});
  EXPECT_EQ(values(session.param("w")), std::vector<double>{2});
  session.setParam("w", f32({}, {5}));
  EXPECT_EQ(values(session.step({{"X", x}})[0]), std::vector<double>{30});
  EXPECT_EQ(values(session.param("w")), std::vector<double>{6});
  auto setError = [&](const std::string &name, const Tensor &value) {
    try {
      session.setParam(name, value);
    } catch (const UserError &error) {
      return error.message;
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(setError("w", f32({1}, {1})), "param 'w' has shape () (f32), not (1,)");
  EXPECT_EQ(setError("w", Tensor::empty(DType::F64, {})), "param 'w' has dtype f32 (f32), not f64");
  EXPECT_EQ(setError("v", f32({}, {1})), "unknown param 'v'; the script's params are: w");
  EXPECT_EQ(values(session.param("w")), std::vector<double>{6});
}

TEST(ExecutorTest, SessionReportsBadInputNames) {
  auto program = counterProgram();
  tg::runtime::Session session(*program);
  auto stepError = [&](const std::map<std::string, Tensor> &inputs) {
    try {
      session.step(inputs);
    } catch (const UserError &error) {
      return error.message;
    }
    return std::string("(no error)");
  };
  Tensor x = f32({3}, {1, 2, 3});
  EXPECT_EQ(stepError({}), "missing input 'X', declared f32[n]");
  EXPECT_EQ(stepError({{"X", x}, {"Z", x}}), "unknown input 'Z'; the script's inputs are: X");
  EXPECT_EQ(stepError({{"X", f32({3, 1}, {1, 2, 3})}}),
            "input 'X' has shape (3, 1), but the script declares f32[n]");
  EXPECT_THROW(session.param("q"), UserError);
  EXPECT_EQ(values(session.param("w")), std::vector<double>{2}); // failed steps change nothing
}

} // namespace
