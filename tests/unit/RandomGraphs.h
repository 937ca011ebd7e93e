// Random graphs for the placement tests (LiftPropertyTest, CostPlacementTest), built with the ir API from a
// seed: the same seed builds the same graph, node for node. f32 inputs of several ranks (0-d among them, some
// of them params kept in device memory), unary and binary elementwise ops with broadcasting, comparisons and
// where, reductions (to 0-d too), matmul, reshape and transpose, creation ops whose only client is another
// op, 0-d arithmetic on 0-d inputs and constants, occasional @host and @device pins, host-only ops when
// asked, and several outputs (an input and a param among them, and the params' updates). Also: a canonical
// text of a graph (equal graphs print alike, whatever their node ids), random inputs, and running a graph on
// the simulated device.
#pragma once

#include "ir/Program.h"
#include "runtime/Device.h"
#include "runtime/Executor.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tg::testing {

using ir::Dim;
using ir::DType;
using ir::OpKind;
using ir::Value;

constexpr int kMaxSteps = 60; // ops per graph, at most, unless asked for fewer

/// The shapes values may have: broadcasting among them is decided by ir::broadcastShapes.
const std::vector<std::vector<int64_t>> kShapes{{}, {4}, {3, 4}, {1, 4}, {3, 1}, {2, 3, 4}};

inline ir::TensorType f32(const std::vector<int64_t> &shape) {
  ir::Shape dims;
  for (int64_t size : shape)
    dims.push_back(Dim::of(size));
  return {DType::F32, dims, ir::Place::Host};
}

inline std::vector<int64_t> staticShape(const Value *value) {
  std::vector<int64_t> shape;
  for (const Dim &dim : value->type().shape)
    shape.push_back(dim.size());
  return shape;
}

/// A random graph, with what the lift passes need to know about it (which inputs and outputs are params and
/// their updates, kept in device memory). It lives in a program so that the optimizer can run over it too.
struct RandomGraph {
  ir::Program program;
  ir::Graph &graph = program.graph;
  std::vector<size_t> residentInputs, residentOutputs;
};

/// Builds the graph of `seed`: the same seed builds the same graph, node for node.
class GraphMaker {
public:
  GraphMaker(RandomGraph &result, uint32_t seed, bool hostOnly, int maxSteps = kMaxSteps)
      : result_(result), graph_(result.graph), random_(seed), hostOnly_(hostOnly), maxSteps_(maxSteps) {}

