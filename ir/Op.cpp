#include "ir/Op.h"

#include "ir/Assert.h"
#include "ir/Loop.h"
#include "ir/ScalarGraph.h"
#include "ir/SourceLoc.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>

namespace tg::ir {

namespace {

const OpInfo kOpInfos[] = {
#define OP(Enum, name, arity, fusion, device, symbol, builtin, operands, result, cost, identity)             \
  {name,                                                                                                     \
   arity,                                                                                                    \
   FusionKind::fusion,                                                                                       \
   device,                                                                                                   \
   symbol,                                                                                                   \
   builtin,                                                                                                  \
   Operands::operands,                                                                                       \
   ResultDType::result,                                                                                      \
   Cost::cost,                                                                                               \
   Identity::identity},
#include "ir/Ops.def"
};

[[noreturn]] void fail(const std::string &message) {
  throw UserError(message);
}

TensorType inferHostType(const Op &op, const std::vector<TensorType> &inputs);

std::string listString(const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

/// The shortest text that reads back as `value`.
std::string numberString(double value) {
  char buffer[32];
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

/// The shape of a creation op, reshape or broadcast_to (reshape's -1 stays -1, for reshapeType to infer);
/// a shape too large for any tensor is an error.
Shape staticShape(const std::vector<int64_t> &sizes, DType dtype, const char *opName) {
  std::vector<int64_t> known;
  for (int64_t size : sizes)
    if (size >= 0) known.push_back(size);
  if (!fitsTensorLimit(dtype, known))
    fail(std::string(opName) + ": shape " + listString(sizes) + " is too large: a " + dtypeName(dtype) +
         " array of that shape would take more than 2**62 bytes");
  Shape shape;
  for (int64_t size : sizes)
    shape.push_back(Dim::of(size));
  return shape;
}

/// A symbolic dimension derived from others, labelled with how it was computed.
Dim derived(const std::string &label) {
  return Dim::named(label);
}

/// The -1 of a reshape of a symbolic shape: the input's one symbolic dimension where the target's other sizes
/// multiply to the input's static ones (`[n] -> [-1, 1]` is `[n, 1]`, `[n, 3] -> [-1, 3]` is `[n, 3]`), else
/// a new symbol.
Dim inferredDim(const Shape &input, int64_t targetProduct, int64_t at) {
  const Dim *symbolic = nullptr;
  int64_t product = 1, symbols = 0;
  for (const Dim &dim : input) {
    if (dim.isStatic()) {
      product *= dim.size();
    } else {
      symbolic = &dim;
      ++symbols;
    }
  }
  if (symbols == 1 && product == targetProduct && product != 0) return *symbolic;
  return derived("reshape" + std::to_string(at));
}

TensorType elementwiseType(const Op &op, const std::vector<TensorType> &inputs) {
  Shape shape = inputs[0].shape;
  for (size_t i = 1; i < inputs.size(); ++i) {
    auto result = broadcastShapes(shape, inputs[i].shape);
    if (!result) fail("cannot broadcast " + inputs[0].str() + " with " + inputs[i].str());
    shape = *result;
  }
  // where's condition is bool; its other operands, like every other op's, share a dtype (the front end
  // converts them), one the op takes.
  size_t first = op.kind() == OpKind::Where ? 1 : 0;
  if (first) {
    TG_ASSERT(inputs[0].dtype == DType::Bool) << "where: the condition must be bool";
  }
  for (size_t i = first; i < inputs.size(); ++i)
    TG_ASSERT(inputs[i].dtype == inputs[first].dtype && takes(op.kind(), inputs[i].dtype))
        << op.name() << ": operands " << inputs[first].str() << " and " << inputs[i].str();
  return {resultDType(op.kind(), inputs[first].dtype, op.attrs().dtype), shape, inputs[0].place};
}

/// Checks an axis against a rank and returns it counted from the front.
int64_t normalizeAxis(int64_t axis, size_t rank, const char *what) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    fail(std::string(what) + ": axis " + std::to_string(axis) + " is out of bounds for an array of rank " +
         std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

/// The type of a reduction of `kind` with `attrs` (axes, keepdims) over `input`. Takes the kind and
/// attributes apart, so that a fused reduction is typed without making an Op.
TensorType reductionType(OpKind kind, const OpAttrs &attrs, const TensorType &input) {
  Shape shape;
  if (isPositionalReduction(kind) && attrs.axes.empty()) {
    if (attrs.keepdims) shape.assign(input.rank(), Dim::of(1));
  } else {
    for (size_t i = 0; i < input.rank(); ++i) {
      bool reduced =
          std::find(attrs.axes.begin(), attrs.axes.end(), static_cast<int64_t>(i)) != attrs.axes.end();
      if (!reduced)
        shape.push_back(input.shape[i]);
      else if (attrs.keepdims)
        shape.push_back(Dim::of(1));
    }
  }
  return {resultDType(kind, input.dtype), shape, input.place};
}

/// Whether two shapes can be the same: of one rank, each pair of sizes equal or one of them symbolic (bound,
/// and checked, when it runs).
bool sameSizes(const Shape &a, const Shape &b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (a[d] != b[d] && a[d].isStatic() && b[d].isStatic()) return false;
  return true;
}

/// Whether `from` broadcasts to a shape that can be `to` (sameSizes): a scatter's or set_slice's update.
bool broadcastsTo(const Shape &from, const Shape &to) {
  auto shape = from.size() <= to.size() ? broadcastShapes(from, to) : std::nullopt;
  return shape && sameSizes(*shape, to);
}

/// The spatial size a window's stride leaves from `size` (the padded input's, less the dilated kernel's):
/// PyTorch's (S + pb + pa - d * (K - 1) - 1) / s + 1; an error where the dilated kernel is larger than the
/// padded input.
int64_t windowOutput(int64_t size, int64_t kernel, const Window &window, size_t axis,
                     const std::string &name) {
  int64_t padded = size + window.padBefore[axis] + window.padAfter[axis],
          span = window.dilation[axis] * (kernel - 1) + 1;
  if (span > padded)
    fail(std::string(name) + ": the kernel (" + std::to_string(span) +
         " with its dilation) is larger than the " + "padded input (" + std::to_string(padded) +
         ") along spatial axis " + std::to_string(axis));
  return (padded - span) / window.stride[axis] + 1;
}

/// conv, conv_transpose and conv_filter_grad (Ops.def): batch and channels first, then the window's spatial
/// axes, each of static size; the channels agreeing with the groups.
TensorType convolutionType(const Op &op, const std::vector<TensorType> &inputs) {
  const Window &window = op.attrs().window;
  const TensorType &x = inputs[0], &other = inputs[1];
  size_t spatial = window.stride.size();
  // Errors name the builtin the script called: conv2d(), conv_transpose2d(), ...
  std::string called = op.kind() == OpKind::ConvFilterGrad
                           ? std::string(op.name())
                           : std::string(op.name()) + std::to_string(spatial) + "d()";
  TG_ASSERT(spatial >= 1 && x.rank() == spatial + 2 && other.rank() == spatial + 2 &&
            x.dtype == other.dtype && isFloat(x.dtype) && window.groups >= 1)
      << op.name() << " of " << x.str() << " and " << other.str() << " over " << spatial << " spatial axes";
  auto size = [&](const TensorType &type, size_t axis) -> int64_t {
    const Dim &dim = type.shape[axis];
    if (!dim.isStatic())
      fail(called + ": axis " + std::to_string(axis) + " of " + type.str() +
           " must have a static size (only the batch axis may be symbolic)");
    return dim.size();
  };
  int64_t groups = window.groups;
  Shape shape{x.shape[0]};
  if (op.kind() == OpKind::ConvFilterGrad) { // (x [N, C, *S], gy [N, O, *S_out]) -> [O, C / groups, *K]
    shape = {Dim::of(size(other, 1)), Dim::of(size(x, 1) / groups)};
    for (size_t a = 0; a < spatial; ++a)
      shape.push_back(Dim::of(window.kernel.at(a)));
    return {x.dtype, shape, x.place};
  }
  const TensorType &w = other; // [O, C / groups, *K]
  int64_t channels = size(x, 1), out = size(w, 0), perGroup = size(w, 1);
  if (op.kind() == OpKind::Conv) {
    if (channels != perGroup * groups)
      fail(called + ": the input has " + std::to_string(channels) + " channels, the filters expect " +
           std::to_string(perGroup) + " per group times " + std::to_string(groups) + " groups");
    if (out % groups != 0)
      fail(called + ": " + std::to_string(out) + " filters do not divide into " + std::to_string(groups) +
           " groups");
    shape.push_back(Dim::of(out));
    for (size_t a = 0; a < spatial; ++a)
      shape.push_back(Dim::of(windowOutput(size(x, a + 2), size(w, a + 2), window, a, called)));
    return {x.dtype, shape, x.place};
  }
  // conv_transpose: y [N, O, *S] with filters [O, C / groups, *K] -> [N, C, *S_in]
  if (channels != out)
    fail(called + ": the input has " + std::to_string(channels) + " channels, the filters " +
         std::to_string(out));
  if (out % groups != 0)
    fail(called + ": " + std::to_string(out) + " channels do not divide into " + std::to_string(groups) +
         " groups");
  shape.push_back(Dim::of(perGroup * groups));
  for (size_t a = 0; a < spatial; ++a) {
    int64_t in = (size(x, a + 2) - 1) * window.stride[a] - window.padBefore[a] - window.padAfter[a] +
                 window.dilation[a] * (size(w, a + 2) - 1) + window.outputPadding[a] + 1;
    if (in < 1) fail(called + ": the padding leaves no output along spatial axis " + std::to_string(a));
    shape.push_back(Dim::of(in));
  }
  return {x.dtype, shape, x.place};
}

/// max_pool and max_pool_grad (Ops.def): batch and channels first, then the window's spatial axes, of static
/// size; padding at most half the kernel (as PyTorch has it, so that every window holds an element).
TensorType poolingType(const Op &op, const std::vector<TensorType> &inputs) {
  const Window &window = op.attrs().window;
  const TensorType &x = inputs[0];
  size_t spatial = window.kernel.size();
  std::string called = "max_pool" + std::to_string(spatial) + "d()";
  TG_ASSERT(spatial >= 1 && x.rank() == spatial + 2 && window.stride.size() == spatial)
      << op.name() << " of " << x.str() << " over " << spatial << " spatial axes";
  TG_ASSERT(op.kind() == OpKind::MaxPool || inputs[1].shape.size() == x.rank())
      << op.name() << " of " << x.str() << " and " << inputs[1].str();
  if (op.kind() == OpKind::MaxPoolGrad) return x;
  Shape shape{x.shape[0], x.shape[1]};
  for (size_t a = 0; a < spatial; ++a) {
    const Dim &size = x.shape[a + 2];
    if (!size.isStatic())
      fail(called + ": axis " + std::to_string(a + 2) + " of " + x.str() +
           " must have a static size (only the batch and channel axes may be symbolic)");
    if (2 * std::max(window.padBefore[a], window.padAfter[a]) > window.kernel[a])
      fail(called + ": the padding (" + std::to_string(window.padBefore[a]) +
           ") must be at most half the kernel (" + std::to_string(window.kernel[a]) + ")");
    shape.push_back(Dim::of(windowOutput(size.size(), window.kernel[a], window, a, called)));
  }
  return {x.dtype, shape, x.place};
}

/// A fused node's iteration space: its inputs' broadcast shape, a gather's table taking part as it lies in
/// the space (tableInSpace).
Shape fusedSpace(const ScalarGraph &body, const std::vector<TensorType> &inputs) {
  std::vector<const ScalarInstr *> tables = body.tableReaders();
  Shape shape;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Shape own = tables[i] ? tableInSpace(*tables[i], inputs[i].shape, Dim::of(1)) : inputs[i].shape;
    auto result = broadcastShapes(shape, own);
    if (!result) fail("cannot broadcast " + shapeString(shape) + " with " + inputs[i].str());
    shape = *result;
  }
  return shape;
}

/// gather(x, i0, ..., ik-1): x's shape with axes a .. a+k-1 replaced by the indices' broadcast shape; along
/// an axis (keepdims), x's shape broadcast with the index's, the axis's size the index's. scatter_add and
/// scatter_set(x, update, i0, ...): x's type, the update broadcasting to the shape gather would give.
TensorType indexingType(const Op &op, const std::vector<TensorType> &inputs) {
  bool scatter = op.kind() != OpKind::Gather;
  const TensorType &x = inputs.at(0);
  size_t first = scatter ? 2 : 1, axis = static_cast<size_t>(op.attrs().axes.at(0)),
         k = inputs.size() - first;
  TG_ASSERT(k >= 1 && axis + k <= x.rank())
      << op.name() << ": " << k << " indices from axis " << axis << " of " << x.str();
  Shape gathered;
  if (op.attrs().keepdims) {
    const TensorType &index = inputs[first];
    TG_ASSERT(k == 1 && isInteger(index.dtype) && index.rank() == x.rank())
        << op.name() << " along an axis of " << x.str() << " at " << index.str();
    Shape others = x.shape;
    others[axis] = index.shape[axis];
    auto shape = broadcastShapes(others, index.shape);
    if (!shape)
      fail("the index of shape " + shapeString(index.shape) + " does not broadcast with the array of shape " +
           shapeString(x.shape) + " beside axis " + std::to_string(axis));
    gathered = *shape;
  } else {
    Shape indexShape;
    for (size_t i = first; i < inputs.size(); ++i) {
      TG_ASSERT(isInteger(inputs[i].dtype)) << op.name() << ": an index of " << inputs[i].str();
      auto shape = broadcastShapes(indexShape, inputs[i].shape);
      if (!shape)
        fail("the index arrays cannot be broadcast together: shapes " + shapeString(indexShape) + " and " +
             shapeString(inputs[i].shape));
      indexShape = *shape;
    }
    gathered.assign(x.shape.begin(), x.shape.begin() + static_cast<ptrdiff_t>(axis));
    gathered.insert(gathered.end(), indexShape.begin(), indexShape.end());
    gathered.insert(gathered.end(), x.shape.begin() + static_cast<ptrdiff_t>(axis + k), x.shape.end());
  }
  if (!scatter) return {x.dtype, gathered, x.place};
  TG_ASSERT(inputs[1].dtype == x.dtype && broadcastsTo(inputs[1].shape, gathered))
      << op.name() << ": an update of " << inputs[1].str() << " for " << shapeString(gathered);
  return x;
}

TensorType matmulType(const TensorType &a, const TensorType &b) {
  TG_ASSERT(a.dtype == b.dtype) << "matmul operands differ in dtype";
  if (a.isScalar() || b.isScalar())
    fail("matmul: operands must have at least one dimension, got " + a.str() + " @ " + b.str());
  Shape left = a.shape, right = b.shape;
  bool vectorLeft = left.size() == 1, vectorRight = right.size() == 1;
  if (vectorLeft) left.insert(left.begin(), Dim::of(1));
  if (vectorRight) right.push_back(Dim::of(1));
  const Dim &inner = left.back(), &innerRight = right[right.size() - 2];
  if (inner.isStatic() && innerRight.isStatic() && inner != innerRight)
    fail("matmul: inner dimensions do not match: " + a.str() + " @ " + b.str());
  auto batch = broadcastShapes(Shape(left.begin(), left.end() - 2), Shape(right.begin(), right.end() - 2));
  if (!batch) fail("matmul: cannot broadcast the batch dimensions of " + a.str() + " and " + b.str());
  Shape shape = *batch;
  if (!vectorLeft) shape.push_back(left[left.size() - 2]);
  if (!vectorRight) shape.push_back(right.back());
  return {a.dtype, shape, a.place};
}

TensorType reshapeType(const Op &op, const TensorType &input) {
  const std::vector<int64_t> &target = op.attrs().shape;
  auto known = input.staticNumElements();
  int64_t inferred = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (inferred >= 0) fail("reshape: can only specify one unknown dimension (-1)");
      inferred = static_cast<int64_t>(i);
    } else if (target[i] < 0) {
      fail("reshape: invalid dimension " + std::to_string(target[i]));
    }
  }
  Shape shape = staticShape(target, input.dtype, "reshape");
  int64_t product = 1; // within the tensor limit (staticShape checked it): no overflow
  for (int64_t size : target)
    if (size >= 0) product *= size;
  if (!known) {
    if (inferred >= 0) shape[inferred] = inferredDim(input.shape, product, inferred);
    return {input.dtype, shape, input.place};
  }
  if (inferred >= 0) {
    if (product == 0 || *known % product != 0)
      fail("cannot reshape " + input.str() + " into shape " + listString(target));
    shape[inferred] = Dim::of(*known / product);
  } else if (product != *known) {
    fail("cannot reshape " + input.str() + " into shape " + listString(target));
  }
  return {input.dtype, shape, input.place};
}

TensorType sliceType(const Op &op, const TensorType &input) {
  const auto &slices = op.attrs().slices;
  if (slices.size() > input.rank())
    fail("too many indices: " + std::to_string(slices.size()) + " for an array of rank " +
         std::to_string(input.rank()) + " (" + input.str() + ")");
  Shape shape;
  for (size_t axis = 0; axis < input.rank(); ++axis) {
    const Dim &dim = input.shape[axis];
    if (axis >= slices.size()) {
      shape.push_back(dim);
      continue;
    }
    const SliceSpec &s = slices[axis];
    if (s.isIndex) {
      if (dim.isStatic() && (s.start >= dim.size() || s.start < -dim.size()))
        fail("index " + std::to_string(s.start) + " is out of bounds for axis " + std::to_string(axis) +
             " with size " + std::to_string(dim.size()));
      continue;
    }
    if (s.step == 0) fail("slice step cannot be zero");
    if (!dim.isStatic()) {
      bool whole = !s.hasStart && !s.hasStop && s.step == 1;
      shape.push_back(whole ? dim : derived(dim.symbol() + "[" + s.str() + "]"));
      continue;
    }
    // Python's slice.indices, then the element count.
    int64_t n = dim.size(), step = s.step;
    auto clamp = [&](bool has, int64_t value, int64_t fallback) {
      if (!has) return fallback;
      if (value < 0) value += n;
      if (step > 0) return std::clamp<int64_t>(value, 0, n);
      return std::clamp<int64_t>(value, -1, n - 1);
    };
    int64_t start = clamp(s.hasStart, s.start, step > 0 ? 0 : n - 1);
    int64_t stop = clamp(s.hasStop, s.stop, step > 0 ? n : -1);
    int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                             : (start > stop ? (start - stop - step - 1) / -step : 0);
    shape.push_back(Dim::of(count));
  }
  return {input.dtype, shape, input.place};
}

TensorType joinType(const Op &op, const std::vector<TensorType> &inputs) {
  if (inputs.empty()) fail(std::string(op.name()) + " needs at least one array");
  const TensorType &first = inputs[0];
  bool stack = op.kind() == OpKind::Stack;
  size_t rank = first.rank() + (stack ? 1 : 0);
  if (!stack && first.isScalar()) fail("concat: zero-dimensional arrays cannot be concatenated");
  int64_t axis = normalizeAxis(op.attrs().axes.at(0), rank, op.name());
  Shape shape = first.shape;
  for (size_t i = 1; i < inputs.size(); ++i) {
    TG_ASSERT(inputs[i].dtype == first.dtype) << op.name() << " operands differ in dtype";
    bool fits = inputs[i].rank() == first.rank();
    for (size_t d = 0; fits && d < first.rank(); ++d) {
      const Dim &x = first.shape[d], &y = inputs[i].shape[d];
      if (!stack && static_cast<int64_t>(d) == axis) continue;
      fits = x == y || !x.isStatic() || !y.isStatic();
    }
    if (!fits)
      fail(std::string(op.name()) + ": array " + std::to_string(i) + " has shape " + inputs[i].str() +
           ", which does not fit " + first.str() +
           (stack ? " (all arrays must have the same shape)" : " (shapes must match except on the axis)"));
  }
  if (stack) {
    shape.insert(shape.begin() + axis, Dim::of(static_cast<int64_t>(inputs.size())));
    return {first.dtype, shape, first.place};
  }
  Dim total = Dim::of(0);
  for (const TensorType &input : inputs) {
    const Dim &d = input.shape[axis];
    if (!total.isStatic() || !d.isStatic()) {
      total = derived(total.str() + "+" + d.str());
      continue;
    }
    int64_t size = total.size() + d.size(); // each below 2**62: no overflow
    if (size > kMaxTensorBytes)
      fail("concat: the result has " + std::to_string(size) + " rows on axis " + std::to_string(axis) +
           ", more than any tensor may hold");
    total = Dim::of(size);
  }
  shape[axis] = total;
  return {first.dtype, shape, first.place};
}

} // namespace

const OpInfo &opInfo(OpKind kind) {
  return kOpInfos[static_cast<size_t>(kind)];
}
const char *opName(OpKind kind) {
  return opInfo(kind).name;
}

bool isUnaryElementwise(OpKind kind) {
  return opInfo(kind).fusion == FusionKind::Elementwise && opInfo(kind).arity == 1;
}
bool isBinaryElementwise(OpKind kind) {
  return opInfo(kind).fusion == FusionKind::Elementwise && opInfo(kind).arity == 2;
}
bool isComparison(OpKind kind) {
  const OpInfo &info = opInfo(kind);
  return info.fusion == FusionKind::Elementwise && info.arity == 2 && info.operands == Operands::Any &&
         info.result == ResultDType::Bool;
}
bool isReduction(OpKind kind) {
  return opInfo(kind).fusion == FusionKind::Reduce;
}
bool isPositionalReduction(OpKind kind) {
  return isReduction(kind) && opInfo(kind).result == ResultDType::Index;
}
bool isView(OpKind kind) {
  return opInfo(kind).cost == Cost::Free;
}

bool isCollective(OpKind kind) {
  return kind == OpKind::Allreduce || kind == OpKind::Allgather || kind == OpKind::Broadcast;
}

bool isConvolution(OpKind kind) {
  return kind == OpKind::Conv || kind == OpKind::ConvTranspose || kind == OpKind::ConvFilterGrad;
}

bool isWindowOp(OpKind kind) {
  return isConvolution(kind) || kind == OpKind::MaxPool || kind == OpKind::MaxPoolGrad ||
         kind == OpKind::MaxPoolGather;
}

bool takes(OpKind kind, DType dtype) {
  switch (opInfo(kind).operands) {
  case Operands::Any:
    return true;
  case Operands::Numbers:
    return dtype != DType::Bool;
  case Operands::Floats:
    return isFloat(dtype);
  case Operands::Bools:
    return dtype == DType::Bool;
  }
  return false;
}

DType resultDType(OpKind kind, DType operand, DType attribute) {
  switch (opInfo(kind).result) {
  case ResultDType::Same:
    return operand;
  case ResultDType::Bool:
    return DType::Bool;
  case ResultDType::Attr:
    return attribute;
  case ResultDType::FloatOf:
    return isFloat(operand) ? operand : DType::F64;
  case ResultDType::Accumulate:
    return isFloat(operand) ? operand : DType::I64;
  case ResultDType::Index:
    break;
  }
  return DType::I64;
}

void checkReductionOfElements(OpKind kind, int64_t elements) {
  if (elements == 0 && opInfo(kind).identity == Identity::None)
    fail(std::string("zero-size array to reduction operation ") + opName(kind) + " which has no identity");
}

bool SliceSpec::operator==(const SliceSpec &other) const {
  return isIndex == other.isIndex && start == other.start && stop == other.stop && step == other.step &&
         hasStart == other.hasStart && hasStop == other.hasStop;
}

std::string SliceSpec::str() const {
  if (isIndex) return std::to_string(start);
  // Appended piece by piece: g++ 12 at -O3 warns (-Wrestrict, wrongly) about `"" + ":" + ...` chains.
  std::string text;
  if (hasStart) text += std::to_string(start);
  text += ':';
  if (hasStop) text += std::to_string(stop);
  if (step != 1) {
    text += ':';
    text += std::to_string(step);
  }
  return text;
}

bool OpAttrs::operator==(const OpAttrs &other) const {
  bool sameBody = body == other.body || (body && other.body && *body == *other.body);
  return dtype == other.dtype && axes == other.axes && keepdims == other.keepdims && shape == other.shape &&
         scalars == other.scalars && seed == other.seed && slices == other.slices && window == other.window &&
         sameBody && loop == other.loop && combine == other.combine;
}

std::string Window::str() const {
  std::vector<std::string> parts;
  auto all = [](const std::vector<int64_t> &values, int64_t value) {
    return std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == value; });
  };
  if (!kernel.empty()) parts.push_back("kernel=" + listString(kernel));
  if (!all(stride, 1)) parts.push_back("stride=" + listString(stride));
  if (!all(padBefore, 0) || !all(padAfter, 0))
    parts.push_back("padding=" + listString(padBefore) + listString(padAfter));
  if (!all(dilation, 1)) parts.push_back("dilation=" + listString(dilation));
  if (!all(outputPadding, 0)) parts.push_back("output_padding=" + listString(outputPadding));
  if (groups != 1) parts.push_back("groups=" + std::to_string(groups));
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i)
    text += (i ? ", " : "") + parts[i];
  return text;
}

