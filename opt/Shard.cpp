#include "opt/Shard.h"

#include "ir/Assert.h"
#include "ir/Loop.h"
#include "ir/TensorData.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace tg::opt {

namespace {

using ir::Dim;
using ir::Graph;
using ir::Node;
using ir::Op;
using ir::OpAttrs;
using ir::OpKind;
using ir::Value;

constexpr int kWhole = -1;

/// A value of the split graph, and the axis it is split along (kWhole: every rank holds all of it).
struct Part {
  Value *value;
  int axis;
};

int rankOf(const Value *value) {
  return static_cast<int>(value->type().rank());
}

class Sharder {
public:
  Sharder(Graph &graph, std::string dimension, PassProfile &profile)
      : graph_(graph), dimension_(std::move(dimension)), profile_(profile) {}

  /// Splits the graph; its outputs split along the dimension are gathered whole, unless `gatherOutputs` is
  /// false (a loop's body: its carries stay split), and returns each output's part.
  std::vector<Part> run(bool gatherOutputs = true) {
    Dim split = Dim::named(dimension_);
    for (Value *input : graph_.inputs()) {
      const ir::Shape &shape = input->type().shape;
      auto at = std::find(shape.begin(), shape.end(), split);
      if (at != shape.end()) parts_[input] = {input, static_cast<int>(at - shape.begin())};
    }
    std::vector<Node *> order = graph_.toposort();
    for (Node *node : order) {
      current_ = node;
      std::vector<Part> in;
      for (Value *input : node->inputs())
        in.push_back(partOf(input));
      std::vector<Part> out = rewrite(*node, std::move(in));
      for (size_t k = 0; k < out.size(); ++k)
        parts_[node->outputs()[k]] = out[k];
    }
    std::vector<Part> outputs;
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      Part part = partOf(graph_.outputs()[i]);
      if (gatherOutputs) part = made(part);
      if (part.value != graph_.outputs()[i]) graph_.setOutput(i, part.value);
      outputs.push_back(part);
    }
    bucketAllreduces();
    return outputs;
  }

private:
  Part partOf(Value *value) const {
    auto found = parts_.find(value);
    return found == parts_.end() ? Part{value, kWhole} : found->second;
  }

  Value *add(OpKind kind, OpAttrs attrs, std::vector<Value *> inputs) {
    return graph_.addNode(Op(kind, std::move(attrs)), std::move(inputs), current_->loc())->output();
  }
  static OpAttrs onAxis(int axis) {
    OpAttrs attrs;
    attrs.axes = {axis};
    return attrs;
  }

  /// The value whole on every rank (an allgather when split), made once per value.
  Value *whole(Part part) {
    if (part.axis == kWhole) return part.value;
    Value *&gathered = gathered_[part.value];
    if (!gathered) {
      gathered = add(OpKind::Allgather, onAxis(part.axis), {part.value});
      profile_.details["allgathers inserted"] += 1;
    }
    return gathered;
  }
  Part made(Part part) { return {whole(part), kWhole}; }

  /// A value whose axis 0 is the whole of `split`'s (split along it) and which holds nothing: what arange
  /// needs of its input, gathered without moving a byte (x[..., None][..., 0:0]).
  Value *lengthOnly(Value *split) {
    if (lengthOnly_) return lengthOnly_; // every split value's split axis has the same length
    int rank = rankOf(split);
    OpAttrs expand;
    expand.axes = {rank};
    OpAttrs empty;
    empty.slices.resize(static_cast<size_t>(rank) + 1);
    empty.slices.back().hasStart = empty.slices.back().hasStop = true;
    Value *nothing = add(OpKind::Slice, empty, {add(OpKind::ExpandDims, expand, {split})});
    return lengthOnly_ = whole({nothing, 0});
  }

  /// This rank's block along `axis` of a value every rank holds whole.
  Value *block(Value *value, int axis) {
    Value *&cut = blocks_[{value, axis}];
    if (!cut) cut = add(OpKind::Shard, onAxis(axis), {value});
    return cut;
  }

