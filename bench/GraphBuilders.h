// The graphs the benchmarks optimize, built with the ir API: an elementwise chain, a wide tree and the
// gradient of a deep MLP, each of about the asked number of nodes. `hostOnlyEvery` > 0 puts a host-only op
// (sort, or cumsum where a gradient must flow through it) about every that many nodes, as placement
// benchmarks want. Also the one command-line helper the benchmarks share.
#pragma once

#include "autodiff/Gradient.h"
#include "ir/Program.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tg::bench {

inline ir::TensorType f32(ir::Shape shape) {
  return {ir::DType::F32, std::move(shape), ir::Place::Host};
}

inline ir::Value *node(ir::Graph &graph, ir::OpKind kind, std::vector<ir::Value *> inputs,
                       ir::OpAttrs attrs = {}) {
  return graph.addNode(ir::Op(kind, std::move(attrs)), std::move(inputs))->output();
}

inline ir::Value *scalar(ir::Graph &graph, double value) {
  return graph.addConstant(ir::TensorData::scalar(ir::DType::F32, value));
}

/// `kind` (sort or cumsum) along `axis`.
inline ir::Value *hostOnly(ir::Graph &graph, ir::OpKind kind, ir::Value *value, int64_t axis) {
  ir::OpAttrs attrs;
  attrs.axes = {axis};
  return node(graph, kind, {value}, std::move(attrs));
}

/// x -> tanh -> add c -> mul 1 -> neg -> neg -> ... : a chain with rewrites to apply along it. With
/// `hostOnlyEvery`, a sort every that many nodes, and two nodes after it an add of a new vector input, which
/// pulls the chain back to the device (the two nodes between move backward).
inline void buildChain(ir::Program &program, size_t nodes, size_t hostOnlyEvery = 0) {
  using ir::OpKind;
  ir::Graph &graph = program.graph;
  ir::Value *x = graph.addInput(f32({ir::Dim::named("n"), ir::Dim::of(64)}), "x");
  program.inputs.push_back({"x", x, {}});
  ir::Value *value = x;
  for (size_t i = 0; i < nodes; ++i) {
    if (hostOnlyEvery && i % hostOnlyEvery == hostOnlyEvery - 1) {
      value = hostOnly(graph, OpKind::Sort, value, 1);
      continue;
    }
    if (hostOnlyEvery && i > hostOnlyEvery && i % hostOnlyEvery == 2) {
      ir::Value *w = graph.addInput(f32({ir::Dim::of(64)}), "w" + std::to_string(i / hostOnlyEvery));
      program.inputs.push_back({w->name(), w, {}});
      value = node(graph, OpKind::Add, {value, w});
      continue;
    }
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
    default:
      value = node(graph, OpKind::Neg, {value});
      break;
    }
  }
  graph.addOutput(value);
  program.outputs.push_back({"y", value});
}

/// Many small expressions of one input, summed by a balanced tree of adds.
inline void buildWideTree(ir::Program &program, size_t nodes, size_t hostOnlyEvery = 0) {
  using ir::OpKind;
  ir::Graph &graph = program.graph;
  ir::Value *x = graph.addInput(f32({ir::Dim::of(32)}), "x");
  program.inputs.push_back({"x", x, {}});
  std::vector<ir::Value *> level;
  // Each leaf is 2 nodes and adds one to the tree.
  for (size_t i = 0; 3 * level.size() < nodes; ++i) {
    ir::Value *leaf =
        node(graph, OpKind::Exp, {node(graph, OpKind::Mul, {x, scalar(graph, 0.001 * (i % 100))})});
    if (hostOnlyEvery && i % std::max<size_t>(1, hostOnlyEvery / 3) == 0)
      leaf = hostOnly(graph, OpKind::Sort, leaf, 0);
    level.push_back(leaf);
  }
  while (level.size() > 1) {
    std::vector<ir::Value *> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2)
      next.push_back(node(graph, OpKind::Add, {level[i], level[i + 1]}));
    if (level.size() % 2) next.push_back(level.back());
    level = std::move(next);
  }
  graph.addOutput(level[0]);
  program.outputs.push_back({"y", level[0]});
}

/// A deep tanh MLP, its mean-squared loss and the gradient with respect to every weight and bias. With
/// `hostOnlyEvery`, a cumsum (host-only, and differentiable: its gradient is a cumsum too) follows some
/// layers.
inline void buildMlpGradient(ir::Program &program, size_t nodes, size_t hostOnlyEvery = 0) {
  using ir::OpKind;
  ir::Graph &graph = program.graph;
  ir::Value *x = graph.addInput(f32({ir::Dim::named("n"), ir::Dim::of(16)}), "X");
  program.inputs.push_back({"X", x, {}});
  // About 11 nodes per layer, forward and backward together.
  size_t layers = std::max<size_t>(1, nodes / 11);
  size_t hostOnlyLayers = hostOnlyEvery ? std::max<size_t>(1, hostOnlyEvery / 11) : 0;
  std::vector<ir::Value *> params;
  ir::Value *h = x;
  for (size_t i = 0; i < layers; ++i) {
    ir::Value *w = graph.addInput(f32({ir::Dim::of(16), ir::Dim::of(16)}), "W" + std::to_string(i));
    ir::Value *b = graph.addInput(f32({ir::Dim::of(16)}), "b" + std::to_string(i));
    params.push_back(w);
    params.push_back(b);
    program.inputs.push_back({w->name(), w, {}});
    program.inputs.push_back({b->name(), b, {}});
    h = node(graph, OpKind::Tanh, {node(graph, OpKind::Add, {node(graph, OpKind::Matmul, {h, w}), b})});
    if (hostOnlyLayers && i % hostOnlyLayers == hostOnlyLayers - 1) h = hostOnly(graph, OpKind::Cumsum, h, 1);
  }
  ir::OpAttrs all;
  all.axes = {0, 1};
  ir::Value *loss = node(graph, OpKind::Mean, {node(graph, OpKind::Mul, {h, h})}, all);
  graph.addOutput(loss);
  program.outputs.push_back({"loss", loss});
  std::vector<ir::Value *> gradients = autodiff::grad(graph, loss, params, {});
  for (size_t i = 0; i < gradients.size(); ++i) {
    graph.addOutput(gradients[i]);
    program.outputs.push_back({"g" + std::to_string(i), gradients[i]});
  }
}

/// The builders by name, in the order the benchmarks print them.
using GraphBuilder = std::function<void(ir::Program &, size_t nodes, size_t hostOnlyEvery)>;
inline const std::vector<std::pair<std::string, GraphBuilder>> &graphBuilders() {
  static const std::vector<std::pair<std::string, GraphBuilder>> builders{
      {"chain", buildChain}, {"wide-tree", buildWideTree}, {"mlp-grad", buildMlpGradient}};
  return builders;
}

/// "1000,10000" -> {"1000", "10000"}.
inline std::vector<std::string> splitList(const char *text) {
  std::vector<std::string> items;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ','))
    items.push_back(item);
  return items;
}

/// "1000,10000" -> {1000, 10000}: the --sizes of both benchmarks.
inline std::vector<size_t> parseSizes(const char *text) {
  std::vector<size_t> sizes;
  for (const std::string &size : splitList(text))
    sizes.push_back(std::strtoul(size.c_str(), nullptr, 10));
  return sizes;
}

} // namespace tg::bench