Op::Op(OpKind kind, OpAttrs attrs, Place place) : kind_(kind), place_(place) {
  if (!(attrs == noAttrs())) attrs_ = std::make_shared<const OpAttrs>(std::move(attrs));
}

const OpAttrs &Op::noAttrs() {
  static const OpAttrs none;
  return none;
}

size_t Op::hash() const {
  size_t h = std::hash<int>()(static_cast<int>(kind_) * 2 + static_cast<int>(place_));
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  const OpAttrs &attrs = this->attrs();
  mix(static_cast<size_t>(attrs.dtype));
  mix(attrs.keepdims);
  mix(attrs.seed);
  mix(static_cast<size_t>(attrs.combine));
  for (int64_t a : attrs.axes)
    mix(std::hash<int64_t>()(a));
  for (int64_t s : attrs.shape)
    mix(std::hash<int64_t>()(s));
  for (const Number &v : attrs.scalars)
    mix(v.isInteger ? std::hash<int64_t>()(v.intValue) : std::hash<double>()(v.floatValue));
  for (const SliceSpec &s : attrs.slices)
    mix(std::hash<std::string>()(s.str()));
  if (attrs.body) mix(attrs.body->hash());
  mix(std::hash<const Loop *>()(attrs.loop.get()));
  const Window &w = attrs.window;
  for (const std::vector<int64_t> *values :
       {&w.kernel, &w.stride, &w.dilation, &w.padBefore, &w.padAfter, &w.outputPadding})
    for (int64_t v : *values)
      mix(std::hash<int64_t>()(v));
  mix(static_cast<size_t>(w.groups));
  return h;
}