  /// The split dimension's whole size (an i64 scalar): the ranks' block sizes summed, once for the graph
  /// (every value split along an axis has the same block there).
  Value *splitSize(Value *split, int axis) {
    if (!splitSize_) splitSize_ = allreduce(add(OpKind::DimSize, onAxis(axis), {split}), OpKind::Sum);
    return splitSize_;
  }

  Value *allreduce(Value *value, OpKind combine) {
    OpAttrs attrs;
    attrs.combine = combine;
    profile_.details["allreduces inserted"] += 1;
    return add(OpKind::Allreduce, std::move(attrs), {value});
  }

  /// The node on these values: itself when they are its inputs, else a copy reading them.
  Node *emit(Node &node, const std::vector<Part> &in) {
    std::vector<Value *> values;
    for (const Part &part : in)
      values.push_back(part.value);
    if (std::equal(values.begin(), values.end(), node.inputs().begin(), node.inputs().end())) return &node;
    return graph_.addNode(node.op(), std::move(values), node.loc(), node.pin());
  }
  /// The node's outputs, split along `axis` (kWhole for a node of several outputs).
  std::vector<Part> keep(Node &node, const std::vector<Part> &in, int axis) {
    Node *emitted = emit(node, in);
    std::vector<Part> out;
    for (Value *output : emitted->outputs())
      out.push_back({output, emitted->outputs().size() == 1 ? axis : kWhole});
    return out;
  }
  /// Every operand whole: the node computes what a single process does, on every rank.
  std::vector<Part> gathered(Node &node, std::vector<Part> in) {
    for (Part &part : in)
      part = made(part);
    return keep(node, in, kWhole);
  }

  std::vector<Part> rewrite(Node &node, std::vector<Part> in) {
    bool split = std::any_of(in.begin(), in.end(), [](const Part &p) { return p.axis != kWhole; });
    if (!split) return keep(node, in, kWhole);
    OpKind kind = node.op().kind();
    const OpAttrs &attrs = node.op().attrs();
    const ir::OpInfo &info = node.op().info();
    if (info.fusion == ir::FusionKind::Elementwise) return broadcasting(node, std::move(in));
    if (info.fusion == ir::FusionKind::Reduce) return reduction(node, std::move(in));
    switch (kind) {
    case OpKind::Matmul:
      return matmul(node, std::move(in));
    case OpKind::Transpose: {
      auto at = std::find(attrs.axes.begin(), attrs.axes.end(), in[0].axis);
      return keep(node, in, static_cast<int>(at - attrs.axes.begin()));
    }
    case OpKind::ExpandDims: {
      int axis = in[0].axis;
      for (int64_t added : attrs.axes) // sorted: each new axis at or before the split one moves it on
        if (added <= axis) ++axis;
      return keep(node, in, axis);
    }
    case OpKind::Reshape:
      return reshape(node, std::move(in));
    case OpKind::Slice:
      return slice(node, std::move(in));
    case OpKind::Concat:
    case OpKind::Stack:
      return join(node, std::move(in));
    case OpKind::ZerosLike:
    case OpKind::OnesLike:
      return keep(node, in, in[0].axis);
    case OpKind::Arange:
    case OpKind::Rand:
    case OpKind::Randn: {
      // Their length or shape from the input: made whole, each element the single process's (cut where
      // they meet split values).
      if (kind == OpKind::Arange && in[0].axis != 0) return keep(node, in, kWhole); // its length is whole
      const std::vector<ir::Number> &bounds = attrs.scalars;
      if (kind == OpKind::Arange && bounds.at(0).toDouble() == 0 && bounds.at(2).toDouble() == 1)
        rowNumbers_.emplace(node.output(), node.op()); // the split axis's row numbers
      Part shape = kind == OpKind::Arange ? Part{lengthOnly(in[0].value), kWhole} : made(in[0]);
      return keep(node, {shape}, kWhole);
    }
    case OpKind::DimSize:
      if (attrs.axes.at(0) == in[0].axis) return {{splitSize(in[0].value, in[0].axis), kWhole}};
      return keep(node, in, kWhole);
    case OpKind::Sort:
    case OpKind::Argsort:
    case OpKind::Cumsum: {
      int rank = rankOf(in[0].value);
      int64_t axis = attrs.axes.empty() ? kWhole : (attrs.axes[0] + rank) % rank;
      if (axis == in[0].axis || axis == kWhole) return gathered(node, std::move(in));
      return keep(node, in, in[0].axis);
    }
    case OpKind::Gather:
      return gather(node, std::move(in));
    case OpKind::ScatterAdd:
      return scatterAdd(node, std::move(in));
    case OpKind::Conv:
    case OpKind::ConvTranspose:
    case OpKind::MaxPool:
    case OpKind::MaxPoolGrad:
    case OpKind::MaxPoolGather:
    case OpKind::ConvFilterGrad:
      return window(node, std::move(in));
    case OpKind::Scan:
      return scan(node, std::move(in));
    default: // scatter_set, set_slice and the rest: on whole operands
      return gathered(node, std::move(in));
    }
  }

