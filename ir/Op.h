// Op: what a graph node computes. Immutable, hashable and comparable, so that equal nodes can be merged.
// The kinds and their static properties come from Ops.def (read through opInfo); attributes live in one small
// struct.
#pragma once

#include "ir/DType.h"
#include "ir/Type.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tg::ir {

struct ScalarGraph;
struct Loop;

enum class OpKind : uint16_t {
#define OP(Enum, ...) Enum,
#include "ir/Ops.def"
};

/// TVM's pattern kinds: how an op may take part in fusion.
enum class FusionKind : uint8_t { Elementwise, Broadcast, Injective, Reduce, Creation, Opaque };
/// Ops.def's columns (its header says what each means).
enum class Operands : uint8_t { Any, Numbers, Floats, Bools };
enum class ResultDType : uint8_t { Same, Bool, Attr, FloatOf, Accumulate, Index };
enum class Cost : uint8_t { Free, Cheap, Slow, Transcendental, Custom };
enum class Identity : uint8_t { None, Zero, One };

struct OpInfo {
  const char *name; // the language's spelling
  int arity;        // -1: a list of inputs
  FusionKind fusion;
  bool hasDevice;
  const char *symbol;  // the operator that writes it, or ""
  const char *builtin; // the builtin function's parameters, or "" when there is none
  Operands operands;
  ResultDType result;
  Cost cost;
  Identity identity;
};

const OpInfo &opInfo(OpKind kind);
const char *opName(OpKind kind);
bool isUnaryElementwise(OpKind kind);
bool isBinaryElementwise(OpKind kind);
/// Elementwise ops of two operands of any dtype that give a bool: < <= > >= == !=.
bool isComparison(OpKind kind);
bool isReduction(OpKind kind);
/// argmax and argmin: reductions to a position (Ops.def's result Index), over one axis or the flattened
/// array.
bool isPositionalReduction(OpKind kind);
/// A view computes strides, not elements (Ops.def's cost Free).
bool isView(OpKind kind);
/// allreduce, allgather and broadcast: the ops that talk to the other ranks of a distributed run (shard,
/// which keeps this rank's block, does not).
bool isCollective(OpKind kind);
/// conv, conv_transpose, conv_filter_grad: a sliding window (OpAttrs::window) of filters.
bool isConvolution(OpKind kind);
/// The convolutions and max_pool, max_pool_grad, max_pool_gather: the ops of a sliding window.
bool isWindowOp(OpKind kind);
/// Whether `kind` computes in `dtype` (Ops.def's operands column): Floats takes f32 and f64, Numbers every
/// dtype but bool, Bools bool only.
bool takes(OpKind kind, DType dtype);
/// The dtype of `kind`'s result for operands of `operand` (Ops.def's result column); `attribute` is the dtype
/// attribute, for ops whose result is theirs (casts, creation).
DType resultDType(OpKind kind, DType operand, DType attribute = DType::F32);
/// NumPy's error for a reduction of no element where `kind` has no identity (max, min, argmax, argmin);
/// nothing for the others or a reduction of at least one element.
void checkReductionOfElements(OpKind kind, int64_t elements);

/// One axis of an indexing expression `x[2, 1:5:2, :]`: a single index (drops the axis) or a range.
struct SliceSpec {
  bool isIndex = false;
  int64_t start = 0, stop = 0, step = 1; // an index is held in start
  bool hasStart = false, hasStop = false;
  bool operator==(const SliceSpec &other) const;
  std::string str() const;
};

/// A number attribute (full's value, arange's bounds and step) as the script wrote it: an integer, exact over
/// all of i64, or a double.
struct Number {
  bool isInteger = false;
  int64_t intValue = 0;
  double floatValue = 0;

  static Number ofInt(int64_t value) { return {true, value, 0}; }
  static Number ofFloat(double value) { return {false, 0, value}; }
  double toDouble() const { return isInteger ? static_cast<double>(intValue) : floatValue; }
  bool operator==(const Number &other) const = default;
  /// "3" or "2.5" (the shortest text that reads back as the same double).
  std::string str() const;
};

