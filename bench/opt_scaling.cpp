// bench/opt_scaling: how the optimizer's time grows with the graph. Builds elementwise chains, wide trees and
// MLP-gradient graphs of about 1k, 10k and 100k nodes, optimizes each with the default pipeline, and prints
// seconds and nanoseconds per node for every pass and for the whole pipeline. Flat ns/node means linear time.
//
//   build/bench/opt_scaling [--sizes 1000,10000,100000] [--repeat 3] [--graphs chain,wide-tree,mlp-grad]
#include "ir/Gradient.h"
#include "ir/Program.h"
#include "opt/Pipeline.h"
#include "runtime/ConstantEvaluator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace tg;
using ir::Dim;
using ir::DType;
using ir::OpKind;
using ir::Value;

ir::TensorType f32(ir::Shape shape) {
  return {DType::F32, std::move(shape), ir::Place::Host};
}

Value *node(ir::Graph &graph, OpKind kind, std::vector<Value *> inputs, ir::OpAttrs attrs = {}) {
  return graph.addNode(ir::Op(kind, std::move(attrs)), std::move(inputs))->output();
}

Value *scalar(ir::Graph &graph, double value) {
  return graph.addConstant(ir::TensorData::scalar(DType::F32, value));
}

/// x -> exp -> add c -> mul 1 -> neg -> neg -> ... : a chain with rewrites to apply along it.
void buildChain(ir::Program &program, size_t nodes) {
  ir::Graph &graph = program.graph;
  Value *x = graph.addInput(f32({Dim::named("n"), Dim::of(64)}), "x");
  program.inputs.push_back({"x", x, {}});
  Value *value = x;
  for (size_t i = 0; i < nodes; ++i) {
    switch (i % 5) {
    case 0:
      value = node(graph, OpKind::Tanh, {value});
      break;
    case 1:
      value = node(graph, OpKind::Add, {value, scalar(graph, 0.5)});
      break;
    case 2:
      value = node(graph, OpKind::Mul, {value, scalar(graph, 1.0)});
      break;
    case 3:
      value = node(graph, OpKind::Neg, {value});
      break;
    case 4:
      value = node(graph, OpKind::Neg, {value});
      break;
    }
  }
  graph.addOutput(value);
  program.outputs.push_back({"y", value});
}

/// Many small expressions of one input, summed by a balanced tree of adds.
void buildWideTree(ir::Program &program, size_t nodes) {
  ir::Graph &graph = program.graph;
  Value *x = graph.addInput(f32({Dim::of(32)}), "x");
  program.inputs.push_back({"x", x, {}});
  std::vector<Value *> level;
  for (size_t i = 0; 4 * level.size() < nodes; ++i)
    level.push_back(
        node(graph, OpKind::Exp, {node(graph, OpKind::Mul, {x, scalar(graph, 0.001 * (i % 100))})}));
  while (level.size() > 1) {
    std::vector<Value *> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2)
      next.push_back(node(graph, OpKind::Add, {level[i], level[i + 1]}));
    if (level.size() % 2) next.push_back(level.back());
    level = std::move(next);
  }
  graph.addOutput(level[0]);
  program.outputs.push_back({"y", level[0]});
}

/// A deep tanh MLP, its mean-squared loss and the gradient with respect to every weight and bias.
void buildMlpGradient(ir::Program &program, size_t nodes) {
  ir::Graph &graph = program.graph;
  Value *x = graph.addInput(f32({Dim::named("n"), Dim::of(16)}), "X");
  program.inputs.push_back({"X", x, {}});
  // About 25 nodes per layer, forward and backward together.
  size_t layers = std::max<size_t>(1, nodes / 25);
  std::vector<Value *> params;
  Value *h = x;
  for (size_t i = 0; i < layers; ++i) {
    Value *w = graph.addInput(f32({Dim::of(16), Dim::of(16)}), "W" + std::to_string(i));
    Value *b = graph.addInput(f32({Dim::of(16)}), "b" + std::to_string(i));
    params.push_back(w);
    params.push_back(b);
    program.inputs.push_back({w->name(), w, {}});
    program.inputs.push_back({b->name(), b, {}});
    h = node(graph, OpKind::Tanh, {node(graph, OpKind::Add, {node(graph, OpKind::Matmul, {h, w}), b})});
  }
  ir::OpAttrs all;
  all.axes = {0, 1};
  Value *loss = node(graph, OpKind::Mean, {node(graph, OpKind::Mul, {h, h})}, all);
  graph.addOutput(loss);
  program.outputs.push_back({"loss", loss});
  std::vector<Value *> gradients = ir::grad(graph, loss, params, {});
  for (size_t i = 0; i < gradients.size(); ++i) {
    graph.addOutput(gradients[i]);
    program.outputs.push_back({"g" + std::to_string(i), gradients[i]});
  }
}

struct Row {
  std::string graph;
  size_t nodes;
  std::map<std::string, double> passSeconds;
  double total = 0;
};

std::vector<std::string> splitList(const char *text) {
  std::vector<std::string> items;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ','))
    items.push_back(item);
  return items;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<size_t> sizes{1000, 10000, 100000};
  int repeat = 3;
  std::vector<std::string> graphs{"chain", "wide-tree", "mlp-grad"};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--sizes") {
      sizes.clear();
      for (const std::string &size : splitList(argv[i + 1]))
        sizes.push_back(std::strtoul(size.c_str(), nullptr, 10));
    } else if (flag == "--repeat") {
      repeat = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--graphs") {
      graphs = splitList(argv[i + 1]);
    }
  }
  const std::vector<std::pair<std::string, std::function<void(ir::Program &, size_t)>>> builders{
      {"chain", buildChain}, {"wide-tree", buildWideTree}, {"mlp-grad", buildMlpGradient}};
  std::vector<std::string> passes;
  for (const auto &pass : opt::passTable())
    passes.push_back(pass.name);

  std::printf("%-10s %8s", "graph", "nodes");
  for (const std::string &pass : passes)
    std::printf(" %15s", pass.c_str());
  std::printf(" %15s %12s\n", "total s", "total ns/node");
  for (const auto &[name, build] : builders) {
    if (std::find(graphs.begin(), graphs.end(), name) == graphs.end()) continue;
    for (size_t size : sizes) {
      // The best of `repeat` runs, each on a freshly built graph: the least disturbed by other work.
      Row best;
      for (int r = 0; r < repeat; ++r) {
        ir::Program program;
        build(program, size);
        Row row{name, program.graph.toposort().size(), {}, 0};
        opt::OptimizerOptions options;
        options.evaluate = runtime::evaluateConstant;
        opt::OptimizerProfile profile = opt::optimize(program, options);
        for (const opt::PassProfile &pass : profile.passes)
          row.passSeconds[pass.name] = pass.seconds;
        row.total = profile.seconds();
        if (r == 0 || row.total < best.total) best = row;
      }
      std::printf("%-10s %8zu", best.graph.c_str(), best.nodes);
      for (const std::string &pass : passes)
        std::printf(" %8.4fs %4.0fns", best.passSeconds[pass], 1e9 * best.passSeconds[pass] / best.nodes);
      std::printf(" %14.4f %12.0f\n", best.total, 1e9 * best.total / best.nodes);
    }
  }
  return 0;
}