  /// Operands from `begin` on placed in one shape: `there(i, axis)` is the place of operand i's axis in it,
  /// `back(i, place)` operand i's axis at a place (-1 where it has none). The first split operand's place is
  /// where the shape is split; an operand split elsewhere is made whole, and a whole one spanning that place
  /// is cut there. Returns the place, kWhole when no operand is split.
  template <typename There, typename Back>
  int agree(std::vector<Part> &in, size_t begin, There there, Back back) {
    int target = kWhole;
    for (size_t i = begin; i < in.size(); ++i) {
      if (in[i].axis == kWhole) continue;
      int place = there(i, in[i].axis);
      if (target == kWhole)
        target = place;
      else if (place != target)
        in[i] = made(in[i]);
    }
    if (target == kWhole) return kWhole;
    for (size_t i = begin; i < in.size(); ++i) {
      int axis = back(i, target);
      if (in[i].axis == kWhole && axis >= 0 && !in[i].value->type().shape[axis].isOne())
        in[i] = {block(in[i].value, axis), axis};
    }
    return target;
  }

  /// Operands broadcast together (right-aligned) to `rank` axes, the result split where they agree (above).
  /// `exempt` (an operand index, or -1) reads its axis `exemptAxis` whole: it is never cut there, and is
  /// made whole when split along it.
  std::vector<Part> aligned(Node &node, std::vector<Part> in, int rank, int exempt = -1,
                            int exemptAxis = -1) {
    if (exempt >= 0 && in[exempt].axis == exemptAxis) in[exempt] = made(in[exempt]);
    auto lead = [&](size_t i) { return rank - rankOf(in[i].value); };
    int target = agree(
        in, 0, [&](size_t i, int axis) { return axis + lead(i); },
        [&](size_t i, int place) {
          int axis = place - lead(i);
          return static_cast<int>(i) == exempt && axis == exemptAxis ? -1 : axis;
        });
    return keep(node, in, target);
  }

  std::vector<Part> broadcasting(Node &node, std::vector<Part> in) {
    return aligned(node, std::move(in), rankOf(node.output()));
  }

  std::vector<Part> reduction(Node &node, std::vector<Part> in) {
    const OpAttrs &attrs = node.op().attrs();
    OpKind kind = node.op().kind();
    Part x = in[0];
    std::vector<int64_t> axes = attrs.axes;
    if (axes.empty()) {
      if (ir::isPositionalReduction(kind)) return gathered(node, std::move(in)); // of the flattened array
      for (int axis = 0; axis < rankOf(x.value); ++axis)
        axes.push_back(axis);
    }
    if (std::find(axes.begin(), axes.end(), x.axis) == axes.end()) {
      int before =
          static_cast<int>(std::count_if(axes.begin(), axes.end(), [&](int64_t a) { return a < x.axis; }));
      return keep(node, in, attrs.keepdims ? x.axis : x.axis - before);
    }
    switch (kind) {
    case OpKind::Sum:
    case OpKind::Prod:
      return {{allreduce(emit(node, in)->output(), kind), kWhole}};
    case OpKind::Max:
    case OpKind::Min:
      return {{extreme(emit(node, in)->output(), kind), kWhole}};
    case OpKind::Any:
      return {{allreduce(emit(node, in)->output(), OpKind::Max), kWhole}};
    case OpKind::All:
      return {{allreduce(emit(node, in)->output(), OpKind::Min), kWhole}};
    case OpKind::Mean:
      return {{mean(node, x.value, x.axis, axes), kWhole}};
    default: // argmax, argmin along the split axis
      return gathered(node, std::move(in));
    }
  }

