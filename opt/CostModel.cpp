#include "opt/CostModel.h"

#include "ir/Assert.h"
#include "ir/Loop.h"
#include "ir/ScalarGraph.h"
#include "ir/SourceLoc.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tg::opt {

namespace {

using ir::OpKind;

/// Arithmetic per output element of an elementwise or creation op, by Ops.def's cost column: a transcendental
/// function costs a polynomial and a range reduction, square roots and divisions a few operations.
double flopsPerElement(OpKind kind) {
  switch (ir::opInfo(kind).cost) {
  case ir::Cost::Free:
    return 0;
  case ir::Cost::Transcendental:
    return 20;
  case ir::Cost::Slow:
    return 4;
  default:
    return 1;
  }
}

double rate(const PlaceSpeeds &place, ir::DType dtype) {
  switch (dtype) {
  case ir::DType::F32:
    return place.f32FlopsPerSecond;
  case ir::DType::F64:
    return place.f64FlopsPerSecond;
  default:
    return place.intOpsPerSecond;
  }
}

/// The field names of the override file, each with the member it sets (speeds in the file's units).
struct Field {
  const char *name;
  double scale; // file unit -> model unit
  double PlaceSpeeds::*member;
};
constexpr Field kPlaceFields[] = {
    {"memory_gb_per_s", 1e9, &PlaceSpeeds::memoryBytesPerSecond},
    {"f32_gflop_per_s", 1e9, &PlaceSpeeds::f32FlopsPerSecond},
    {"f64_gflop_per_s", 1e9, &PlaceSpeeds::f64FlopsPerSecond},
    {"int_gop_per_s", 1e9, &PlaceSpeeds::intOpsPerSecond},
    {"launch_us", 1e-6, &PlaceSpeeds::launchSeconds},
};

double positiveNumber(const nlohmann::json &value, const std::string &where, const std::string &origin,
                      bool zeroAllowed) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0 ||
      (!zeroAllowed && value.get<double>() == 0))
    throw ir::UserError(origin + ": " + where + " must be a " + (zeroAllowed ? "non-negative" : "positive") +
                        " number, got " + value.dump());
  return value.get<double>();
}

/// A link's section (`link`, `interconnect`): its bandwidth `gb_per_s` and latency `latency_us`.
void applyLink(double &bytesPerSecond, double &latencySeconds, const nlohmann::json &object,
               const std::string &section, const std::string &origin) {
  if (!object.is_object()) throw ir::UserError(origin + ": \"" + section + "\" must be an object");
  for (const auto &[field, number] : object.items()) {
    if (field == "gb_per_s")
      bytesPerSecond = positiveNumber(number, section + ".gb_per_s", origin, false) * 1e9;
    else if (field == "latency_us")
      latencySeconds = positiveNumber(number, section + ".latency_us", origin, true) * 1e-6;
    else
      throw ir::UserError(origin + ": unknown field \"" + section + "." + field +
                          "\"; expected gb_per_s or latency_us");
  }
}

void applyPlace(PlaceSpeeds &place, const nlohmann::json &object, const std::string &section,
                const std::string &origin) {
  if (!object.is_object()) throw ir::UserError(origin + ": \"" + section + "\" must be an object");
  for (const auto &[key, value] : object.items()) {
    const Field *field = nullptr;
    for (const Field &candidate : kPlaceFields)
      if (key == candidate.name) field = &candidate;
    if (!field)
      throw ir::UserError(origin + ": unknown field \"" + section + "." + key +
                          "\"; expected memory_gb_per_s, f32_gflop_per_s, f64_gflop_per_s, int_gop_per_s "
                          "or launch_us");
    bool isLatency = field->member == &PlaceSpeeds::launchSeconds;
    place.*(field->member) = positiveNumber(value, section + "." + key, origin, isLatency) * field->scale;
  }
}

} // namespace

