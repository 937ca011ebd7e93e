#include "opt/Merge.h"

#include "ir/Loop.h"
#include "ir/NodeWalk.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <unordered_map>

namespace tg::opt {

namespace {

/// An open-addressing table of entries by hash, for a pass that looks each node up once. A slot is 8 bytes
/// (32 bits of the hash and the entry's index), so the table of a 100k-node graph stays in the L2 cache: a
/// lookup is a random access, and out of cache each costs a memory round trip. Entries themselves are read
/// only when the hash bits match.
template <typename T>
class HashedEntries {
public:
  explicit HashedEntries(size_t expected) : slots_(std::bit_ceil(expected + expected / 3 + 16)) {}

  /// The first entry of this hash that `equal` accepts, or nullptr.
  template <typename Equal>
  T *find(size_t hash, Equal equal) const {
    uint32_t tag = static_cast<uint32_t>(hash >> 32);
    for (size_t i = hash & mask();; i = (i + 1) & mask()) {
      const Slot &slot = slots_[i];
      if (!slot.index) return nullptr;
      if (slot.tag == tag && equal(entries_[slot.index - 1])) return entries_[slot.index - 1];
    }
  }
  void insert(size_t hash, T *entry) {
    if (4 * (entries_.size() + 1) > 3 * slots_.size()) grow();
    entries_.push_back(entry);
    place(hash, static_cast<uint32_t>(entries_.size()));
  }

private:
  struct Slot {
    uint32_t tag = 0;
    uint32_t index = 0; // into entries_, plus one; 0 for an empty slot
  };
  size_t mask() const { return slots_.size() - 1; }
  void place(size_t hash, uint32_t index) {
    size_t i = hash & mask();
    while (slots_[i].index)
      i = (i + 1) & mask();
    slots_[i] = Slot{static_cast<uint32_t>(hash >> 32), index};
    hashes_.push_back(hash);
  }
  void grow() {
    slots_.assign(2 * slots_.size(), Slot{});
    std::vector<size_t> hashes = std::move(hashes_);
    hashes_.clear();
    for (size_t i = 0; i < hashes.size(); ++i)
      place(hashes[i], static_cast<uint32_t>(i + 1));
  }

  std::vector<Slot> slots_;
  std::vector<T *> entries_;
  std::vector<size_t> hashes_; // by entry, for growing
};

size_t mixHash(size_t hash) {
  // A 64-bit finalizer (MurmurHash3's), so that ids and small hashes spread over the table's low bits.
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdULL;
  hash ^= hash >> 33;
  return hash;
}

/// The nodes kept so far, found by what they compute. Equal nodes read the same first input, so a node's
/// candidates are the readers of its first input that were kept before it: most values have one or two
/// readers, and scanning them costs no hash and no random access into a table that, on a large graph, has
/// left the cache. A value with many readers (a graph input, a shared constant) switches to the hash table,
/// once, taking its kept readers along, so that every kept node stays findable where its later equals look.
class KeptNodes {
public:
  explicit KeptNodes(const ir::Graph &graph)
      : table_(graph.liveNodeCount() / 8), hashed_(graph.valueIdBound(), false),
        keptKind_(graph.nodeIdBound(), kNotKept) {}

  /// A kept node equal to `node`, or nullptr.
  ir::Node *find(const ir::Node *node) {
    const ir::Value *first = node->inputs().empty() ? nullptr : node->input(0);
    if (!first || usesTable(first))
      return table_.find(hashOf(node), [&](const ir::Node *seen) { return equal(seen, node); });
    // Only a kept reader of the same kind is read (on a large graph, each a cache miss).
    auto kind = static_cast<uint16_t>(node->op().kind());
    for (const ir::Use &use : first->clients())
      if (use.node && use.index == 0 && keptKind_[use.nodeId] == kind && equal(use.node, node))
        return use.node;
    return nullptr;
  }

  void keep(ir::Node *node) {
    keptKind_[static_cast<size_t>(node->id())] = static_cast<uint16_t>(node->op().kind());
    if (node->inputs().empty() || usesTable(node->input(0))) table_.insert(hashOf(node), node);
  }

private:
  static constexpr size_t kScanLimit = 8;