  /// The ranks' max or min of `local`. A NaN wins, as in tgc's max and min (MPI's and NCCL's skip it): where
  /// any rank's is NaN, the result is.
  Value *extreme(Value *local, OpKind kind) {
    Value *reduced = allreduce(local, kind);
    ir::DType dtype = local->type().dtype;
    if (!ir::isFloat(dtype)) return reduced;
    Value *anyNan = allreduce(add(OpKind::Ne, {}, {local, local}), OpKind::Max);
    Value *nan = graph_.addConstant(ir::TensorData::scalar(dtype, std::numeric_limits<double>::quiet_NaN()));
    return add(OpKind::Where, {}, {anyNan, nan, reduced});
  }

  /// mean over axes that include the split one: every rank's sum over every rank's count.
  Value *mean(Node &node, Value *x, int splitAxis, const std::vector<int64_t> &axes) {
    OpAttrs sumAttrs = node.op().attrs();
    sumAttrs.axes = axes;
    Value *total = allreduce(add(OpKind::Sum, sumAttrs, {x}), OpKind::Sum);
    int64_t known = 1;
    Value *count = nullptr;
    for (int64_t axis : axes) {
      const Dim &dim = x->type().shape[axis];
      if (dim.isStatic()) {
        known *= dim.size();
        continue;
      }
      Value *size = axis == splitAxis ? splitSize(x, splitAxis)
                                      : add(OpKind::DimSize, onAxis(static_cast<int>(axis)), {x});
      count = count ? add(OpKind::Mul, {}, {count, size}) : size;
    }
    if (known != 1)
      count = add(
          OpKind::Mul, {},
          {count, graph_.addConstant(ir::TensorData::scalar(ir::DType::I64, static_cast<double>(known)))});
    ir::DType dtype = node.output()->type().dtype;
    auto cast = [&](Value *value) {
      if (value->type().dtype == dtype) return value;
      OpAttrs to;
      to.dtype = dtype;
      return add(OpKind::Cast, to, {value});
    };
    return add(OpKind::Div, {}, {cast(total), cast(count)});
  }

  /// a @ b: batch axes and a's rows or b's columns stay split; a split contraction axis gives partial
  /// products, summed across the ranks.
  std::vector<Part> matmul(Node &node, std::vector<Part> in) {
    int ra = rankOf(in[0].value), rb = rankOf(in[1].value), ro = rankOf(node.output());
    constexpr int kContracted = -2;
    // The result's axis of each operand's axis, or kContracted.
    auto resultAxis = [&](int operand, int axis) {
      int rank = operand == 0 ? ra : rb;
      if (rank == 1) return kContracted;
      if (operand == 0 && axis == rank - 1) return kContracted;
      if (operand == 1 && axis == rank - 2) return kContracted;
      if (axis >= rank - 2) return operand == 0 ? ro - (rb == 1 ? 1 : 2) : ro - 1; // a's rows, b's columns
      int batch = ro - (ra >= 2) - (rb >= 2);
      return axis + batch - (rank - 2);
    };
    auto contractedAxis = [&](int operand) {
      int rank = operand == 0 ? ra : rb;
      return operand == 0 ? rank - 1 : (rank == 1 ? 0 : rank - 2);
    };
    int ax[2] = {in[0].axis == kWhole ? kWhole : resultAxis(0, in[0].axis),
                 in[1].axis == kWhole ? kWhole : resultAxis(1, in[1].axis)};
    if (ax[0] != kWhole && ax[1] != kWhole && ax[0] != ax[1]) { // split along different axes
      in[1] = made(in[1]);
      ax[1] = kWhole;
    }
    int splitAt = ax[0] != kWhole ? ax[0] : ax[1];
    if (splitAt == kContracted) {
      for (int operand : {0, 1})
        if (in[operand].axis == kWhole) in[operand] = {block(in[operand].value, contractedAxis(operand)), 0};
      return {{allreduce(emit(node, in)->output(), OpKind::Sum), kWhole}};
    }
    // A split batch axis: the other operand is cut there unless it broadcasts along it.
    for (int operand : {0, 1}) {
      if (in[operand].axis != kWhole) continue;
      int rank = operand == 0 ? ra : rb;
      for (int axis = 0; axis + 2 < rank; ++axis)
        if (resultAxis(operand, axis) == splitAt && !in[operand].value->type().shape[axis].isOne())
          in[operand] = {block(in[operand].value, axis), axis};
    }
    return keep(node, in, splitAt);
  }