CostModel CostModel::defaults() {
  CostModel model;
  // Two cores of a server CPU (AVX2 or AVX-512): what they stream from memory together, and what the host
  // runtime's vectorized loops and OpenBLAS reach on them; a node costs about a microsecond to dispatch.
  model.host = {12e9, 60e9, 30e9, 30e9, 1e-6};
  // An H200: HBM3e streams about 4.8 TB/s at peak, 4 TB/s in practice; 60 TFLOP/s f32 and 30 TFLOP/s f64
  // outside the tensor cores; a launch costs about 5 us.
  model.device = {4.0e12, 60e12, 30e12, 30e12, 5e-6};
  // PCIe 5 x16 from pageable host memory: about 25 GB/s, and about 10 us per copy.
  model.linkBytesPerSecond = 25e9;
  model.linkLatencySeconds = 10e-6;
  // Ranks on one machine talk through shared memory (about 10 GB/s per direction, a microsecond); across
  // machines, 100 Gb/s Ethernet or InfiniBand EDR, about 12 GB/s and a few microseconds (an override's job).
  model.interconnectBytesPerSecond = 10e9;
  model.interconnectLatencySeconds = 1e-6;
  return model;
}

void CostModel::refineDevice(int multiprocessors, int computeMajor, int computeMinor, double clockHz,
                             double memoryClockHz, int memoryBusBits) {
  if (memoryClockHz > 0 && memoryBusBits > 0)
    device.memoryBytesPerSecond = 0.85 * 2 * memoryClockHz * memoryBusBits / 8; // double data rate
  if (multiprocessors > 0 && clockHz > 0) {
    // FP32 lanes per SM: 64 on sm_60 and sm_70/80 (GP100, V100, A100), 128 on the others since Maxwell; FP64
    // lanes: half of those on the data-center parts (x.0), 1/32 elsewhere. Each lane does an FMA, 2 flops.
    bool dataCenter = computeMinor == 0 && computeMajor >= 6;
    double f32Lanes = dataCenter && computeMajor <= 8 ? 64 : 128;
    double f64Lanes = dataCenter ? f32Lanes / 2 : f32Lanes / 32;
    device.f32FlopsPerSecond = multiprocessors * f32Lanes * 2 * clockHz;
    device.f64FlopsPerSecond = multiprocessors * f64Lanes * 2 * clockHz;
    device.intOpsPerSecond = multiprocessors * 64 * clockHz;
  }
  std::vector<std::pair<std::string, std::string>> applied = std::move(overrides);
  overrides.clear();
  for (const auto &[json, origin] : applied)
    applyOverrides(json, origin);
}

void CostModel::loadOverrides(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ir::UserError("--cost-model: cannot open '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  applyOverrides(text.str(), path);
}

void CostModel::applyOverrides(const std::string &text, const std::string &origin) {
  overrides.emplace_back(text, origin);
  nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) throw ir::UserError(origin + ": not valid JSON");
  if (!root.is_object()) throw ir::UserError(origin + ": expected a JSON object");
  for (const auto &[key, value] : root.items()) {
    if (key == "host") {
      applyPlace(host, value, key, origin);
    } else if (key == "device") {
      applyPlace(device, value, key, origin);
    } else if (key == "link") {
      applyLink(linkBytesPerSecond, linkLatencySeconds, value, key, origin);
    } else if (key == "interconnect") {
      applyLink(interconnectBytesPerSecond, interconnectLatencySeconds, value, key, origin);
    } else if (key == "default_dim") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0)
        throw ir::UserError(origin + ": default_dim must be a non-negative integer, got " + value.dump());
      defaultDim = value.get<int64_t>();
    } else {
      throw ir::UserError(origin + ": unknown field \"" + key +
                          "\"; expected host, device, link, interconnect or default_dim");
    }
  }
}

namespace {

constexpr double kMaxElements = 1e100;

/// The length of Python's `range(size)[start:stop:step]`, the parts given as text (empty: absent).
double sliceLength(double size, const std::string &startText, const std::string &stopText,
                   const std::string &stepText) {
  double step = stepText.empty() ? 1 : std::strtod(stepText.c_str(), nullptr);
  if (step == 0) return 0;
  auto clampIndex = [&](const std::string &text, double absent, double low, double high) {
    if (text.empty()) return absent;
    double index = std::strtod(text.c_str(), nullptr);
    if (index < 0) index += size;
    return std::clamp(index, low, high);
  };
  if (step > 0) {
    double start = clampIndex(startText, 0, 0, size), stop = clampIndex(stopText, size, 0, size);
    return std::max(0.0, std::ceil((stop - start) / step));
  }
  double start = clampIndex(startText, size - 1, -1, size - 1), stop = clampIndex(stopText, -1, -1, size - 1);
  return std::max(0.0, std::ceil((start - stop) / -step));
}

} // namespace

