#include "opt/CostDeviceLift.h"

#include "opt/GlobalDeviceLift.h"
#include "opt/Lifters.h"

#include <algorithm>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <chrono>

namespace tg::opt {

namespace {

using ir::Node;
using ir::Value;
using Clock = std::chrono::steady_clock;

/// The flow network of the cut, gathered as an edge list and then laid out for Boost.Graph's
/// Boykov-Kolmogorov max-flow as a compressed sparse row graph: one allocation per array instead of one per
/// edge.
class FlowNetwork {
public:
  explicit FlowNetwork(size_t vertices) : vertices_(vertices) {}

  size_t addVertex() { return vertices_++; }

  /// An edge and its reverse of capacity 0, as the max-flow needs them (the two are neighbours in the list,
  /// so an edge's reverse is found by flipping the last bit of its position). Edges of capacity 0 are left
  /// out.
  void addEdge(size_t from, size_t to, double capacity) {
    if (capacity <= 0) return;
    ends_.emplace_back(static_cast<uint32_t>(from), static_cast<uint32_t>(to));
    ends_.emplace_back(static_cast<uint32_t>(to), static_cast<uint32_t>(from));
    capacities_.push_back(capacity);
    capacities_.push_back(0);
  }

  /// Runs the max-flow; afterwards onSourceSide says which side of a minimum cut each vertex is on.
  void cut(size_t source, size_t sink) {
    struct Origin {
      uint32_t position; // in ends_
    };
    using Graph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, Origin,
                                                     boost::no_property, uint32_t, uint32_t>;
    using Edge = Graph::edge_descriptor;
    std::vector<Origin> origins(ends_.size());
    for (size_t i = 0; i < origins.size(); ++i)
      origins[i].position = static_cast<uint32_t>(i);
    Graph graph(boost::edges_are_unsorted_multi_pass, ends_.begin(), ends_.end(), origins.begin(), vertices_);
    size_t edges = boost::num_edges(graph);
    std::vector<Edge> byPosition(edges), reverse(edges);
    std::vector<double> capacity(edges), residual(edges);
    auto edgeIndex = boost::get(boost::edge_index, graph);
    for (auto [edge, end] = boost::edges(graph); edge != end; ++edge) {
      byPosition[graph[*edge].position] = *edge;
      capacity[(*edge).idx] = capacities_[graph[*edge].position];
    }
    for (auto [edge, end] = boost::edges(graph); edge != end; ++edge)
      reverse[(*edge).idx] = byPosition[graph[*edge].position ^ 1];
    auto vertexIndex = boost::get(boost::vertex_index, graph);
    std::vector<Edge> predecessor(vertices_);
    std::vector<long> distance(vertices_);
    color_.assign(vertices_, boost::white_color);
    boost::boykov_kolmogorov_max_flow(graph, boost::make_iterator_property_map(capacity.begin(), edgeIndex),
                                      boost::make_iterator_property_map(residual.begin(), edgeIndex),
                                      boost::make_iterator_property_map(reverse.begin(), edgeIndex),
                                      boost::make_iterator_property_map(predecessor.begin(), vertexIndex),
                                      boost::make_iterator_property_map(color_.begin(), vertexIndex),
                                      boost::make_iterator_property_map(distance.begin(), vertexIndex),
                                      vertexIndex, static_cast<uint32_t>(source),
                                      static_cast<uint32_t>(sink));
  }
  bool onSourceSide(size_t vertex) const { return color_[vertex] == boost::black_color; }

private:
  size_t vertices_;
  std::vector<std::pair<uint32_t, uint32_t>> ends_;
  std::vector<double> capacities_;
  std::vector<boost::default_color_type> color_;
};

} // namespace

PlacementProblem::PlacementProblem(const ir::Graph &graph, const CostModel &model,
                                   std::span<const size_t> residentInputs,
                                   std::span<const size_t> residentOutputs)
    : nodes_(graph.toposort()) {
  size_t n = nodes_.size();
  canDevice_.resize(n);
  hostSeconds_.resize(n);
  deviceSeconds_.resize(n);
  std::vector<uint32_t> indexOf(graph.nodeIdBound(), 0);
  for (size_t i = 0; i < n; ++i) {
    const Node &node = *nodes_[i];
    indexOf[static_cast<size_t>(node.id())] = static_cast<uint32_t>(i);
    Lifter lifter = lifterFor(node.op().kind());
    canDevice_[i] = lifter && node.pin() != ir::Pin::Host && lifter(node).has_value();
    hostSeconds_[i] = model.nodeSeconds(node, ir::Place::Host);
    deviceSeconds_[i] = canDevice_[i] ? model.nodeSeconds(node, ir::Place::Device) : 0;
  }
  // One crossing per value: node outputs, then graph inputs (constants cross for free).
  crossingOf_.assign(graph.valueIdBound(), -1);
  crossings_.reserve(n + graph.inputs().size());
  readers_.reserve(n * 2);
  std::vector<uint32_t> lastCrossingRead(n, UINT32_MAX); // by node: the last crossing it was a reader of
  auto addCrossing = [&](const Value *value, int32_t producer) {
    uint32_t index = static_cast<uint32_t>(crossings_.size());
    Crossing crossing{producer,
                      value->type().isScalar(),
                      false,
                      false,
                      model.transferSeconds(*value),
                      model.bytes(value->type()),
                      static_cast<uint32_t>(readers_.size()),
                      0};
    for (const ir::Use &use : value->clients()) {
      if (!use.node) continue;
      uint32_t reader = indexOf[static_cast<size_t>(use.node->id())];
      if (lastCrossingRead[reader] == index) continue; // a node reading the value twice reads it once
      lastCrossingRead[reader] = index;
      readers_.push_back(reader);
      ++crossing.readerCount;
    }
    crossingOf_[static_cast<size_t>(value->id())] = static_cast<int32_t>(index);
    crossings_.push_back(crossing);
  };
  for (size_t i = 0; i < n; ++i)
    addCrossing(nodes_[i]->output(), static_cast<int32_t>(i));
  std::vector<bool> resident(graph.inputs().size(), false);
  for (size_t i : residentInputs)
    resident.at(i) = true;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value *input = graph.inputs()[i];
    addCrossing(input, resident[i] && !input->type().isScalar() ? kDeviceInput : kHostInput);
  }
  std::vector<bool> residentOutput(graph.outputs().size(), false);
  for (size_t i : residentOutputs)
    residentOutput.at(i) = true;
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    int32_t index = crossingOf_[static_cast<size_t>(graph.outputs()[i]->id())];
    if (index < 0) continue; // a constant
    (residentOutput[i] ? crossings_[index].readOnDevice : crossings_[index].readOnHost) = true;
  }
}

