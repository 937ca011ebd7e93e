// Subscripts (NumPy's indexing) and the functional updates of what they select. x[INDEX] is planned as a few
// steps, each optional: axes added for `None` where index arrays are, a slice for the basic subscripts
// (numbers known at compile time, ranges), the axes of separated index arrays moved to the front, a gather at
// the index arrays, axes added for `None` otherwise. inc_subtensor and set_subtensor walk the same steps
// back, so that every form of index reads and writes the same elements.
#include "frontend/GraphBuilderInternal.h"

#include <algorithm>

namespace tg::frontend::detail {

using ir::DType;
using ir::Op;
using ir::OpAttrs;
using ir::OpKind;

namespace {

OpAttrs axesAttrs(std::vector<int64_t> axes) {
  OpAttrs attrs;
  attrs.axes = std::move(axes);
  return attrs;
}

bool selects(const ir::SliceSpec &spec) {
  return spec.isIndex || spec.hasStart || spec.hasStop || spec.step != 1;
}

/// Drops the size-1 axes `axes` of a rank-`rank` value: a slice at index 0 there, which keeps the dtype.
Op dropAxes(const std::vector<int64_t> &axes, size_t rank) {
  OpAttrs attrs;
  attrs.slices.resize(rank);
  for (int64_t axis : axes)
    attrs.slices[static_cast<size_t>(axis)].isIndex = true;
  return Op(OpKind::Slice, attrs);
}

} // namespace

void GraphBuilder::checkIndexValues(ir::Value *index, const ir::Dim &size, size_t axis,
                                    const SourceLoc &loc) {
  if (!index->isConstant() || !size.isStatic()) return; // checked when it runs
  const ir::TensorData &data = index->constant();
  for (int64_t e = 0; e < data.numElements(); ++e)
    if (auto value = static_cast<int64_t>(data.get(e)); value < -size.size() || value >= size.size())
      fail(loc, "index " + std::to_string(value) + " is out of bounds for axis " + std::to_string(axis) +
                    " with size " + std::to_string(size.size()));
}

ir::Value *GraphBuilder::indexArray(const Expr &expr, const Scope &scope) {
  TypedValue index = evaluateTensor(expr, scope, "an index");
  DType dtype = index.value->type().dtype;
  if (dtype == DType::Bool)
    fail(expr.loc, "a boolean mask as a subscript would give a shape that depends on the data; "
                   "keep the shape with where(mask, x, 0), or reduce with sum(where(mask, x, 0))");
  if (!ir::isInteger(dtype))
    fail(expr.loc, std::string("an index must be an integer, not ") + ir::dtypeName(dtype));
  return materialize(index, expr.loc);
}

IndexPlan GraphBuilder::planIndex(const IndexExpr &expr, const Scope &scope) {
  IndexPlan plan;
  plan.x = materialize(evaluateTensor(*expr.base, scope, "indexing"), expr.loc);
  size_t rank = plan.x->type().rank();
  // `...` stands for the whole axes the other subscripts leave; `None` adds an axis of size 1 where it
  // stands. An index is a number known when the script is compiled (basic indexing), or an integer tensor,
  // whose values are read at run time (NumPy's advanced indexing: a gather).
  using Kind = Subscript::Kind;
  size_t subscribed = 0;
  const Subscript *ellipsis = nullptr;
  std::vector<ir::Value *> indices(expr.subscripts.size()); // each Index subscript's value
  bool advanced = false;
  for (size_t s = 0; s < expr.subscripts.size(); ++s) {
    const Subscript &subscript = expr.subscripts[s];
    if (subscript.kind == Kind::Ellipsis) {
      if (ellipsis) fail(subscript.loc, "an index can only have a single ellipsis ('...')");
      ellipsis = &subscript;
    }
    subscribed += subscript.kind == Kind::Index || subscript.kind == Kind::Range;
    if (subscript.kind != Kind::Index) continue;
    indices[s] = indexArray(*subscript.index, scope);
    advanced = advanced || !(indices[s]->isConstant() && indices[s]->type().isScalar());
  }
  OpAttrs slices;
  std::vector<size_t> gathered; // with index arrays: the axes read at them, in order
  int64_t resultAxis = 0;
  size_t axis = 0; // of x, with the axes `None` adds to it first
  for (size_t s = 0; s < expr.subscripts.size(); ++s) {
    const Subscript &subscript = expr.subscripts[s];
    ir::SliceSpec spec;
    switch (subscript.kind) {
    case Kind::Ellipsis:
      for (size_t whole = subscribed; whole < rank; ++whole, ++resultAxis, ++axis)
        slices.slices.push_back(spec);
      continue;
    case Kind::NewAxis:
      if (advanced) { // added to x first, then taken whole: it separates index arrays as a slice does
        plan.addedFirst.push_back(static_cast<int64_t>(axis++));
        slices.slices.push_back(spec);
      } else {
        plan.addedLast.push_back(resultAxis++);
      }
      continue;
    case Kind::Index:
      if (advanced) { // with an index array, every integer is one (a 0-d array), as NumPy reads them
        gathered.push_back(axis++);
        plan.indices.push_back(indices[s]);
        slices.slices.push_back(spec);
        continue;
      }
      spec.isIndex = true;
      if (const ir::TensorData &data = indices[s]->constant(); data.dtype == DType::I32)
        spec.start = data.data<int32_t>()[0];
      else
        spec.start = data.data<int64_t>()[0];
      ++axis;
      break;
    case Kind::Range:
      ++resultAxis;
      ++axis;
      if (subscript.start) {
        spec.hasStart = true;
        spec.start = staticInt(*subscript.start, scope, "a slice start");
      }
      if (subscript.stop) {
        spec.hasStop = true;
        spec.stop = staticInt(*subscript.stop, scope, "a slice stop");
      }
      if (subscript.step) {
        spec.step = staticInt(*subscript.step, scope, "a slice step");
        if (spec.step == 0) fail(subscript.step->loc, "slice step cannot be zero");
      }
      break;
    }
    slices.slices.push_back(spec);
  }
  // A slice only where it selects (with index arrays, its whole axes stay), or to report too many subscripts.
  size_t expandedRank = rank + plan.addedFirst.size();
  if (std::any_of(slices.slices.begin(), slices.slices.end(), selects) ||
      slices.slices.size() > expandedRank || (!advanced && !slices.slices.empty()))
    plan.slices = slices;
  if (gathered.empty()) return plan;
  // Index arrays on axes next to each other put their dimensions in those axes' place; separated, in front
  // (NumPy's rule): then the indexed axes are moved first, in order.
  if (gathered.back() - gathered.front() + 1 == gathered.size()) {
    plan.gatherAxis = static_cast<int64_t>(gathered.front());
  } else {
    for (size_t g : gathered)
      plan.perm.push_back(static_cast<int64_t>(g));
    for (size_t d = 0; d < expandedRank; ++d)
      if (std::find(gathered.begin(), gathered.end(), d) == gathered.end())
        plan.perm.push_back(static_cast<int64_t>(d));
  }
  return plan;
}

IndexValues GraphBuilder::applyIndex(const IndexPlan &plan, const SourceLoc &loc) {
  IndexValues values;
  auto step = [&](bool present, ir::Value *from, Op op, std::vector<ir::Value *> more = {}) {
    if (!present) return from;
    std::vector<ir::Value *> inputs{from};
    inputs.insert(inputs.end(), more.begin(), more.end());
    return apply(std::move(op), std::move(inputs), loc).value;
  };
  values.expanded =
      step(!plan.addedFirst.empty(), plan.x, Op(OpKind::ExpandDims, axesAttrs(plan.addedFirst)));
  values.sliced =
      step(plan.slices.has_value(), values.expanded, Op(OpKind::Slice, plan.slices.value_or(OpAttrs{})));
  values.moved = step(!plan.perm.empty(), values.sliced, Op(OpKind::Transpose, axesAttrs(plan.perm)));
  for (size_t k = 0; k < plan.indices.size(); ++k) // indices known now are checked now
    checkIndexValues(plan.indices[k], values.moved->type().shape[static_cast<size_t>(plan.gatherAxis) + k],
                     static_cast<size_t>(plan.gatherAxis) + k, loc);
  values.gathered = step(!plan.indices.empty(), values.moved,
                         Op(OpKind::Gather, axesAttrs({plan.gatherAxis})), plan.indices);
  values.result =
      step(!plan.addedLast.empty(), values.gathered, Op(OpKind::ExpandDims, axesAttrs(plan.addedLast)));
  return values;
}

TypedValue GraphBuilder::evaluateIndex(const IndexExpr &expr, const Scope &scope) {
  return {applyIndex(planIndex(expr, scope), expr.loc).result, false};
}

TypedValue GraphBuilder::updateIndex(const CallExpr &call, const Scope &scope, bool add) {
  const char *name = add ? "inc_subtensor" : "set_subtensor";
  if (call.args.size() != 2 || !call.keywords.empty())
    fail(call.loc, std::string(name) + "() takes two arguments: " + name + "(x[INDEX], value)");
  const auto *indexed = call.args[0]->as<IndexExpr>();
  if (!indexed)
    fail(call.args[0]->loc, std::string(name) + "() updates a subscript: its first argument is written as " +
                                "x[INDEX], e.g. " + name + "(x[1:3], v) or " + name + "(x[idx], v)");
  IndexPlan plan = planIndex(*indexed, scope);
  IndexValues values = applyIndex(plan, call.loc);
  const ir::TensorType &x = plan.x->type(), &selected = values.result->type();
  // The value takes x's dtype when NumPy's same-kind casting allows (a float into integers does not).
  TypedValue value = evaluateTensor(*call.args[1], scope, "a value");
  DType from = value.value->type().dtype;
  auto kind = [](DType dtype) { return dtype == DType::Bool ? 0 : ir::isInteger(dtype) ? 1 : 2; };
  if (!value.weak && kind(from) > kind(x.dtype))
    fail(call.args[1]->loc, std::string(name) + "(): cannot write " + ir::dtypeName(from) + " values into " +
                                x.str() + "; convert them first, e.g. " + ir::dtypeName(x.dtype) + "(v)");
  ir::Value *update = convert(value, x.dtype, call.args[1]->loc);
  OpKind plus = x.dtype == DType::Bool ? OpKind::Or : OpKind::Add; // NumPy's add of bools
  auto fits = ir::broadcastShapes(update->type().shape, selected.shape);
  if (!fits || *fits != selected.shape)
    fail(call.args[1]->loc,
         std::string(name) + "(): a value of shape " + ir::shapeString(update->type().shape) +
             " cannot be broadcast to the selected shape " + ir::shapeString(selected.shape));
  // The scatters and set_slice broadcast the value to what they select; axes that `None` added to the result
  // are dropped from it first, so there it is broadcast to the selected shape (by its static sizes, or by
  // adding zeros of it). A symbol against another size is checked when it runs.
  const ir::Shape &shape = update->type().shape;
  size_t missing = selected.rank() - shape.size();
  bool broadcasts = missing > 0;
  for (size_t d = 0; d < shape.size(); ++d)
    broadcasts = broadcasts || (shape[d].isOne() && !selected.shape[missing + d].isOne());
  if (broadcasts && !plan.addedLast.empty()) {
    bool isStatic = std::all_of(selected.shape.begin(), selected.shape.end(),
                                [](const ir::Dim &d) { return d.isStatic(); });
    OpAttrs to;
    for (const ir::Dim &d : selected.shape)
      to.shape.push_back(d.size());
    update = isStatic
                 ? apply(Op(OpKind::BroadcastTo, to), {update}, call.loc).value
                 : apply(Op(plus), {apply(Op(OpKind::ZerosLike), {values.result}, call.loc).value, update},
                         call.loc)
                       .value;
  }
  // Each step back: the added axes (of size 1) dropped, the gathered positions scattered into the moved
  // axes, the moved axes put back, the slice's region replaced in x.
  const SourceLoc &loc = call.loc;
  if (!plan.addedLast.empty()) update = apply(dropAxes(plan.addedLast, selected.rank()), {update}, loc).value;
  if (!plan.indices.empty()) {
    std::vector<ir::Value *> inputs{values.moved, update};
    inputs.insert(inputs.end(), plan.indices.begin(), plan.indices.end());
    update =
        apply(Op(add ? OpKind::ScatterAdd : OpKind::ScatterSet, axesAttrs({plan.gatherAxis})), inputs, loc)
            .value;
  } else if (add) {
    update = apply(Op(plus), {values.moved, update}, loc).value;
  }
  if (!plan.perm.empty()) {
    std::vector<int64_t> inverse(plan.perm.size());
    for (size_t i = 0; i < plan.perm.size(); ++i)
      inverse[static_cast<size_t>(plan.perm[i])] = static_cast<int64_t>(i);
    update = apply(Op(OpKind::Transpose, axesAttrs(inverse)), {update}, loc).value;
  }
  if (plan.slices) update = apply(Op(OpKind::SetSlice, *plan.slices), {values.expanded, update}, loc).value;
  if (!plan.addedFirst.empty())
    update = apply(dropAxes(plan.addedFirst, values.expanded->type().rank()), {update}, loc).value;
  return {update, false};
}

} // namespace tg::frontend::detail