double CostModel::symbolSize(const std::string &symbol) const {
  if (auto bound = dims.find(symbol); bound != dims.end()) return static_cast<double>(bound->second);
  int depth = 0;
  for (size_t i = 0; i < symbol.size(); ++i) {
    depth += symbol[i] == '[' ? 1 : symbol[i] == ']' ? -1 : 0;
    if (symbol[i] == '+' && depth == 0)
      return symbolSize(symbol.substr(0, i)) + symbolSize(symbol.substr(i + 1));
  }
  size_t open = symbol.rfind('[');
  if (!symbol.empty() && symbol.back() == ']' && open != std::string::npos && open > 0) {
    std::string spec = symbol.substr(open + 1, symbol.size() - open - 2);
    std::vector<std::string> parts{""};
    for (char c : spec) {
      if (c == ':')
        parts.emplace_back();
      else
        parts.back() += c;
    }
    if (parts.size() >= 2 && parts.size() <= 3)
      return sliceLength(symbolSize(symbol.substr(0, open)), parts[0], parts[1],
                         parts.size() == 3 ? parts[2] : "");
  }
  return static_cast<double>(defaultDim);
}

double CostModel::elements(const ir::TensorType &type) const {
  double count = 1;
  for (const ir::Dim &dim : type.shape) {
    if (dim.isStatic()) {
      count *= static_cast<double>(dim.size());
      continue;
    }
    count *= symbolSize(dim.symbol());
  }
  // Bounded, so that flops and bytes (and the cut's sums of them) stay finite whatever --dim says.
  return std::min(count, kMaxElements);
}

double CostModel::bytes(const ir::TensorType &type) const {
  return elements(type) * static_cast<double>(ir::dtypeSize(type.dtype));
}

double CostModel::flops(const ir::Node &node) const {
  OpKind kind = node.op().kind();
  double out = elements(node.output()->type());
  if (ir::isView(kind)) return 0;
  if (kind == OpKind::Matmul) {
    const ir::TensorType &a = node.input(0)->type();
    double inner = a.rank() ? elements({a.dtype, {a.shape.back()}, a.place}) : 1;
    return 2 * out * inner;
  }
  if (ir::isReduction(kind)) return elements(node.input(0)->type());
  if (kind == OpKind::Sort || kind == OpKind::Argsort) {
    double n = elements(node.input(0)->type());
    return 4 * n * std::log2(std::max(2.0, n));
  }
  if (kind == OpKind::Fused) return out * static_cast<double>(node.op().attrs().body->memberNames().size());
  if (ir::isConvolution(kind)) {
    // A multiply-add per (forward output, filter element of its group): the forward output is conv's own,
    // conv_transpose's input, conv_filter_grad's second input.
    const ir::TensorType &filters =
        kind == OpKind::ConvFilterGrad ? node.output()->type() : node.input(1)->type();
    const ir::TensorType &forward = kind == OpKind::Conv            ? node.output()->type()
                                    : kind == OpKind::ConvTranspose ? node.input(0)->type()
                                                                    : node.input(1)->type();
    double perFilter =
        elements(filters) / std::max(1.0, elements({filters.dtype, {filters.shape[0]}, filters.place}));
    return 2 * elements(forward) * perFilter;
  }
  if (ir::isWindowOp(kind)) { // pooling
    // A comparison per (output, window place); the gradient also finds each window's maximum again for
    // every input it might have gone to (on a device), about as many.
    double window = 1;
    for (int64_t size : node.op().attrs().window.kernel)
      window *= static_cast<double>(size);
    double outputs = kind == OpKind::MaxPoolGrad ? elements(node.input(1)->type()) : out;
    return (kind == OpKind::MaxPoolGrad ? 2 : 1) * outputs * window;
  }
  return out * flopsPerElement(kind);
}