  /// A reshape keeps the split when the axis comes through unchanged: the split dimension, after axes of the
  /// same static product.
  std::vector<Part> reshape(Node &node, std::vector<Part> in) {
    const ir::Shape &from = in[0].value->type().shape, &to = node.output()->type().shape;
    auto staticProduct = [](const ir::Shape &shape, size_t end) -> std::optional<int64_t> {
      int64_t product = 1;
      for (size_t i = 0; i < end; ++i) {
        if (!shape[i].isStatic()) return std::nullopt;
        product *= shape[i].size();
      }
      return product;
    };
    // The split axis must be the symbolic one: a static size there (n unified with a param's 11) is the
    // whole size, which the reshape's own shape then states.
    Dim split = Dim::named(dimension_);
    auto before = staticProduct(from, static_cast<size_t>(in[0].axis));
    for (size_t axis = 0; axis < to.size(); ++axis)
      if (from[in[0].axis] == split && to[axis] == split && before && staticProduct(to, axis) == before)
        return keep(node, in, static_cast<int>(axis));
    return gathered(node, std::move(in));
  }

  std::vector<Part> slice(Node &node, std::vector<Part> in) {
    const std::vector<ir::SliceSpec> &slices = node.op().attrs().slices;
    int axis = in[0].axis;
    if (axis < static_cast<int>(slices.size())) {
      const ir::SliceSpec &spec = slices[axis];
      if (spec.isIndex || spec.hasStart || spec.hasStop || spec.step != 1)
        return gathered(node, std::move(in));
    }
    int removed = 0;
    for (int i = 0; i < std::min(axis, static_cast<int>(slices.size())); ++i)
      removed += slices[i].isIndex;
    return keep(node, in, axis - removed);
  }

  /// concat and stack: along another axis than the split one, every operand cut alike.
  std::vector<Part> join(Node &node, std::vector<Part> in) {
    bool stack = node.op().kind() == OpKind::Stack;
    int rank = rankOf(node.output());
    int along = static_cast<int>((node.op().attrs().axes.at(0) + rank) % rank);
    for (Part &part : in) // concat along the split axis needs every rank's rows
      if (!stack && part.axis == along) part = made(part);
    auto same = [](size_t, int axis) { return axis; };
    int target = agree(in, 0, same, same); // in the operands' numbering
    if (target == kWhole) return keep(node, in, kWhole);
    return keep(node, in, stack && target >= along ? target + 1 : target);
  }

  /// gather(x, indices...): split along an axis of x it does not index, or along the indices' broadcast
  /// axes; x is made whole where indexed along its split axis. (With keepdims, as take_along_axis: x and
  /// the index broadcast together, x read whole along the indexed axis.)
  std::vector<Part> gather(Node &node, std::vector<Part> in) {
    const OpAttrs &attrs = node.op().attrs();
    int first = static_cast<int>(attrs.axes.at(0));
    if (attrs.keepdims) return aligned(node, std::move(in), rankOf(node.output()), 0, first);
    if (ownRows(node, in, 1)) return keep(node, in, 0);
    int indexed = static_cast<int>(in.size()) - 1;
    if (in[0].axis >= first && in[0].axis < first + indexed) in[0] = made(in[0]);
    int indexRank = 0;
    for (size_t i = 1; i < in.size(); ++i)
      indexRank = std::max(indexRank, rankOf(in[i].value));
    bool indicesSplit = std::any_of(in.begin() + 1, in.end(), [](const Part &p) { return p.axis != kWhole; });
    if (in[0].axis != kWhole && indicesSplit) in[0] = made(in[0]);
    if (in[0].axis != kWhole) {
      int axis = in[0].axis < first ? in[0].axis : in[0].axis - indexed + indexRank;
      return keep(node, in, axis);
    }
    // The indices broadcast together: split along one of their axes.
    auto lead = [&](size_t i) { return indexRank - rankOf(in[i].value); };
    int target = agree(
        in, 1, [&](size_t i, int axis) { return axis + lead(i); },
        [&](size_t i, int place) { return place - lead(i); });
    return keep(node, in, target == kWhole ? kWhole : first + target);
  }