std::string Op::attrString() const {
  const OpAttrs &a = attrs();
  std::vector<std::string> parts;
  switch (kind_) {
  case OpKind::Fused:
    parts = a.body->memberNames();
    if (a.body->reduction) { // what the reduction keeps, as a reduction node shows it
      parts.push_back("axes=" + listString(a.axes));
      if (a.keepdims) parts.push_back("keepdims");
    }
    break;
  case OpKind::Cast:
    parts.push_back(std::string("to=") + dtypeName(a.dtype));
    break;
  case OpKind::Scan:
    parts.push_back(a.loop->str());
    break;
  case OpKind::Transpose:
    parts.push_back("perm=" + listString(a.axes));
    break;
  case OpKind::ExpandDims:
    parts.push_back("axes=" + listString(a.axes));
    break;
  case OpKind::Reshape:
  case OpKind::BroadcastTo:
    parts.push_back("shape=" + listString(a.shape));
    break;
  case OpKind::Concat:
  case OpKind::Stack:
  case OpKind::Sort:
  case OpKind::Argsort:
  case OpKind::Cumsum:
    if (!a.axes.empty()) parts.push_back("axis=" + std::to_string(a.axes[0]));
    break;
  case OpKind::DimSize:
  case OpKind::Allgather:
  case OpKind::Shard:
    parts.push_back("axis=" + std::to_string(a.axes.at(0)));
    break;
  case OpKind::Allreduce:
    parts.push_back(std::string("combine=") + opInfo(a.combine).name);
    break;
  case OpKind::Gather:
  case OpKind::ScatterAdd:
  case OpKind::ScatterSet:
    parts.push_back("axis=" + std::to_string(a.axes.at(0)));
    if (a.keepdims) parts.push_back("along");
    break;
  case OpKind::Slice:
  case OpKind::SetSlice: {
    std::string text = "[";
    for (size_t i = 0; i < a.slices.size(); ++i)
      text += (i ? ", " : "") + a.slices[i].str();
    parts.push_back(text + "]");
    break;
  }
  case OpKind::Zeros:
  case OpKind::Ones:
  case OpKind::Eye:
    parts.push_back("shape=" + listString(a.shape));
    break;
  case OpKind::Full:
    parts.push_back("shape=" + listString(a.shape));
    parts.push_back("value=" + a.scalars.at(0).str());
    break;
  case OpKind::Arange:
    parts.push_back("start=" + a.scalars.at(0).str());
    parts.push_back("stop=" + a.scalars.at(1).str());
    parts.push_back("step=" + a.scalars.at(2).str());
    break;
  case OpKind::Rand:
  case OpKind::Randn:
    parts.push_back("shape=" + listString(a.shape));
    parts.push_back("seed=" + std::to_string(a.seed));
    break;
  default:
    if (isWindowOp(kind_) && !a.window.str().empty()) parts.push_back(a.window.str());
    if (isReduction(kind_)) {
      if (!a.axes.empty()) parts.push_back("axes=" + listString(a.axes));
      if (a.keepdims) parts.push_back("keepdims");
    }
    break;
  }
  if (opInfo(kind_).fusion == FusionKind::Creation && kind_ != OpKind::ZerosLike && kind_ != OpKind::OnesLike)
    parts.push_back(std::string("dtype=") + dtypeName(a.dtype));
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i)
    text += (i ? ", " : "") + parts[i];
  return text;
}