double CostModel::memoryBytes(const ir::Node &node) const {
  OpKind kind = node.op().kind();
  if (ir::isView(kind)) return 0;
  double total = bytes(node.output()->type());
  if (kind ==
      OpKind::Gather) { // the rows it reads (its output's worth of x, not all of x), written, and its indices
    total *= 2;
    for (size_t i = 1; i < node.inputs().size(); ++i)
      total += bytes(node.input(i)->type());
    return total;
  }
  // zeros_like, ones_like, dim_size and arange read their input's shape, not its elements; an elementwise
  // kernel's gather reads of its table what it gathers (one element per output element at most).
  bool readsShapeOnly = ir::opInfo(kind).fusion == ir::FusionKind::Creation || kind == OpKind::DimSize;
  std::vector<const ir::ScalarInstr *> tables;
  if (kind == OpKind::Fused && !node.op().attrs().body->reduction)
    tables = node.op().attrs().body->tableReaders();
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const ir::TensorType &input = node.input(i)->type();
    if (input.isScalar() || readsShapeOnly) continue;
    if (i < tables.size() && tables[i])
      total += std::min(bytes(input), elements(node.output()->type()) * ir::dtypeSize(input.dtype));
    else
      total += bytes(input);
  }
  return total;
}

double CostModel::nodeSeconds(const ir::Node &node, ir::Place place) const {
  if (node.op().kind() == OpKind::Scan) { // its body's nodes, once per step
    const ir::Loop &loop = *node.op().attrs().loop;
    std::vector<ir::TensorType> inputs;
    for (const ir::Value *input : node.inputs())
      inputs.push_back(input->type());
    double steps = elements({ir::DType::I64, {loop.steps(inputs)}, place}), body = 0;
    for (const ir::Node *inner : loop.body.graph.toposort())
      body += nodeSeconds(*inner, place);
    return steps * body;
  }
  if (ir::isCollective(node.op().kind())) return collectiveSeconds(node);
  const PlaceSpeeds &speeds = place == ir::Place::Device ? device : host;
  // An integer matmul, a comparison or a cast computes in its operands' dtype, not its result's.
  ir::DType dtype = node.inputs().empty() ? node.output()->type().dtype : node.input(0)->type().dtype;
  return speeds.launchSeconds +
         std::max(memoryBytes(node) / speeds.memoryBytesPerSecond, flops(node) / rate(speeds, dtype));
}

double CostModel::collectiveSeconds(const ir::Node &node) const {
  double ranksMinusOne = static_cast<double>(ranks - 1), p = static_cast<double>(ranks);
  if (ranks <= 1) return 0;
  double payload = bytes(node.output()->type());
  switch (node.op().kind()) {
  case OpKind::Allreduce:
    return 2 * ranksMinusOne * (interconnectLatencySeconds + payload / p / interconnectBytesPerSecond);
  case OpKind::Allgather:
    return ranksMinusOne * (interconnectLatencySeconds + payload / p / interconnectBytesPerSecond);
  case OpKind::Broadcast:
    return std::ceil(std::log2(p)) * interconnectLatencySeconds + payload / interconnectBytesPerSecond;
  default:
    TG_ASSERT(false) << node.op().name() << " is not a collective";
    return 0;
  }
}

double CostModel::transferSeconds(const ir::Value &value) const {
  if (value.isConstant()) return 0;
  return linkLatencySeconds + bytes(value.type()) / linkBytesPerSecond;
}

PlacementEstimate estimatePlacedGraph(const ir::Graph &graph, const CostModel &model) {
  PlacementEstimate estimate;
  for (const ir::Node *node : graph.toposort()) {
    OpKind kind = node->op().kind();
    if (kind == OpKind::ToDevice || kind == OpKind::ToHost) {
      const ir::Value &copied = *node->input(0);
      if (copied.isConstant()) continue;
      estimate.transferSeconds += model.transferSeconds(copied);
      estimate.transferBytes += model.bytes(copied.type());
      estimate.transfers += 1;
    } else {
      estimate.computeSeconds += model.nodeSeconds(*node, node->op().place());
    }
  }
  return estimate;
}

std::string formatSeconds(double seconds) {
  char text[32];
  double magnitude = std::fabs(seconds);
  if (magnitude >= 1)
    std::snprintf(text, sizeof text, "%.3g s", seconds);
  else if (magnitude >= 1e-3)
    std::snprintf(text, sizeof text, "%.3g ms", seconds * 1e3);
  else if (magnitude >= 1e-6 || magnitude == 0)
    std::snprintf(text, sizeof text, "%.3g us", seconds * 1e6);
  else
    std::snprintf(text, sizeof text, "%.3g ns", seconds * 1e9);
  return text;
}

} // namespace tg::opt