  /// gather(x, i, ...) or scatter_add(x, update, i, ...) with x split along axis 0 and i the row numbers of
  /// the split axis (x[arange(n), labels], cross-entropy's pick, and its gradient): each rank's rows are read
  /// or written by its own, numbered from 0 (arange of its block); the other indices (of rank 1 at most) and
  /// the update, cut alike. Whether it applied; `in` is changed only when it did.
  bool ownRows(Node &node, std::vector<Part> &in, size_t firstIndex) {
    const OpAttrs &attrs = node.op().attrs();
    auto rows = rowNumbers_.find(node.input(firstIndex));
    if (attrs.keepdims || attrs.axes.at(0) != 0 || in[0].axis != 0 || rows == rowNumbers_.end()) return false;
    std::vector<Part> local = in;
    local[firstIndex] = {add(OpKind::Arange, rows->second.attrs(), {in[0].value}), 0};
    int indices = static_cast<int>(in.size() - firstIndex);
    int selected = rankOf(in[0].value) - indices + 1; // the indices broadcast to one axis, the region's
    for (size_t i = 1; i < in.size(); ++i) {
      Part &part = local[i];
      int rank = rankOf(part.value);
      if (i > firstIndex && rank > 1) return false;
      // The region's axis in this operand: an index's only one, an update's right-aligned to the region.
      int axis = i > firstIndex ? rank - 1 : rank - selected;
      if (i == firstIndex || axis < 0 || part.axis == axis) continue;
      if (part.axis != kWhole) return false;
      if (!part.value->type().shape[axis].isOne()) part = {block(part.value, axis), axis};
    }
    in = std::move(local);
    return true;
  }

  /// scatter_add(x, update, indices...) with x whole and the update or indices split: each rank adds its
  /// updates to zeros, the ranks' sums are summed, and x is added once. The operands are placed in the shape
  /// gather would select: an update right-aligned to it; the indices broadcast together (right-aligned) in
  /// its axes from axes[0] on.
  std::vector<Part> scatterAdd(Node &node, std::vector<Part> in) {
    const OpAttrs &attrs = node.op().attrs();
    if (ownRows(node, in, 2)) return keep(node, in, 0);
    if (attrs.keepdims) return scatterAlong(node, std::move(in));
    if (in[0].axis != kWhole) return gathered(node, std::move(in));
    int first = static_cast<int>(attrs.axes.at(0));
    int indexed = static_cast<int>(in.size()) - 2, indexRank = 0;
    for (size_t i = 2; i < in.size(); ++i)
      indexRank = std::max(indexRank, rankOf(in[i].value));
    int selected = rankOf(in[0].value) - indexed + indexRank;
    // The selected shape's axis of an operand's axis, and back (-1 where it has none).
    auto toSelected = [&](size_t operand, int axis) {
      int rank = rankOf(in[operand].value);
      return operand == 1 ? axis + selected - rank : first + axis + indexRank - rank;
    };
    auto fromSelected = [&](size_t operand, int axis) {
      int rank = rankOf(in[operand].value);
      int own = operand == 1 ? axis - (selected - rank) : axis - first - (indexRank - rank);
      bool inRegion = axis >= first && axis < first + indexRank;
      return own >= 0 && own < rank && inRegion ? own : -1;
    };
    std::vector<Part> given = in;
    int target = agree(in, 1, toSelected, fromSelected);
    if (target < first || target >= first + indexRank)
      return gathered(node, std::move(given)); // split along an axis of x's own
    return summedInto(node, std::move(in));
  }

