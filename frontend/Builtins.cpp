// The builtin functions of the language: their signatures (positional parameters, keywords, defaults) and how
// each becomes graph nodes. Argument checking happens here, with the call's locations.
#include "frontend/GraphBuilderInternal.h"
#include "ir/Assert.h"
#include "ir/Npy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

namespace tg::frontend::detail {

using ir::DType;
using ir::Op;
using ir::OpAttrs;
using ir::OpKind;

namespace {

/// Parameters of a builtin: the first `required` are mandatory; any may be given by keyword.
struct Signature {
  std::vector<std::string> params;
  size_t required;
};

/// A call's arguments matched to a signature.
class Arguments {
public:
  Arguments(const std::string &function, const Signature &signature, const CallExpr &call,
            GraphBuilder &builder)
      : params_(signature.params) {
    values_.assign(params_.size(), nullptr);
    if (call.args.size() > params_.size())
      builder.fail(call.args[params_.size()]->loc, function + "() takes at most " +
                                                       std::to_string(params_.size()) + " argument" +
                                                       (params_.size() == 1 ? "" : "s") + ", but " +
                                                       std::to_string(call.args.size()) + " were given");
    for (size_t i = 0; i < call.args.size(); ++i)
      values_[i] = call.args[i].get();
    for (const KeywordArg &keyword : call.keywords) {
      auto found = std::find(params_.begin(), params_.end(), keyword.name);
      if (found == params_.end())
        builder.fail(keyword.loc, function + "() got an unexpected keyword argument '" + keyword.name + "'");
      size_t index = static_cast<size_t>(found - params_.begin());
      if (values_[index])
        builder.fail(keyword.loc, function + "() got multiple values for argument '" + keyword.name + "'");
      values_[index] = keyword.value.get();
    }
    for (size_t i = 0; i < signature.required; ++i)
      if (!values_[i]) builder.fail(call.loc, function + "() is missing its argument '" + params_[i] + "'");
  }

  const Expr *get(const std::string &name) const {
    auto found = std::find(params_.begin(), params_.end(), name);
    TG_ASSERT(found != params_.end()) << "builtin has no parameter " << name;
    return values_[static_cast<size_t>(found - params_.begin())];
  }
  const Expr &at(size_t index) const { return *values_.at(index); }

private:
  std::vector<std::string> params_;
  std::vector<const Expr *> values_;
};

const std::map<std::string, OpKind> kUnary{
    {"neg", OpKind::Neg},   {"abs", OpKind::Abs},           {"exp", OpKind::Exp},
    {"log", OpKind::Log},   {"log1p", OpKind::Log1p},       {"expm1", OpKind::Expm1},
    {"sqrt", OpKind::Sqrt}, {"rsqrt", OpKind::Rsqrt},       {"sin", OpKind::Sin},
    {"cos", OpKind::Cos},   {"tanh", OpKind::Tanh},         {"sigmoid", OpKind::Sigmoid},
    {"relu", OpKind::Relu}, {"softplus", OpKind::Softplus}, {"floor", OpKind::Floor},
    {"ceil", OpKind::Ceil}, {"round", OpKind::Round},       {"sign", OpKind::Sign},
    {"erf", OpKind::Erf}};
const std::map<std::string, OpKind> kBinary{
    {"maximum", OpKind::Maximum}, {"minimum", OpKind::Minimum}, {"pow", OpKind::Pow}};
const std::map<std::string, OpKind> kReductions{
    {"sum", OpKind::Sum},       {"mean", OpKind::Mean}, {"max", OpKind::Max},
    {"min", OpKind::Min},       {"prod", OpKind::Prod}, {"argmax", OpKind::Argmax},
    {"argmin", OpKind::Argmin}, {"any", OpKind::Any},   {"all", OpKind::All}};
const std::set<std::string> kOthers{
    "where",   "clip",         "f32",        "f64",       "i32",   "i64",     "bool",   "matmul", "transpose",
    "reshape", "broadcast_to", "concat",     "stack",     "zeros", "ones",    "full",   "eye",    "arange",
    "rand",    "randn",        "zeros_like", "ones_like", "sort",  "argsort", "cumsum", "load",   "grad"};

std::string listString(const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

} // namespace

bool GraphBuilder::isBuiltin(const std::string &name) {
  return kUnary.count(name) || kBinary.count(name) || kReductions.count(name) || kOthers.count(name);
}

std::optional<TypedValue> GraphBuilder::callBuiltin(const std::string &name, const CallExpr &call,
                                                    const Scope &scope) {
  const SourceLoc &loc = call.loc;
  auto tensor = [&](const Expr &expr) { return evaluateTensor(expr, scope, "an argument"); };
  auto strong = [&](const Expr &expr) { return materialize(tensor(expr), expr.loc); };
  auto flag = [&](const Expr *expr, bool fallback) {
    if (!expr) return fallback;
    const auto *literal = expr->as<BoolExpr>();
    if (!literal) fail(expr->loc, "expected true or false");
    return literal->value;
  };
  auto dtypeArgument = [&](const Expr *expr, DType fallback) {
    if (!expr) return fallback;
    const auto *dtypeName = expr->as<NameExpr>();
    auto dtype = dtypeName ? ir::parseDType(dtypeName->name) : std::nullopt;
    if (!dtype) fail(expr->loc, "expected a dtype: f32, f64, i32, i64 or bool");
    return *dtype;
  };
  auto shapeArgument = [&](const Expr &expr) {
    std::vector<int64_t> shape = staticInts(expr, scope, "a shape");
    for (int64_t d : shape)
      if (d < 0) fail(expr.loc, "negative dimensions are not allowed: " + listString(shape));
    return shape;
  };
  // An axis counted from the front, checked against the rank.
  auto normalizeAxis = [&](int64_t axis, size_t rank, const Expr &where) {
    int64_t r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r)
      fail(where.loc,
           "axis " + std::to_string(axis) + " is out of bounds for an array of rank " + std::to_string(rank));
    return axis < 0 ? axis + r : axis;
  };