  /// Whether the readers of `first` are looked up in the table; switches a value whose readers outgrew the
  /// scan, moving its kept readers there.
  bool usesTable(const ir::Value *first) {
    size_t id = static_cast<size_t>(first->id());
    if (!hashed_[id] && first->clients().size() > kScanLimit) {
      hashed_[id] = true;
      for (const ir::Use &use : first->clients())
        if (use.node && use.index == 0 && keptKind_[use.nodeId] != kNotKept)
          table_.insert(hashOf(use.node), use.node);
    }
    return hashed_[id];
  }
  static bool equal(const ir::Node *a, const ir::Node *b) {
    return a->op() == b->op() && std::ranges::equal(a->inputs(), b->inputs()) && a->pin() == b->pin();
  }
  static size_t hashOf(const ir::Node *node) {
    size_t hash = node->op().hash();
    for (ir::Value *input : node->inputs())
      hash = hash * 1000003u ^ static_cast<size_t>(input->id());
    return mixHash(hash);
  }

  HashedEntries<ir::Node> table_;
  std::vector<uint8_t> hashed_; // by value id: its readers are in table_
  static constexpr uint16_t kNotKept = 0xffff;
  std::vector<uint16_t> keptKind_; // by node id: the op kind of a kept node, else kNotKept
};

/// A scan whose gradient rebuilt it to also stack what the backward pass reads (Loop::extends) is read
/// through that copy, which computes the same outputs first: a use of the original made after the gradient
/// (`output hs` after `grad`) would otherwise run the loop twice.
void mergeExtendedLoops(ir::Graph &graph, PassProfile &profile) {
  std::unordered_map<const ir::Loop *, ir::Node *> extending;
  for (ir::Node *node : graph.toposort())
    if (node->op().kind() == ir::OpKind::Scan && node->op().attrs().loop->extends)
      extending[node->op().attrs().loop->extends.get()] = node;
  if (extending.empty()) return;
  size_t merged = 0;
  for (ir::Node *node : graph.toposort()) {
    if (node->op().kind() != ir::OpKind::Scan) continue;
    auto found = extending.find(node->op().attrs().loop.get());
    if (found == extending.end()) continue;
    ir::Node *copy = found->second;
    if (copy->op().place() != node->op().place() || !std::ranges::equal(copy->inputs(), node->inputs()))
      continue;
    for (size_t k = 0; k < node->outputs().size(); ++k)
      graph.substitute(node->outputs()[k], copy->outputs()[k]);
    ++merged;
  }
  if (merged) profile.rewrites["merge a scan into its gradient's copy"] += merged;
}

} // namespace

void mergeEquivalent(ir::Graph &graph, PassProfile &profile) {
  mergeExtendedLoops(graph, profile);
  // Producers come first in topological order, so a node's inputs are already canonical when it is looked at.
  graph.removeDeadNodes(); // so that the order lists every live node
  std::vector<ir::Node *> order = graph.toposort();
  HashedEntries<ir::Value> constants(order.size() / 4);
  KeptNodes nodes(graph);
  size_t mergedConstants = 0;
  std::vector<ir::Node *> kept, merged;
  kept.reserve(order.size());
  for (ir::Node *node : ir::inOrder(order)) {
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      ir::Value *input = node->input(i);
      if (!input->isConstant()) continue;
      size_t hash = mixHash(ir::hashTensorData(input->constant()));
      ir::Value *canonical = constants.find(hash, [input](const ir::Value *seen) {
        return seen == input || seen->constant() == input->constant();
      });
      if (!canonical) {
        constants.insert(hash, input);
      } else if (canonical != input) {
        graph.substitute(input, canonical);
        ++mergedConstants;
      }
    }
    ir::Node *equal = nodes.find(node);
    if (!equal) {
      nodes.keep(node);
      kept.push_back(node);
      continue;
    }
    for (size_t k = 0; k < node->outputs().size(); ++k)
      graph.substitute(node->outputs()[k], equal->outputs()[k]);
    merged.push_back(node);
  }
  // A merged node is read by nothing now, while what it reads is read by its equal: the merged nodes are the
  // ones that died, removed together (a value many of them read is filtered once). Each gave its readers to
  // an equal node earlier in the order, which a walk from the outputs has already finished when it reaches
  // them: the order is the old one without the merged nodes.
  graph.assumeToposort(std::move(kept), merged);
  if (mergedConstants) profile.rewrites["merge constants"] += mergedConstants;
  if (!merged.empty()) profile.rewrites["merge nodes"] += merged.size();
}

} // namespace tg::opt