/// A sliding window over the spatial axes (the axes after batch and channels) of a convolution: per spatial
/// axis its stride, dilation, padding before and after, and the output padding of a transposed convolution
/// (added after, to reach a size the stride leaves ambiguous); the kernel's size (the filter's spatial axes,
/// as conv_filter_grad makes them); the number of channel groups.
struct Window {
  std::vector<int64_t> kernel, stride, dilation, padBefore, padAfter, outputPadding;
  int64_t groups = 1;
  bool operator==(const Window &other) const = default;
  /// "stride=[2, 2], padding=[1, 1, 1, 1], ..." for the op's printers: what differs from the defaults.
  std::string str() const;
};

/// Attributes, by op: cast and creation use dtype; reductions use axes (all axes listed; empty for
/// argmax/argmin means the flattened array) and keepdims; transpose keeps its permutation in axes; concat,
/// stack, sort, argsort and cumsum keep their axis in axes[0] (cumsum with no axis flattens); reshape,
/// broadcast_to and creation ops keep a shape (reshape may hold one -1; arange's is its length, computed
/// from start, stop and step by arangeLength); full keeps its value in scalars[0], arange start/stop/step in
/// scalars; rand and randn keep their seed.
struct OpAttrs {
  DType dtype = DType::F32;
  std::vector<int64_t> axes;
  bool keepdims = false;
  std::vector<int64_t> shape;
  std::vector<Number> scalars;
  uint64_t seed = 0;
  std::vector<SliceSpec> slices;
  std::shared_ptr<const ScalarGraph> body; // fused: what the kernel computes per element
  Window window;                           // conv, conv_transpose, conv_filter_grad
  std::shared_ptr<const Loop> loop;        // scan: its body and shape (ir/Loop.h); equal only to itself
  OpKind combine = OpKind::Sum;            // allreduce: the reduction joining the ranks' tensors
  bool operator==(const OpAttrs &other) const;
};

/// An op and where it runs: the same kind on the host and on the device are different ops (Theano's Elemwise
/// and GpuElemwise), so merging never joins them. Transfers are host ops whatever their direction.
class Op {
public:
  Op(OpKind kind, OpAttrs attrs = {}, Place place = Place::Host);

  OpKind kind() const { return kind_; }
  Place place() const { return place_; }
  /// The same op, running on `place`.
  Op on(Place place) const {
    Op moved = *this;
    moved.place_ = place;
    return moved;
  }
  const OpAttrs &attrs() const { return attrs_ ? *attrs_ : noAttrs(); }
  const OpInfo &info() const { return opInfo(kind_); }
  const char *name() const { return info().name; }
  bool operator==(const Op &other) const {
    return kind_ == other.kind_ && place_ == other.place_ &&
           (attrs_ == other.attrs_ || attrs() == other.attrs());
  }
  bool operator!=(const Op &other) const { return !(*this == other); }
  size_t hash() const;
  /// The attributes that matter for this kind, as "axes=[1], keepdims" (empty when none).
  std::string attrString() const;
  /// "sum{axes=[1]}" or "exp".
  std::string str() const;

private:
  static const OpAttrs &noAttrs();

  OpKind kind_;
  Place place_;
  // Out of line and shared between copies, null when all defaults (most ops): keeps nodes small and copies
  // cheap, since graphs hold one Op per node.
  std::shared_ptr<const OpAttrs> attrs_;
};

/// The output type of `op` applied to inputs of these types, following NumPy's shape rules. Operands must
/// already have the dtypes the op requires (the front end inserts casts). Throws UserError (without a
/// location) when the shapes or dtypes do not fit; the caller adds the location.
TensorType inferType(const Op &op, const std::vector<TensorType> &inputs);
/// The type of output `index` (1 or more) of a node of several outputs reading inputs of these types: of a
/// fused node, extra output index - 1 of its body (ScalarGraph::extraOutputs) in its value's dtype, over the
/// program's iteration space (the inputs' broadcast shape; for an elementwise body the first output's shape);
/// of a scan, its output `index` (Loop::outputTypes).
TensorType extraOutputType(const Op &op, const std::vector<TensorType> &inputs, size_t index);
/// How many outputs a node of `op` has: one, and one per extra output of a fused body; a scan's, one per
/// output of its body.
size_t outputCount(const Op &op);

/// The length of arange(start, stop, step) of `dtype`, as NumPy computes it (ceil((stop - start) / step), at
/// least 0), exact for integer bounds over all of i64. A UserError when the step is zero, a bound is not
/// finite, the array would exceed kMaxTensorBytes, or its values do not fit an integer `dtype`.
int64_t arangeLength(const Number &start, const Number &stop, const Number &step, DType dtype);

} // namespace tg::ir