void PlacementProblem::addTransfers(const Crossing &crossing, const std::vector<bool> &onDevice,
                                    PlacementEstimate &estimate) const {
  bool producedOnDevice = crossing.producer == kDeviceInput ||
                          (crossing.producer >= 0 && onDevice[static_cast<size_t>(crossing.producer)]);
  bool readOnHost = crossing.readOnHost, readOnDevice = crossing.readOnDevice;
  for (uint32_t reader : readersOf(crossing))
    (onDevice[reader] ? readOnDevice : readOnHost) = true;
  // A 0-d host value is passed to device kernels by value; any other value crosses once per direction.
  bool copies = producedOnDevice ? readOnHost : readOnDevice && !crossing.scalar;
  if (!copies) return;
  estimate.transferSeconds += crossing.seconds;
  estimate.transferBytes += crossing.bytes;
  estimate.transfers += 1;
}

PlacementEstimate PlacementProblem::estimate(const std::vector<bool> &onDevice) const {
  PlacementEstimate estimate;
  for (size_t i = 0; i < nodes_.size(); ++i)
    estimate.computeSeconds += nodeSeconds(i, onDevice[i]);
  for (const Crossing &crossing : crossings_)
    addTransfers(crossing, onDevice, estimate);
  return estimate;
}

std::vector<bool> PlacementProblem::solve() const {
  size_t n = nodes_.size(), source = n, sink = n + 1;
  // Infinite: twice every finite capacity together (so that rounding cannot make it equal to their sum), so
  // that no minimum cut crosses such an edge.
  double infinite = 0;
  for (size_t i = 0; i < n; ++i)
    infinite += hostSeconds_[i] + deviceSeconds_[i];
  for (const Crossing &crossing : crossings_)
    infinite += crossing.seconds;
  infinite = 2 * infinite + 1;
  // Capacities to the terminals, gathered per node first: S -> v is paid when v runs on the device, v -> T
  // when it runs on the host.
  std::vector<double> toSource(n, 0), toSink(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!canDevice_[i])
      toSource[i] = infinite;
    else if (!canRunOnHost(i))
      toSink[i] = infinite;
    double base =
        std::min(nodeSeconds(i, false), canDevice_[i] ? nodeSeconds(i, true) : nodeSeconds(i, false));
    toSink[i] += nodeSeconds(i, false) - base;
    if (canDevice_[i]) toSource[i] += nodeSeconds(i, true) - base;
  }
  FlowNetwork network(n + 2);
  std::vector<uint32_t> deviceReaders, hostReaders;
  for (const Crossing &crossing : crossings_) {
    // Host -> device: paid when the producer is on the host and some reader on the device.
    bool hostProducer = crossing.producer == kHostInput ||
                        (crossing.producer >= 0 && canRunOnHost(static_cast<size_t>(crossing.producer)));
    deviceReaders.clear();
    hostReaders.clear();
    for (uint32_t reader : readersOf(crossing)) {
      if (canDevice_[reader]) deviceReaders.push_back(reader);
      if (canRunOnHost(reader)) hostReaders.push_back(reader);
    }
    size_t producer = crossing.producer >= 0            ? static_cast<size_t>(crossing.producer)
                      : crossing.producer == kHostInput ? source
                                                        : sink;
    if (hostProducer && !crossing.scalar && crossing.seconds > 0) {
      if (crossing.readOnDevice) {
        if (producer != source) toSink[producer] += crossing.seconds;
      } else if (deviceReaders.size() == 1) {
        if (producer == source)
          toSource[deviceReaders[0]] += crossing.seconds;
        else
          network.addEdge(producer, deviceReaders[0], crossing.seconds);
      } else if (deviceReaders.size() > 1) {
        size_t aux = network.addVertex();
        network.addEdge(producer, aux, crossing.seconds);
        for (uint32_t reader : deviceReaders)
          network.addEdge(aux, reader, infinite);
      }
    }
    // Device -> host: paid when the producer is on the device and some reader on the host.
    bool deviceProducer = crossing.producer == kDeviceInput ||
                          (crossing.producer >= 0 && canDevice_[static_cast<size_t>(crossing.producer)]);
    if (deviceProducer && crossing.seconds > 0) {
      if (crossing.readOnHost) {
        if (producer != sink) toSource[producer] += crossing.seconds;
      } else if (hostReaders.size() == 1) {
        if (producer == sink)
          toSink[hostReaders[0]] += crossing.seconds;
        else
          network.addEdge(hostReaders[0], producer, crossing.seconds);
      } else if (hostReaders.size() > 1) {
        size_t aux = network.addVertex();
        network.addEdge(aux, producer, crossing.seconds);
        for (uint32_t reader : hostReaders)
          network.addEdge(reader, aux, infinite);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    network.addEdge(source, i, toSource[i]);
    network.addEdge(i, sink, toSink[i]);
  }
  network.cut(source, sink);
  std::vector<bool> onDevice(n);
  for (size_t i = 0; i < n; ++i)
    onDevice[i] = canDevice_[i] && (!canRunOnHost(i) || !network.onSourceSide(i));
  return onDevice;
}

std::string PlacementProblem::explain(size_t node, const std::vector<bool> &onDevice) const {
  const Node &n = *nodes_[node];
  bool device = onDevice[node];
  if (!device && n.pin() == ir::Pin::Host) return "host: pinned by @host";
  if (!device && !canDevice_[node])
    return lifterFor(n.op().kind()) ? "host: its device op refuses these operands"
                                    : "host: no device implementation";
  if (device && !canRunOnHost(node)) return "device: pinned by @device";
  // What moving this node alone would change: its own time, and the copies of what it reads and writes.
  auto transfers = [&](const std::vector<bool> &placement) {
    PlacementEstimate estimate;
    addTransfers(crossings_[node], placement, estimate); // its output
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      int32_t crossing = crossingOf_[static_cast<size_t>(n.input(i)->id())];
      bool seen = false; // an input read twice is one crossing
      for (size_t j = 0; j < i; ++j)
        seen = seen || n.input(j) == n.input(i);
      if (crossing >= 0 && !seen)
        addTransfers(crossings_[static_cast<size_t>(crossing)], placement, estimate);
    }
    return estimate.transferSeconds;
  };
  std::vector<bool> moved = onDevice;
  moved[node] = !device;
  double compute = nodeSeconds(node, !device) - nodeSeconds(node, device);
  double transfer = transfers(moved) - transfers(onDevice);
  auto change = [](double seconds, const char *what, const char *sameVerb) {
    if (seconds == 0) return std::string(sameVerb ? "no " : "change no ") + what;
    const char *verb = seconds < 0 ? "save" : "add";
    std::string prefix = sameVerb && std::string(sameVerb) == verb ? "" : std::string(verb) + " ";
    return prefix + formatSeconds(std::fabs(seconds)) + " of " + what;
  };
  const char *computeVerb = compute < 0 ? "save" : compute > 0 ? "add" : "change";
  return std::string(device ? "device: " : "host: ") + formatSeconds(nodeSeconds(node, device)) + " here, " +
         formatSeconds(nodeSeconds(node, !device)) + (device ? " on the host" : " on the device") +
         "; moving would " + change(compute, "compute", nullptr) + " and " +
         change(transfer, "transfers", computeVerb);
}

void costDeviceLift(ir::Graph &graph, RewriteContext &context, PassProfile &profile, const CostModel &model) {
  auto start = Clock::now();
  PlacementProblem problem(graph, model, context.residentInputs, context.residentOutputs);
  auto built = Clock::now();
  std::vector<bool> onDevice = problem.solve();
  auto solved = Clock::now();
  profile.details["cut: problem seconds"] = std::chrono::duration<double>(built - start).count();
  profile.details["cut: minimum cut seconds"] = std::chrono::duration<double>(solved - built).count();
  std::vector<bool> byNodeId(graph.nodeIdBound(), false);
  std::vector<std::string> reasons;
  if (context.placement) reasons.resize(graph.nodeIdBound());
  for (size_t i = 0; i < problem.nodes().size(); ++i) {
    size_t id = static_cast<size_t>(problem.nodes()[i]->id());
    byNodeId[id] = onDevice[i];
    if (context.placement) reasons[id] = problem.explain(i, onDevice);
  }
  liftToPlacement(graph, context, profile, byNodeId, context.placement ? &reasons : nullptr);
}

} // namespace tg::opt