  void build() {
    size_t inputs = 2 + pick(3), params = pick(3);
    for (size_t i = 0; i < inputs; ++i)
      values_.push_back(graph_.addInput(f32(kShapes[pick(kShapes.size())]), "x" + std::to_string(i)));
    scalarInput_ = graph_.addInput(f32({}), "s"); // always one 0-d input
    values_.push_back(scalarInput_);
    std::vector<Value *> paramValues;
    for (size_t i = 0; i < params; ++i) {
      Value *param = graph_.addInput(f32(kShapes[1 + pick(kShapes.size() - 1)]), "p" + std::to_string(i));
      result_.residentInputs.push_back(graph_.inputs().size() - 1);
      paramValues.push_back(param);
      values_.push_back(param);
    }
    size_t steps = std::min<size_t>(maxSteps_, 3 + pick(maxSteps_ - 2));
    for (size_t i = 0; i < steps; ++i)
      step();
    // Outputs: the last value, most values nobody reads (so that most nodes stay live), a few others,
    // sometimes an input as it is, then each param's update.
    graph_.addOutput(values_.back());
    for (Value *value : values_)
      if (value->owner() && value->clients().empty() && chance(0.7)) graph_.addOutput(value);
    for (size_t i = pick(3); i > 0; --i)
      graph_.addOutput(anyValue());
    if (chance(0.3)) graph_.addOutput(graph_.inputs()[pick(inputs)]);
    for (Value *param : paramValues) {
      result_.residentOutputs.push_back(graph_.outputs().size());
      Value *other = chance(0.5) ? scalarInput_ : sameShapeOrScalar(param);
      graph_.addOutput(chance(0.2) ? param : add(OpKind::Sub, {param, other}));
    }
    graph_.removeDeadNodes();
  }

private:
  size_t pick(size_t count) { return std::uniform_int_distribution<size_t>(0, count - 1)(random_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(random_); }

  /// A value made so far; recent ones are likelier, so that the graph grows deep as well as wide.
  Value *anyValue() {
    size_t back = std::min(values_.size() - 1, pick(4) == 0 ? pick(values_.size()) : pick(4));
    return values_[values_.size() - 1 - back];
  }

  Value *valueOfRank(size_t rank) {
    for (int tries = 0; tries < 8; ++tries)
      if (Value *value = anyValue(); value->type().rank() == rank) return value;
    for (auto it = values_.rbegin(); it != values_.rend(); ++it)
      if ((*it)->type().rank() == rank) return *it;
    return nullptr;
  }

  Value *sameShapeOrScalar(Value *like) {
    for (int tries = 0; tries < 8; ++tries)
      if (Value *value = anyValue(); value->type().shape == like->type().shape || value->type().isScalar())
        return value;
    return scalarInput_;
  }

  /// A node with an occasional pin; its output (always f32) joins the values.
  Value *add(OpKind kind, std::vector<Value *> inputs, ir::OpAttrs attrs = {}) {
    ir::Pin pin = ir::Pin::None;
    if (chance(0.06)) pin = chance(0.5) ? ir::Pin::Host : ir::Pin::Device;
    Value *value = graph_.addNode(ir::Op(kind, std::move(attrs)), std::move(inputs), {}, pin)->output();
    values_.push_back(value);
    return value;
  }

  Value *constant(double value) { return graph_.addConstant(ir::TensorData::scalar(DType::F32, value)); }

  void step() {
    static const std::vector<OpKind> unary{OpKind::Neg,  OpKind::Abs,     OpKind::Exp,  OpKind::Tanh,
                                           OpKind::Sin,  OpKind::Sigmoid, OpKind::Relu, OpKind::Floor,
                                           OpKind::Sqrt, OpKind::Softplus};
    static const std::vector<OpKind> binary{OpKind::Add,     OpKind::Sub,     OpKind::Mul,
                                            OpKind::Maximum, OpKind::Minimum, OpKind::Div};
    static const std::vector<OpKind> reductions{OpKind::Sum, OpKind::Mean, OpKind::Max, OpKind::Min};
    static const std::vector<OpKind> hostOnly{OpKind::Sort, OpKind::Argsort, OpKind::Cumsum};
    Value *x = anyValue();
    size_t rank = x->type().rank();
    switch (pick(hostOnly_ ? 11 : 10)) {
    case 0:
    case 1:
      add(unary[pick(unary.size())], {x});
      return;
    case 2:
    case 3: { // binary, with broadcasting: partners are tried until one fits
      for (int tries = 0; tries < 8; ++tries) {
        Value *y = chance(0.2) ? constant(0.5 + pick(4)) : anyValue();
        if (!ir::broadcastShapes(x->type().shape, y->type().shape)) continue;
        add(binary[pick(binary.size())],
            chance(0.5) ? std::vector<Value *>{x, y} : std::vector<Value *>{y, x});
        return;
      }
      add(OpKind::Mul, {x, x});
      return;
    }
    case 4: { // where(x < y, x, y)
      Value *y = sameShapeOrScalar(x);
      Value *condition = graph_.addNode(ir::Op(OpKind::Lt), {x, y})->output(); // bool: not a value to reuse
      add(OpKind::Where, {condition, x, y});
      return;
    }
    case 5: { // a reduction over some axes, or all of them (to 0-d)
      if (rank == 0) {
        add(OpKind::Mul, {x, constant(2)});
        return;
      }
      ir::OpAttrs attrs;
      for (size_t axis = 0; axis < rank; ++axis)
        if (chance(0.5)) attrs.axes.push_back(static_cast<int64_t>(axis));
      if (attrs.axes.empty() || chance(0.3)) {
        attrs.axes.clear();
        for (size_t axis = 0; axis < rank; ++axis)
          attrs.axes.push_back(static_cast<int64_t>(axis));
      }
      attrs.keepdims = chance(0.3);
      add(reductions[pick(reductions.size())], {x}, attrs);
      return;
    }
    case 6: { // matmul: x @ transpose(x), or a matrix times a vector
      Value *matrix = valueOfRank(2);
      if (!matrix) return;
      ir::OpAttrs perm;
      perm.axes = {1, 0};
      if (chance(0.5)) {
        add(OpKind::Matmul, {matrix, add(OpKind::Transpose, {matrix}, perm)});
        return;
      }
      std::vector<int64_t> shape = staticShape(matrix);
      Value *vector = graph_.addNode(ir::Op(OpKind::Zeros, creation({shape[1]})), {})->output();
      if (Value *candidate = valueOfRank(1); candidate && staticShape(candidate)[0] == shape[1])
        vector = candidate;
      add(OpKind::Matmul, {matrix, vector});
      return;
    }
    case 7: { // reshape to flat, or transpose
      if (rank == 0) return;
      ir::OpAttrs attrs;
      if (rank == 1 || chance(0.5)) {
        attrs.shape = {-1};
        add(OpKind::Reshape, {x}, attrs);
        return;
      }
      for (size_t axis = rank; axis > 0; --axis)
        attrs.axes.push_back(static_cast<int64_t>(axis - 1));
      add(OpKind::Transpose, {x}, attrs);
      return;
    }
    case 8: { // a creation op whose only client is a binary op: it is pulled to where that op runs
      ir::OpAttrs attrs = creation(staticShape(x));
      OpKind kind = chance(0.5) ? OpKind::Zeros : OpKind::Ones;
      if (chance(0.3)) {
        kind = OpKind::Full;
        attrs.scalars = {ir::Number::ofFloat(1.5)};
      }
      Value *created = chance(0.25) ? graph_.addNode(ir::Op(OpKind::ZerosLike), {x})->output()
                                    : graph_.addNode(ir::Op(kind, attrs), {})->output();
      add(OpKind::Add, {x, created});
      return;
    }
    case 9: { // 0-d arithmetic on 0-d values: on the host unless its clients pull it over
      Value *s = valueOfRank(0);
      add(chance(0.5) ? OpKind::Mul : OpKind::Add, {s ? s : scalarInput_, constant(3)});
      return;
    }
    default: { // host-only: sort, argsort (then a cast back to f32) or cumsum
      if (rank == 0) return;
      OpKind kind = hostOnly[pick(hostOnly.size())];
      ir::OpAttrs attrs;
      attrs.axes = {static_cast<int64_t>(pick(rank))};
      if (kind != OpKind::Argsort) {
        add(kind, {x}, attrs);
        return;
      }
      ir::OpAttrs cast;
      cast.dtype = DType::F32;
      add(OpKind::Cast, {graph_.addNode(ir::Op(kind, attrs), {x})->output()}, cast); // i64 indices, cast back
      return;
    }
    }
  }

  static ir::OpAttrs creation(std::vector<int64_t> shape) {
    ir::OpAttrs attrs;
    attrs.shape = std::move(shape);
    attrs.dtype = DType::F32;
    return attrs;
  }

  RandomGraph &result_;
  ir::Graph &graph_;
  std::mt19937 random_;
  bool hostOnly_;
  int maxSteps_;
  std::vector<Value *> values_; // the f32 values ops may read
  Value *scalarInput_ = nullptr;
};

inline std::unique_ptr<RandomGraph> makeGraph(uint32_t seed, bool hostOnly, int maxSteps = kMaxSteps) {
  auto result = std::make_unique<RandomGraph>();
  GraphMaker(*result, seed, hostOnly, maxSteps).build();
  return result;
}

/// The graph as text independent of node ids: see the file comment.
inline std::string canonical(const ir::Graph &graph) {
  std::map<const Value *, std::string> names;
  for (size_t i = 0; i < graph.inputs().size(); ++i)
    names[graph.inputs()[i]] = "in" + std::to_string(i) + ":" + graph.inputs()[i]->type().str();
  auto name = [&](const Value *value) {
    if (auto found = names.find(value); found != names.end()) return found->second;
    if (value->isConstant()) return "const(" + std::to_string(value->constant().get(0)) + ")";
    return std::string("?");
  };
  std::ostringstream out;
  const std::vector<ir::Node *> &order = graph.toposort();
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node *node = order[i];
    names[node->output()] = "%" + std::to_string(i);
    out << "%" << i << " = " << node->op().str() << "@"
        << (node->op().place() == ir::Place::Device ? "device" : "host")
        << (node->pin() == ir::Pin::Host     ? " pinned @host"
            : node->pin() == ir::Pin::Device ? " pinned @device"
                                             : "")
        << "(";
    for (size_t k = 0; k < node->inputs().size(); ++k)
      out << (k ? ", " : "") << name(node->input(k));
    out << ") : " << node->output()->type().str() << "\n";
  }
  for (const Value *output : graph.outputs())
    out << "output " << name(output) << "\n";
  return out.str();
}