  /// scatter_add along an axis (take_along_axis's gradient): x, the update and the index broadcast together
  /// (x's rank), x written along axes[0]. Split along another axis, each rank's updates land in its block of
  /// x; along that axis, anywhere in x: summed into zeros across the ranks.
  std::vector<Part> scatterAlong(Node &node, std::vector<Part> in) {
    int along = static_cast<int>(node.op().attrs().axes.at(0)), rank = rankOf(in[0].value);
    if (in[0].axis == along) in[0] = made(in[0]);
    auto lead = [&](size_t i) { return rank - rankOf(in[i].value); };
    int target = agree(
        in, 0, [&](size_t i, int axis) { return axis + lead(i); },
        [&](size_t i, int place) { return i == 0 && place == along ? -1 : place - lead(i); });
    if (target != along) return keep(node, in, target);
    in[0] = made(in[0]);
    return summedInto(node, std::move(in));
  }

  /// scatter_add of this rank's updates into zeros, summed across the ranks, plus x (whole).
  std::vector<Part> summedInto(Node &node, std::vector<Part> in) {
    Value *x = in[0].value;
    in[0] = {add(OpKind::ZerosLike, {}, {x}), kWhole};
    Value *partial = allreduce(emit(node, in)->output(), OpKind::Sum);
    return {{add(OpKind::Add, {}, {x, partial}), kWhole}};
  }

  /// A scan whose body works on rows of the split dimension (an RNN over a batch): the body, split as a graph
  /// of its own, takes each input with the dimension split along the first axis that has it (a sequence:
  /// the axis after its steps'), and the operands are cut to that; a carry must come out of a step split as
  /// it came in. Otherwise (a carry that a step would make whole, or a loop over the split dimension
  /// itself) the loop runs whole on every rank, its operands gathered.
  std::vector<Part> scan(Node &node, std::vector<Part> in) {
    const ir::Loop &loop = *node.op().attrs().loop;
    std::shared_ptr<ir::Loop> split = ir::copyLoop(loop);
    Graph &body = split->body.graph;
    auto firstSplitAxis = [&](const ir::TensorType &type) {
      auto at = std::find(type.shape.begin(), type.shape.end(), Dim::named(dimension_));
      return at == type.shape.end() ? kWhole : static_cast<int>(at - type.shape.begin());
    };
    PassProfile inner;
    std::vector<Part> outputs = Sharder(body, dimension_, inner).run(/*gatherOutputs=*/false);
    for (size_t c = 0; c < loop.carries; ++c)
      if (outputs[c].axis != firstSplitAxis(body.inputs()[c]->type())) return gathered(node, std::move(in));
    body.removeDeadNodes();
    split->body.syncWithGraph();
    for (const auto &[name, count] : inner.details)
      profile_.details[name] += count;
    for (size_t i = 0; i < in.size(); ++i) {
      int wanted = firstSplitAxis(body.inputs()[i]->type());
      if (wanted != kWhole && i >= loop.carries && i < loop.carries + loop.sequences) ++wanted; // its slices'
      if (in[i].axis == wanted) continue;
      in[i] = made(in[i]);
      if (wanted != kWhole) in[i] = {block(in[i].value, wanted), wanted};
    }
    std::vector<Value *> values;
    for (const Part &part : in)
      values.push_back(part.value);
    Node *rebuilt = ir::rebuildScan(graph_, node, split, values);
    std::vector<Part> parts;
    for (size_t k = 0; k < rebuilt->outputs().size(); ++k) {
      // Carries give their last value, or their stack; results their stack ([steps] + the value's shape).
      bool stacked = k >= loop.carries || loop.stacked[k];
      int axis = outputs[k].axis == kWhole ? kWhole : outputs[k].axis + (stacked ? 1 : 0);
      parts.push_back({rebuilt->outputs()[k], axis});
    }
    return parts;
  }