std::string Number::str() const {
  return isInteger ? std::to_string(intValue) : numberString(floatValue);
}

int64_t arangeLength(const Number &start, const Number &stop, const Number &step, DType dtype) {
  std::string call = "arange(" + start.str() + ", " + stop.str() + ", " + step.str() + ")";
  auto tooMany = [&](const std::string &count) {
    fail(call + " would have " + count + " elements, more than an array of " + dtypeName(dtype) +
         " may hold (2**62 bytes)");
  };
  if (step.toDouble() == 0) fail("arange: step cannot be zero");
  int64_t length = 0;
  if (start.isInteger && stop.isInteger && step.isInteger) {
    // ceil(span / step) in 128 bits, so that every pair of 64-bit bounds is exact.
    __int128 span = static_cast<__int128>(stop.intValue) - start.intValue, by = step.intValue;
    if (by < 0) {
      span = -span;
      by = -by;
    }
    __int128 count = span > 0 ? (span + by - 1) / by : 0; // at most 2**64: fits in 64 unsigned bits
    if (count > kMaxTensorBytes) tooMany(std::to_string(static_cast<uint64_t>(count)));
    length = static_cast<int64_t>(count);
  } else {
    double first = start.toDouble(), last = stop.toDouble(), by = step.toDouble();
    if (!std::isfinite(first) || !std::isfinite(last) || !std::isfinite(by))
      fail(call + ": the bounds and the step must be finite");
    double count = std::ceil((last - first) / by); // NumPy's length
    if (!(count < 0x1p62)) {
      char text[32];
      std::snprintf(text, sizeof text, "%.3g", count);
      tooMany(text);
    }
    length = count > 0 ? static_cast<int64_t>(count) : 0;
  }
  if (!fitsTensorLimit(dtype, {length})) tooMany(std::to_string(length));
  if (length > 0 && (dtype == DType::I32 || dtype == DType::I64)) {
    // The last value start + (length - 1) * step lies between start and stop (in 128 bits when exact).
    double lowest = dtype == DType::I32 ? -0x1p31 : -0x1p63, highest = -lowest - 1;
    double lastValue = start.toDouble() + static_cast<double>(length - 1) * step.toDouble();
    for (double value : {start.toDouble(), lastValue})
      if (!(value >= lowest && value <= highest)) fail(call + ": its values do not fit " + dtypeName(dtype));
  }
  return length;
}