  if (auto unary = kUnary.find(name); unary != kUnary.end()) {
    Arguments args(name, {{"x"}, 1}, call, *this);
    return applyElementwise(unary->second, {tensor(args.at(0))}, loc);
  }
  if (auto binary = kBinary.find(name); binary != kBinary.end()) {
    Arguments args(name, {{"a", "b"}, 2}, call, *this);
    return applyElementwise(binary->second, {tensor(args.at(0)), tensor(args.at(1))}, loc);
  }
  if (auto dtype = ir::parseDType(name)) {
    Arguments args(name, {{"x"}, 1}, call, *this);
    TypedValue x = tensor(args.at(0));
    if (x.value->type().dtype == *dtype) return TypedValue{x.value, false};
    OpAttrs attrs;
    attrs.dtype = *dtype;
    return apply(Op(OpKind::Cast, attrs), {materialize(x, loc)}, loc);
  }
  if (auto reduction = kReductions.find(name); reduction != kReductions.end()) {
    Arguments args(name, {{"x", "axis", "keepdims"}, 1}, call, *this);
    ir::Value *x = strong(args.at(0));
    size_t rank = x->type().rank();
    OpAttrs attrs;
    attrs.keepdims = flag(args.get("keepdims"), false);
    bool positional = reduction->second == OpKind::Argmax || reduction->second == OpKind::Argmin;
    if (const Expr *axis = args.get("axis")) {
      if (positional && axis->as<ListExpr>()) fail(axis->loc, name + "() takes a single axis, not a list");
      for (int64_t a : staticInts(*axis, scope, "an axis")) {
        int64_t normalized = normalizeAxis(a, rank, *axis);
        if (std::count(attrs.axes.begin(), attrs.axes.end(), normalized))
          fail(axis->loc, "axis " + std::to_string(a) + " is repeated");
        attrs.axes.push_back(normalized);
      }
      std::sort(attrs.axes.begin(), attrs.axes.end());
    } else if (!positional) {
      attrs.axes.resize(rank);
      std::iota(attrs.axes.begin(), attrs.axes.end(), 0);
    }
    if (reduction->second == OpKind::Any || reduction->second == OpKind::All)
      x = convert({x, false}, DType::Bool, loc);
    return apply(Op(reduction->second, attrs), {x}, loc);
  }
  if (name == "where") {
    Arguments args(name, {{"condition", "a", "b"}, 3}, call, *this);
    ir::Value *condition = convert({strong(args.at(0)), false}, DType::Bool, loc);
    TypedValue a = tensor(args.at(1)), b = tensor(args.at(2));
    DType dtype = resultDType({a, b});
    // Like any elementwise op of literals alone, where(c, 1.5, 2.5) is weak: f32 alone, the other dtype with
    // it.
    TypedValue result =
        apply(Op(OpKind::Where), {condition, convert(a, dtype, loc), convert(b, dtype, loc)}, loc);
    result.weak = a.weak && b.weak;
    return result;
  }
  if (name == "clip") {
    Arguments args(name, {{"x", "lo", "hi"}, 3}, call, *this);
    return applyElementwise(OpKind::Clip, {tensor(args.at(0)), tensor(args.at(1)), tensor(args.at(2))}, loc);
  }
  if (name == "matmul") {
    Arguments args(name, {{"a", "b"}, 2}, call, *this);
    TypedValue a = tensor(args.at(0)), b = tensor(args.at(1));
    if (a.weak || b.weak) fail(loc, "matmul: operands must have at least one dimension, not be literals");
    DType dtype = resultDType({a, b});
    return apply(Op(OpKind::Matmul), {convert(a, dtype, loc), convert(b, dtype, loc)}, loc);
  }
  if (name == "transpose") {
    Arguments args(name, {{"x", "axes"}, 1}, call, *this);
    ir::Value *x = strong(args.at(0));
    size_t rank = x->type().rank();
    OpAttrs attrs;
    if (const Expr *axes = args.get("axes")) {
      for (int64_t a : staticInts(*axes, scope, "an axis"))
        attrs.axes.push_back(normalizeAxis(a, rank, *axes));
    } else {
      for (size_t i = rank; i > 0; --i)
        attrs.axes.push_back(static_cast<int64_t>(i - 1));
    }
    return apply(Op(OpKind::Transpose, attrs), {x}, loc);
  }
  if (name == "reshape" || name == "broadcast_to") {
    Arguments args(name, {{"x", "shape"}, 2}, call, *this);
    ir::Value *x = strong(args.at(0));
    OpAttrs attrs;
    attrs.shape = staticInts(args.at(1), scope, "a shape");
    return apply(Op(name == "reshape" ? OpKind::Reshape : OpKind::BroadcastTo, attrs), {x}, loc);
  }
  if (name == "concat" || name == "stack") {
    Arguments args(name, {{"arrays", "axis"}, 1}, call, *this);
    const auto *list = args.at(0).as<ListExpr>();
    if (!list || list->elements.empty())
      fail(args.at(0).loc, name + "() expects a non-empty list of arrays, e.g. " + name + "([a, b], axis=0)");
    std::vector<TypedValue> parts;
    for (const ExprPtr &element : list->elements)
      parts.push_back(tensor(*element));
    DType dtype = resultDType(parts);
    std::vector<ir::Value *> inputs;
    for (const TypedValue &part : parts)
      inputs.push_back(convert(part, dtype, loc));
    size_t rank = inputs[0]->type().rank() + (name == "stack" ? 1 : 0);
    OpAttrs attrs;
    int64_t axis = args.get("axis") ? staticInt(*args.get("axis"), scope, "an axis") : 0;
    attrs.axes = {normalizeAxis(axis, rank, args.get("axis") ? *args.get("axis") : args.at(0))};
    return apply(Op(name == "concat" ? OpKind::Concat : OpKind::Stack, attrs), inputs, loc);
  }
  if (name == "zeros" || name == "ones") {
    Arguments args(name, {{"shape", "dtype"}, 1}, call, *this);
    OpAttrs attrs;
    attrs.shape = shapeArgument(args.at(0));
    attrs.dtype = dtypeArgument(args.get("dtype"), DType::F32);
    return apply(Op(name == "zeros" ? OpKind::Zeros : OpKind::Ones, attrs), {}, loc);
  }
  if (name == "full") {
    Arguments args(name, {{"shape", "value", "dtype"}, 2}, call, *this);
    OpAttrs attrs;
    attrs.shape = shapeArgument(args.at(0));
    ir::Number value = staticNumber(args.at(1), scope, "a fill value");
    DType fallback = args.at(1).as<BoolExpr>() ? DType::Bool : value.isInteger ? DType::I64 : DType::F32;
    attrs.dtype = dtypeArgument(args.get("dtype"), fallback);
    if (!fitsDType(value, attrs.dtype))
      fail(args.at(1).loc,
           "full(): the fill value " + value.str() + " does not fit " + ir::dtypeName(attrs.dtype));
    attrs.scalars = {value};
    return apply(Op(OpKind::Full, attrs), {}, loc);
  }
  if (name == "eye") {
    Arguments args(name, {{"n", "m", "dtype"}, 1}, call, *this);
    int64_t n = staticInt(args.at(0), scope, "a size");
    int64_t m = args.get("m") ? staticInt(*args.get("m"), scope, "a size") : n;
    if (n < 0 || m < 0) fail(loc, "eye(): sizes cannot be negative");
    OpAttrs attrs;
    attrs.shape = {n, m};
    attrs.dtype = dtypeArgument(args.get("dtype"), DType::F32);
    return apply(Op(OpKind::Eye, attrs), {}, loc);
  }
  if (name == "arange") {
    Arguments args(name, {{"start", "stop", "step", "dtype"}, 1}, call, *this);
    ir::Number first = staticNumber(args.at(0), scope, "arange's bounds");
    ir::Number start = ir::Number::ofInt(0), stop = first, step = ir::Number::ofInt(1);
    if (const Expr *stopArg = args.get("stop")) {
      start = first;
      stop = staticNumber(*stopArg, scope, "arange's bounds");
    }
    if (const Expr *stepArg = args.get("step")) {
      step = staticNumber(*stepArg, scope, "arange's step");
      if (step.toDouble() == 0) fail(stepArg->loc, "arange(): step cannot be zero");
    }
    bool allIntegers = start.isInteger && stop.isInteger && step.isInteger;
    OpAttrs attrs;
    attrs.scalars = {start, stop, step};
    attrs.dtype = dtypeArgument(args.get("dtype"), allIntegers ? DType::I64 : DType::F32);
    try {
      attrs.shape = {ir::arangeLength(start, stop, step, attrs.dtype)};
    } catch (const ir::UserError &error) {
      fail(loc, error.message);
    }
    return apply(Op(OpKind::Arange, attrs), {}, loc);
  }
  if (name == "rand" || name == "randn") {
    Arguments args(name, {{"shape", "seed", "dtype"}, 1}, call, *this);
    OpAttrs attrs;
    attrs.shape = shapeArgument(args.at(0));
    attrs.dtype = dtypeArgument(args.get("dtype"), DType::F32);
    if (!ir::isFloat(attrs.dtype))
      fail(args.get("dtype")->loc, name + "() makes floats: dtype must be f32 or f64");
    if (const Expr *seed = args.get("seed")) {
      int64_t value = staticInt(*seed, scope, "a seed");
      if (value < 0) fail(seed->loc, "a seed cannot be negative");
      attrs.seed = static_cast<uint64_t>(value);
    } else {
      attrs.seed = takeSeed();
    }
    return apply(Op(name == "rand" ? OpKind::Rand : OpKind::Randn, attrs), {}, loc);
  }
  if (name == "zeros_like" || name == "ones_like") {
    Arguments args(name, {{"x"}, 1}, call, *this);
    return apply(Op(name == "zeros_like" ? OpKind::ZerosLike : OpKind::OnesLike), {strong(args.at(0))}, loc);
  }
  if (name == "sort" || name == "argsort" || name == "cumsum") {
    Arguments args(name, {{"x", "axis"}, 1}, call, *this);
    ir::Value *x = strong(args.at(0));
    OpAttrs attrs;
    if (const Expr *axis = args.get("axis"))
      attrs.axes = {normalizeAxis(staticInt(*axis, scope, "an axis"), x->type().rank(), *axis)};
    else if (name != "cumsum") {
      if (x->type().isScalar()) fail(loc, name + "(): cannot sort a zero-dimensional array");
      attrs.axes = {static_cast<int64_t>(x->type().rank()) - 1};
    }
    OpKind kind = name == "sort" ? OpKind::Sort : name == "argsort" ? OpKind::Argsort : OpKind::Cumsum;
    return apply(Op(kind, attrs), {x}, loc);
  }
  if (name == "grad") {
    std::vector<TypedValue> results = gradients(call, scope);
    if (results.size() != 1)
      fail(loc, "grad(...) returns " + std::to_string(results.size()) +
                    " values here; unpack them with let, e.g. let ga, gb = grad(cost, a, b)");
    return results[0];
  }
  if (name == "load") {
    Arguments args(name, {{"path"}, 1}, call, *this);
    const auto *path = args.at(0).as<StringExpr>();
    if (!path) fail(args.at(0).loc, "load() expects a file name in quotes, e.g. load(\"weights.npy\")");
    // Relative paths are relative to the file that names them.
    std::string file = path->value;
    if (!file.empty() && file[0] != '/' && path->loc.file) file = folderOf(*path->loc.file) + "/" + file;
    try {
      return TypedValue{graph_->addConstant(ir::loadNpy(file), path->value), false};
    } catch (ir::UserError &error) {
      error.loc = path->loc;
      throw;
    }
  }
  return std::nullopt;
}

} // namespace tg::frontend::detail