  /// Convolution and pooling split along the batch (axis 0 of their activations; filters are whole):
  /// conv_filter_grad sums over the batch, across the ranks.
  std::vector<Part> window(Node &node, std::vector<Part> in) {
    OpKind kind = node.op().kind();
    // Which operands are activations [N, ...]: conv and conv_transpose read filters second.
    size_t activations = kind == OpKind::Conv || kind == OpKind::ConvTranspose ? 1 : in.size();
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].axis != kWhole && (i >= activations || in[i].axis != 0)) return gathered(node, std::move(in));
    for (size_t i = 0; i < activations; ++i)
      if (in[i].axis == kWhole) in[i] = {block(in[i].value, 0), 0};
    if (kind == OpKind::ConvFilterGrad) return {{allreduce(emit(node, in)->output(), OpKind::Sum), kWhole}};
    return keep(node, in, 0);
  }

  /// Allreduces that none of the others depends on, of one dtype and combine, become one (their values
  /// flattened, concatenated, and sliced back apart): each costs a latency per ring step, which small
  /// tensors (a step's gradients, counts and losses) pay in full. They are grouped by depth: the most
  /// allreduces on a path from the inputs to each, so that none of a group waits for another. Static
  /// shapes only.
  void bucketAllreduces() {
    std::unordered_map<const Value *, int> depth;
    std::map<std::tuple<int, OpKind, ir::DType>, std::vector<Node *>> buckets;
    for (Node *node : graph_.toposort()) {
      int deepest = 0;
      for (Value *input : node->inputs())
        if (auto found = depth.find(input); found != depth.end()) deepest = std::max(deepest, found->second);
      bool allreduce = node->op().kind() == OpKind::Allreduce;
      for (Value *output : node->outputs())
        depth[output] = deepest + allreduce;
      if (allreduce && node->output()->type().staticNumElements())
        buckets[{deepest, node->op().attrs().combine, node->output()->type().dtype}].push_back(node);
    }
    std::vector<std::pair<Value *, Value *>> replacements;
    for (auto &[key, nodes] : buckets) {
      if (nodes.size() < 2) continue;
      current_ = nodes.front();
      std::vector<Value *> flat;
      std::vector<int64_t> sizes;
      for (Node *node : nodes) {
        OpAttrs reshape;
        reshape.shape = {*node->input(0)->type().staticNumElements()};
        sizes.push_back(reshape.shape[0]);
        flat.push_back(add(OpKind::Reshape, reshape, {node->input(0)}));
      }
      OpAttrs along = onAxis(0);
      OpAttrs combine;
      combine.combine = std::get<1>(key);
      Value *summed = add(OpKind::Allreduce, combine, {add(OpKind::Concat, along, flat)});
      int64_t offset = 0;
      for (size_t i = 0; i < nodes.size(); ++i) {
        OpAttrs piece;
        piece.slices.resize(1);
        piece.slices[0].hasStart = piece.slices[0].hasStop = true;
        piece.slices[0].start = offset;
        piece.slices[0].stop = offset += sizes[i];
        OpAttrs shape;
        for (const Dim &dim : nodes[i]->output()->type().shape)
          shape.shape.push_back(dim.size());
        replacements.push_back(
            {nodes[i]->output(), add(OpKind::Reshape, shape, {add(OpKind::Slice, piece, {summed})})});
      }
      profile_.details["allreduces bucketed"] += static_cast<double>(nodes.size());
    }
    for (auto &[old, bucketed] : replacements)
      graph_.substitute(old, bucketed);
  }

  Graph &graph_;
  std::string dimension_;
  PassProfile &profile_;
  std::unordered_map<const Value *, Part> parts_;
  std::unordered_map<const Value *, Value *> gathered_;
  std::map<std::pair<const Value *, int>, Value *> blocks_;
  Value *splitSize_ = nullptr, *lengthOnly_ = nullptr;
  std::unordered_map<const Value *, Op> rowNumbers_; // arange of the split length (before the pass), its op
  const Node *current_ = nullptr;
};

} // namespace

void shardAlong(ir::Graph &graph, const std::string &dimension, PassProfile &profile) {
  Sharder(graph, dimension, profile).run();
}

void broadcastInitialValues(ir::Program &program) {
  for (size_t i = 0; i < program.init.outputs().size(); ++i) {
    Value *initial = program.init.outputs()[i];
    program.init.setOutput(i, program.init.addNode(Op(OpKind::Broadcast), {initial})->output());
  }
  for (size_t i = 0; i < program.params.size(); ++i)
    program.params[i].initial = program.init.outputs()[i];
}

} // namespace tg::opt
