// The cost model of device placement: how long a node takes on the host and on the device, and how long a
// value takes to cross between them, estimated from shapes (bytes read and written, flops) and a few speeds
// of each place and of the link. The cost-aware lift (CostDeviceLift.h) minimizes it; every strategy's
// placement is priced with it (estimatePlacedGraph), so that strategies compare on any script.
// docs/optimizer.md describes the model and its defaults.
#pragma once

#include "ir/Graph.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tg::opt {

/// How fast one place computes and moves memory.
struct PlaceSpeeds {
  double memoryBytesPerSecond; // bytes read plus bytes written, streamed
  double f32FlopsPerSecond;    // f32 (and f16) arithmetic
  double f64FlopsPerSecond;
  double intOpsPerSecond; // integer and boolean arithmetic
  double launchSeconds;   // the fixed cost of one node: a kernel launch, or the host's dispatch
};

struct CostModel {
  PlaceSpeeds host, device;
  double linkBytesPerSecond; // host <-> device copies
  double linkLatencySeconds; // the fixed cost of one copy
  // Between the ranks of a distributed run (the collectives): each rank's bandwidth to its neighbour in a
  // ring, and the latency of one message.
  double interconnectBytesPerSecond;
  double interconnectLatencySeconds;
  int ranks = 1; // the processes of the run (`mpirun -np`)
  /// Sizes of symbolic dimensions (`n` in `f32[n, 4]`): bound by `tgc run`'s inputs or `--dim n=SIZE`.
  std::map<std::string, int64_t> dims;
  int64_t defaultDim = 1024; // the size of a symbolic dimension bound by neither

  /// What a collective node (allreduce, allgather, broadcast) costs over the interconnect on `ranks`
  /// processes, as rings do it: an allreduce sends 2 (P - 1) / P of its bytes and waits 2 (P - 1) latencies,
  /// an allgather (P - 1) / P of its result's bytes with P - 1 latencies, a broadcast its bytes with
  /// log2(P) latencies. Zero on one rank.
  double collectiveSeconds(const ir::Node &node) const;

  /// This kind of machine: two cores of a server CPU on the host, an NVIDIA H200 on PCIe 5 as the device.
  static CostModel defaults();
  /// Describes the GPU that is open instead of the default one: memory bandwidth from its memory clock and
  /// bus (at 85% of peak, what streaming kernels reach), f32 and f64 rates from its SMs, clock and
  /// architecture. Attributes that are zero leave their fields as they are; overrides applied before are
  /// applied again, so that a --cost-model file has the last word.
  void refineDevice(int multiprocessors, int computeMajor, int computeMinor, double clockHz,
                    double memoryClockHz, int memoryBusBits);
  /// Overrides fields from a JSON file (docs/optimizer.md lists them); an ir::UserError naming the file and
  /// the field for anything it cannot use.
  void loadOverrides(const std::string &path);
  /// The same from JSON text (`origin` names it in errors).
  void applyOverrides(const std::string &json, const std::string &origin);

  /// The overrides applied so far, as (JSON text, origin).
  std::vector<std::pair<std::string, std::string>> overrides;

  /// The size of a symbolic dimension: bound, or derived from bound ones as the type checker labels them
  /// (`n[0:2]` a slice of n, `n+m` a concatenation), else defaultDim.
  double symbolSize(const std::string &symbol) const;
  double elements(const ir::TensorType &type) const;
  double bytes(const ir::TensorType &type) const;
  /// Flops (or integer operations) `node` performs, wherever it runs.
  double flops(const ir::Node &node) const;
  /// Bytes `node` reads and writes in memory: none for a view (transpose, reshape, slice, broadcast_to).
  double memoryBytes(const ir::Node &node) const;
  /// Seconds `node` takes on `place`: its launch, then the slower of its memory traffic and its arithmetic.
  double nodeSeconds(const ir::Node &node, ir::Place place) const;
  /// Seconds a copy of `value` across the link takes: none for a constant (the runtime places it on the
  /// device once), latency plus bytes over bandwidth otherwise.
  double transferSeconds(const ir::Value &value) const;
};

/// What a placement costs under the model.
struct PlacementEstimate {
  double computeSeconds = 0, transferSeconds = 0, transferBytes = 0;
  size_t transfers = 0;
  double seconds() const { return computeSeconds + transferSeconds; }
};

/// Prices a graph after a placement pass: each node on its place, each to_device and to_host a copy.
PlacementEstimate estimatePlacedGraph(const ir::Graph &graph, const CostModel &model);

/// "1.3 ms", "420 us", "25 s": seconds for people.
std::string formatSeconds(double seconds);

} // namespace tg::opt