inline size_t transfers(const ir::Graph &graph) {
  size_t count = 0;
  for (const ir::Node *node : graph.toposort())
    count += node->op().kind() == OpKind::ToDevice || node->op().kind() == OpKind::ToHost;
  return count;
}

/// Random inputs for `graph`, the same for every graph of one seed.
inline std::vector<runtime::Tensor> randomInputs(const ir::Graph &graph, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-2, 2);
  std::vector<runtime::Tensor> tensors;
  for (const Value *input : graph.inputs()) {
    runtime::Tensor tensor = runtime::Tensor::empty(DType::F32, staticShape(input));
    for (int64_t i = 0; i < tensor.numElements(); ++i)
      tensor.data<float>()[i] = uniform(random);
    tensors.push_back(tensor);
  }
  return tensors;
}

/// The same numbers, NaN where NaN: both graphs compute the same ops on the same inputs, each op the same
/// way but for math functions, which the CPU kernels take from libm and the generated kernels (the simulated
/// device's among them, as a GPU's from libdevice) from libmvec's vector variants where a loop vectorizes:
/// floats may differ by a few units in the last place (1e-6 relative for f32, 1e-14 for f64).
inline void expectSameNumbers(const std::vector<runtime::Tensor> &expected,
                              const std::vector<runtime::Tensor> &actual, const std::string &what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    ir::TensorData want = expected[i].toData(), have = actual[i].toData();
    ASSERT_EQ(want.shape, have.shape) << what << ", output " << i;
    ASSERT_EQ(want.dtype, have.dtype) << what << ", output " << i;
    double relative = want.dtype == DType::F32 ? 1e-6 : want.dtype == DType::F64 ? 1e-14 : 0;
    for (int64_t k = 0; k < want.numElements(); ++k) {
      double a = want.get(k), b = have.get(k);
      ASSERT_TRUE(a == b || (std::isnan(a) && std::isnan(b)) ||
                  std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b)) + relative * 1e-30)
          << what << ", output " << i << ", element " << k << ": " << a << " vs " << b;
    }
  }
}

/// Runs `graph` on a fresh simulated device: inputs kept in device memory (resident ones) are placed there
/// first, and outputs left there are read back.
inline std::vector<runtime::Tensor> runOnSim(const ir::Graph &graph,
                                             const std::vector<runtime::Tensor> &inputs) {
  std::unique_ptr<runtime::Device> device = runtime::makeSimDevice();
  std::vector<runtime::Tensor> placed = inputs;
  for (size_t i = 0; i < placed.size(); ++i)
    if (graph.inputs()[i]->type().place == ir::Place::Device) placed[i] = device->upload(placed[i]);
  std::vector<runtime::Tensor> outputs = runtime::Executor(graph, device.get()).run(placed);
  for (runtime::Tensor &output : outputs)
    if (output.memory() == runtime::Memory::Device) output = device->download(output);
  return outputs;
}

} // namespace tg::testing
