// lift (--lift=cost): the placement of least estimated time under the cost model (CostModel.h), found
// exactly as an s-t minimum cut, then built with the global lift's lifters and mapping. See
// docs/optimizer.md.
//
//   host = source side S, device = sink side T; a node v is one vertex:
//     S --(v's time on the device)--> v --(v's time on the host)--> T
//   (infinite where v cannot run there: no lifter, or a pin). A value u of producer p crosses once however
//   many readers it has, through one auxiliary vertex per direction:
//     host -> device:  p --(copy of u)--> a --(inf)--> r     for each reader r that may run on the device
//     device -> host:  r --(inf)--> b --(copy of u)--> p     for each reader r that may run on the host
//   so a copy is paid exactly when p is on one side and some reader on the other. Graph outputs are read on
//   the host (S), new values of params kept on the device on the device (T); such params are on T.
#pragma once

#include "opt/CostModel.h"
#include "opt/Rewrite.h"

#include <span>
#include <string>
#include <vector>

namespace tg::opt {

/// Where each node of a graph (all on the host, before placement) may run, and what a placement costs: the
/// objective the cut minimizes, stated once, so that tests can check the cut against every placement.
class PlacementProblem {
public:
  /// `residentInputs` and `residentOutputs` are graph input and output indices living on the device
  /// (RewriteContext::resident*).
  PlacementProblem(const ir::Graph &graph, const CostModel &model, std::span<const size_t> residentInputs,
                   std::span<const size_t> residentOutputs);

  /// The nodes, in topological order; placements are vectors of this size (true: on the device).
  const std::vector<ir::Node *> &nodes() const { return nodes_; }
  bool canRunOnHost(size_t node) const { return nodes_[node]->pin() != ir::Pin::Device || !canDevice_[node]; }
  bool canRunOnDevice(size_t node) const { return canDevice_[node]; }
  /// The estimated time of a placement (each node on its place, each crossing value copied once).
  PlacementEstimate estimate(const std::vector<bool> &onDevice) const;
  /// A placement of least estimated time, by a minimum cut.
  std::vector<bool> solve() const;
  /// Why `node` runs where `onDevice` puts it: a pin, a missing lifter, or what moving it alone would
  /// change ("host: moving would save 0.4 ms of compute and add 1.3 ms of transfers").
  std::string explain(size_t node, const std::vector<bool> &onDevice) const;

private:
  static constexpr int32_t kHostInput = -1, kDeviceInput = -2; // producers of graph inputs
  struct Crossing {                                            // a value read somewhere
    int32_t producer;                                          // node index, or kHostInput/kDeviceInput
    bool scalar;                                               // 0-d: read on the device by value
    bool readOnHost = false, readOnDevice = false;             // by a graph output
    double seconds;                                            // one copy
    double bytes;
    uint32_t firstReader = 0, readerCount = 0; // in readers_
  };
  std::span<const uint32_t> readersOf(const Crossing &crossing) const {
    return {readers_.data() + crossing.firstReader, crossing.readerCount};
  }
  /// What copying `crossing` costs under a placement: (seconds, bytes, copies).
  void addTransfers(const Crossing &crossing, const std::vector<bool> &onDevice,
                    PlacementEstimate &estimate) const;
  double nodeSeconds(size_t node, bool device) const {
    return device ? deviceSeconds_[node] : hostSeconds_[node];
  }

  std::vector<ir::Node *> nodes_;
  std::vector<bool> canDevice_;
  std::vector<double> hostSeconds_, deviceSeconds_;
  std::vector<Crossing> crossings_; // node outputs first (crossing i is node i's output), then graph inputs
  std::vector<uint32_t> readers_;   // node indices, each once per crossing
  std::vector<int32_t> crossingOf_; // by value id: its crossing, or -1 (constants)
};

/// The cost-aware lift. Preconditions and guarantees as globalDeviceLift's, with the placement that
/// PlacementProblem::solve finds; records the estimate in `profile.details` and a reason per node in
/// context.placement when it is set.
void costDeviceLift(ir::Graph &graph, RewriteContext &context, PassProfile &profile, const CostModel &model);

} // namespace tg::opt