std::string Op::str() const {
  std::string attributes = attrString();
  return attributes.empty() ? name() : std::string(name()) + "{" + attributes + "}";
}

TensorType inferType(const Op &op, const std::vector<TensorType> &inputs) {
  if (op.kind() == OpKind::ToDevice || op.kind() == OpKind::ToHost) {
    TG_ASSERT(inputs.size() == 1) << op.name() << " takes one input";
    Place from = op.kind() == OpKind::ToDevice ? Place::Host : Place::Device;
    TG_ASSERT(inputs[0].place == from)
        << op.name() << " of a value already on the other side: " << inputs[0].str();
    TensorType type = inputs[0];
    type.place = from == Place::Host ? Place::Device : Place::Host;
    return type;
  }
  for (const TensorType &input : inputs)
    TG_ASSERT(input.place == op.place() || (op.place() == Place::Device && input.isScalar()))
        << op.str() << " on the " << (op.place() == Place::Device ? "device" : "host") << " reads "
        << input.str();
  TensorType type = inferHostType(op, inputs);
  type.place = op.place();
  if (!fitsTensorLimit(type))
    fail(std::string(op.name()) + ": the result, " + type.str() + ", would take more than 2**62 bytes");
  return type;
}

namespace {

TensorType inferHostType(const Op &op, const std::vector<TensorType> &inputs) {
  const OpInfo &info = op.info();
  TG_ASSERT(info.arity < 0 || static_cast<size_t>(info.arity) == inputs.size())
      << op.name() << " takes " << info.arity << " inputs, got " << inputs.size();
  const OpAttrs &attrs = op.attrs();
  switch (info.fusion) {
  case FusionKind::Elementwise:
    return elementwiseType(op, inputs);
  case FusionKind::Reduce:
    return reductionType(op.kind(), op.attrs(), inputs[0]);
  case FusionKind::Creation:
    if (op.kind() == OpKind::ZerosLike || op.kind() == OpKind::OnesLike)
      return {inputs[0].dtype, inputs[0].shape, inputs[0].place};
    if (op.kind() == OpKind::Arange && !inputs.empty()) {
      TG_ASSERT(inputs[0].rank() >= 1) << "arange: its length from " << inputs[0].str();
      return {attrs.dtype, {inputs[0].shape[0]}, Place::Host};
    }
    if (!inputs.empty()) return {attrs.dtype, inputs[0].shape, Place::Host}; // rand, randn of a shape
    for (int64_t d : attrs.shape)
      if (d < 0)
        fail(std::string(op.name()) + ": negative dimensions are not allowed: " + listString(attrs.shape));
    return {attrs.dtype, staticShape(attrs.shape, attrs.dtype, op.name()), Place::Host};
  default:
    break;
  }
  const TensorType &input = inputs.empty() ? TensorType{} : inputs[0];
  switch (op.kind()) {
  case OpKind::Matmul:
    return matmulType(inputs[0], inputs[1]);
  case OpKind::Gather:
  case OpKind::ScatterAdd:
  case OpKind::ScatterSet:
    return indexingType(op, inputs);
  case OpKind::Allreduce:
  case OpKind::Broadcast:
    return input;
  case OpKind::Allgather:
  case OpKind::Shard:
    TG_ASSERT(static_cast<size_t>(attrs.axes.at(0)) < input.rank())
        << op.name() << " along axis " << attrs.axes[0] << " of " << input.str();
    return input;
  case OpKind::DimSize:
    TG_ASSERT(static_cast<size_t>(attrs.axes.at(0)) < input.rank())
        << "dim_size of axis " << attrs.axes[0] << " of " << input.str();
    return {DType::I64, {}, input.place};
  case OpKind::SetSlice: {
    TensorType region = sliceType(Op(OpKind::Slice, attrs), input);
    TG_ASSERT(inputs[1].dtype == input.dtype && broadcastsTo(inputs[1].shape, region.shape))
        << "set_slice: an update of " << inputs[1].str() << " for " << region.str();
    return input;
  }
  case OpKind::ExpandDims: {
    // The new axes, counted in the result, sorted and distinct (the front end normalizes them).
    size_t rank = input.rank() + attrs.axes.size();
    Shape shape;
    for (size_t axis = 0, next = 0; axis < rank; ++axis) {
      bool added =
          std::find(attrs.axes.begin(), attrs.axes.end(), static_cast<int64_t>(axis)) != attrs.axes.end();
      shape.push_back(added ? Dim::of(1) : input.shape[next++]);
    }
    return {input.dtype, shape, input.place};
  }
  case OpKind::Transpose: {
    std::vector<int64_t> sorted = attrs.axes;
    std::sort(sorted.begin(), sorted.end());
    bool permutation = sorted.size() == input.rank();
    for (size_t i = 0; permutation && i < sorted.size(); ++i)
      permutation = sorted[i] == static_cast<int64_t>(i);
    if (!permutation)
      fail("transpose: " + listString(attrs.axes) + " is not a permutation of the axes of " + input.str());
    Shape shape;
    for (int64_t axis : attrs.axes)
      shape.push_back(input.shape[axis]);
    return {input.dtype, shape, input.place};
  }
  case OpKind::Reshape:
    return reshapeType(op, input);
  case OpKind::BroadcastTo: {
    Shape target = staticShape(attrs.shape, input.dtype, op.name());
    auto result = broadcastShapes(input.shape, target);
    if (!result || *result != target || input.rank() > target.size())
      fail("cannot broadcast " + input.str() + " to shape " + listString(attrs.shape));
    return {input.dtype, target, input.place};
  }
  case OpKind::Slice:
    return sliceType(op, input);
  case OpKind::Concat:
  case OpKind::Stack:
    return joinType(op, inputs);
  case OpKind::Conv:
  case OpKind::ConvTranspose:
  case OpKind::ConvFilterGrad:
    return convolutionType(op, inputs);
  case OpKind::MaxPool:
  case OpKind::MaxPoolGrad:
  case OpKind::MaxPoolGather:
    return poolingType(op, inputs);
  case OpKind::Sort:
  case OpKind::Argsort:
    if (input.isScalar()) fail(std::string(op.name()) + ": cannot sort a zero-dimensional array");
    normalizeAxis(attrs.axes.at(0), input.rank(), op.name());
    return {resultDType(op.kind(), input.dtype), input.shape, input.place};
  case OpKind::Fused: {
    // The output has the inputs' broadcast shape; each input is read as the body declares it.
    TG_ASSERT(attrs.body && attrs.body->numInputs() == inputs.size())
        << "fused: " << inputs.size() << " inputs for a body of "
        << (attrs.body ? attrs.body->numInputs() : 0);
    for (size_t i = 0; i < inputs.size(); ++i)
      TG_ASSERT(inputs[i].dtype == attrs.body->inputDtypes[i])
          << "fused: input " << i << " is " << inputs[i].str() << ", the body reads "
          << dtypeName(attrs.body->inputDtypes[i]);
    Shape shape = fusedSpace(*attrs.body, inputs);
    TensorType value{attrs.body->resultDtype(), shape, input.place};
    for (uint32_t extra : attrs.body->extraOutputs)
      TG_ASSERT(extra >= inputs.size() && extra < attrs.body->numValues())
          << "fused: extra output %" << extra << " is not an instruction of the body";
    if (!attrs.body->reduction) return value;
    return reductionType(*attrs.body->reduction, attrs, value);
  }
  case OpKind::Scan:
    return attrs.loop->outputTypes(inputs, Place::Host).at(0);
  case OpKind::Cumsum: {
    DType dtype = resultDType(op.kind(), input.dtype);
    if (attrs.axes.empty()) {
      auto count = input.staticNumElements();
      return {dtype, {count ? Dim::of(*count) : derived("size")}, input.place};
    }
    normalizeAxis(attrs.axes[0], input.rank(), op.name());
    return {dtype, input.shape, input.place};
  }
  default:
    break;
  }
  TG_ASSERT(false) << "no type inference for " << op.name();
  return {};
}

} // namespace

TensorType extraOutputType(const Op &op, const std::vector<TensorType> &inputs, size_t index) {
  if (op.kind() == OpKind::Scan) return op.attrs().loop->outputTypes(inputs, op.place()).at(index);
  const Op &fused = op;
  const ScalarGraph &body = *fused.attrs().body;
  TG_ASSERT(index >= 1 && index <= body.extraOutputs.size())
      << "fused: no output " << index << " in a body of " << body.extraOutputs.size() << " extra outputs";
  Shape space = fusedSpace(body, inputs);
  return {body.dtypeOf(body.extraOutputs[index - 1]), space, fused.place()};
}

size_t outputCount(const Op &op) {
  if (op.kind() == OpKind::Scan) return op.attrs().loop->body.graph.outputs().size();
  return op.kind() == OpKind::Fused && op.attrs().body ? 1 + op.attrs().body->extraOutputs.size() : 1;
}

} // namespace tg::ir
