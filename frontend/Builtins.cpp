// The builtin functions of the language: their signatures (positional parameters, keywords, defaults) and how
// each becomes graph nodes. Argument checking happens here, with the call's locations.
#include "frontend/GraphBuilderInternal.h"
#include "io/Npy.h"
#include "ir/Assert.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <regex>
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

/// An op's builtin signature from Ops.def's column: "x, axis?, keepdims?" (`?`: optional).
Signature signatureOf(ir::OpKind kind) {
  Signature signature{{}, 0};
  std::string_view text = ir::opInfo(kind).builtin;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view param = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 2);
    bool optional = param.back() == '?';
    if (optional) param.remove_suffix(1);
    TG_ASSERT(optional || signature.required == signature.params.size())
        << ir::opName(kind) << ": a required parameter after an optional one in Ops.def";
    signature.params.emplace_back(param);
    if (!optional) ++signature.required;
  }
  return signature;
}

/// The op a builtin function names (Ops.def's builtin column), if it names one.
std::optional<OpKind> builtinOp(const std::string &name) {
  static const std::map<std::string, OpKind> builtins = [] {
    std::map<std::string, OpKind> table;
#define OP(Enum, name, arity, fusion, device, symbol, builtin, ...)                                          \
  if (*(builtin)) table[name] = OpKind::Enum;
#include "ir/Ops.def"
    return table;
  }();
  auto found = builtins.find(name);
  return found == builtins.end() ? std::nullopt : std::optional<OpKind>(found->second);
}

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
        builder.fail(keyword.loc, function + "() got an unexpected keyword argument '" + keyword.name + "'" +
                                      didYouMean(keyword.name, params_));
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

/// A builtin that is not an op of its own name (casts are spelled by their dtype: f32(x)): its parameters,
/// which calls are checked against, and a line of doc for `tgc help NAME`. grad and scan take a list of
/// values ("..." stands for more of the one before it); their parameters here say how, and their calls are
/// checked where they are built.
struct Function {
  Signature signature;
  const char *doc;
};
const std::map<std::string, Function> kFunctions{
    {"load", {{{"path"}, 1}, "a constant read from a .npy file (a path in quotes, relative to the script)"}},
    {"grad",
     {{{"cost", "x1", "...", "disconnected"}, 3},
      "the gradients of a scalar cost with respect to each x (let gw, gb = grad(loss, w, b)); "
      "disconnected=\"zero\" gives zeros for a value the cost does not depend on, which is otherwise an "
      "error"}},
    {"var",
     {{{"x", "axis", "ddof", "keepdims"}, 1},
      "NumPy's variance: the mean squared deviation from the mean over axis, times n / (n - ddof)"}},
    {"std", {{{"x", "axis", "ddof", "keepdims"}, 1}, "NumPy's standard deviation: the square root of var"}},
    {"take",
     {{{"x", "indices", "axis"}, 2}, "NumPy's take: x[:, ..., indices] on axis (x flattened without one)"}},
    {"take_along_axis",
     {{{"x", "indices", "axis"}, 3},
      "NumPy's take_along_axis: out[p] = x[p with p[axis] = indices[p]] (indices of x's rank)"}},
    {"one_hot",
     {{{"indices", "classes", "dtype"}, 2},
      "a new last axis of classes: 1 at each index, 0 elsewhere (a row of zeros for an index out of range)"}},
    {"inc_subtensor",
     {{{"x[index]", "y"}, 2},
      "Theano's: x with y added at x[index] (repeated indices add up); x is unchanged"}},
    {"set_subtensor", {{{"x[index]", "y"}, 2}, "Theano's: x with y written at x[index]; x is unchanged"}},
    {"pad",
     {{{"x", "widths", "value"}, 2},
      "NumPy's constant padding: widths one count for every side, [before, after] for every axis, or a pair "
      "per axis"}},
    {"conv1d",
     {{{"x", "w", "stride", "padding", "dilation", "groups"}, 2},
      "PyTorch's conv1d (a cross-correlation): x [N, C, L], w [O, C / groups, K]"}},
    {"conv2d",
     {{{"x", "w", "stride", "padding", "dilation", "groups"}, 2},
      "PyTorch's conv2d (a cross-correlation): x [N, C, H, W], w [O, C / groups, KH, KW]"}},
    {"conv_transpose2d",
     {{{"x", "w", "stride", "padding", "output_padding", "dilation", "groups"}, 2},
      "PyTorch's conv_transpose2d, the gradient of conv2d with respect to its input: x [N, O, H, W]"}},
    {"max_pool2d",
     {{{"x", "kernel", "stride", "padding"}, 2},
      "PyTorch's: the maximum of each window (stride the kernel by default, padding at most half of it)"}},
    {"avg_pool2d",
     {{{"x", "kernel", "stride", "padding"}, 2},
      "PyTorch's: the mean of each window, padding counted (count_include_pad)"}},
    {"scan",
     {{{"step", "init", "xs", "...", "length", "reverse"}, 4},
      "a recurrence: step(carry, x) for each x of the sequences (their first axis), the carries stacked; "
      "length= without sequences, reverse=true from the end"}},
};

/// A line of doc for each builtin that is an op (Ops.def names its parameters): what `tgc help NAME` says.
const std::map<std::string, const char *> kOpDocs{
    {"exp", "e to the power x, elementwise"},
    {"exp2", "2 to the power x, elementwise"},
    {"expm1", "exp(x) - 1, accurate near 0"},
    {"log", "the natural logarithm, elementwise"},
    {"log2", "the base-2 logarithm, elementwise"},
    {"log1p", "log(1 + x), accurate near 0"},
    {"sin", "the sine, elementwise (radians)"},
    {"cos", "the cosine, elementwise (radians)"},
    {"tan", "the tangent, elementwise (radians)"},
    {"atan", "the arctangent, elementwise"},
    {"sinh", "the hyperbolic sine, elementwise"},
    {"cosh", "the hyperbolic cosine, elementwise"},
    {"tanh", "the hyperbolic tangent, elementwise"},
    {"erf", "the error function, elementwise"},
    {"neg", "-x, elementwise"},
    {"abs", "the absolute value, elementwise"},
    {"sqrt", "the square root, elementwise"},
    {"rsqrt", "1 / sqrt(x), elementwise"},
    {"sigmoid", "the logistic function 1 / (1 + exp(-x)), elementwise and stable"},
    {"relu", "max(x, 0), elementwise"},
    {"softplus", "log(1 + exp(x)), elementwise, without overflow"},
    {"floor", "the largest integer not above x, elementwise"},
    {"ceil", "the smallest integer not below x, elementwise"},
    {"round", "the nearest integer, halves to even (NumPy's), elementwise"},
    {"sign", "-1, 0 or 1 by the sign of x, elementwise"},
    {"pow", "a ** b, elementwise and broadcast"},
    {"maximum", "the larger of a and b, elementwise and broadcast"},
    {"minimum", "the smaller of a and b, elementwise and broadcast"},
    {"where", "a where the condition holds, else b, elementwise and broadcast"},
    {"clip", "x limited to [lo, hi], elementwise"},
    {"sum", "the sum over axis (an integer or a list; all axes without one)"},
    {"mean", "the mean over axis (all axes without one)"},
    {"max", "the largest element over axis (all axes without one)"},
    {"min", "the smallest element over axis (all axes without one)"},
    {"prod", "the product over axis (all axes without one)"},
    {"argmax", "the index of the largest element along axis (of the flattened array without one)"},
    {"argmin", "the index of the smallest element along axis (of the flattened array without one)"},
    {"any", "whether any element is true over axis"},
    {"all", "whether every element is true over axis"},
    {"matmul", "a @ b: NumPy's matmul (batch axes broadcast; a vector on either side)"},
    {"transpose", "x with its axes reversed, or in the order axes gives"},
    {"reshape", "x's elements in a new shape (one size may be -1: what the others leave)"},
    {"broadcast_to", "x broadcast to shape, as NumPy broadcasts"},
    {"expand_dims", "x with a new axis of size 1 at axis"},
    {"concat", "the arrays joined along an existing axis (default 0)"},
    {"stack", "the arrays joined along a new axis (default 0)"},
    {"zeros", "an array of zeros of shape (f32 unless dtype= says)"},
    {"ones", "an array of ones of shape (f32 unless dtype= says)"},
    {"full", "an array of shape filled with value"},
    {"eye", "an n x m identity matrix (m = n by default)"},
    {"arange", "start, start + step, ... below stop (NumPy's arange; arange(n) is 0 .. n - 1)"},
    {"rand", "uniform random numbers in [0, 1) of shape (counter-based: the same seed, the same numbers)"},
    {"randn", "standard normal random numbers of shape (counter-based: the same seed, the same numbers)"},
    {"zeros_like", "zeros of x's dtype and shape"},
    {"ones_like", "ones of x's dtype and shape"},
    {"sort", "x sorted along axis (the last by default)"},
    {"argsort", "the indices that sort x along axis (the last by default; stable)"},
    {"cumsum", "the running sums along axis (of the flattened array without one)"},
};

/// The parameters of builtin function `name` (one of kFunctions).
const Signature &functionSignature(const std::string &name) {
  return kFunctions.at(name).signature;
}

/// "sum(x, axis=..., keepdims=...)": a signature as help prints it, optional parameters by keyword.
std::string signatureText(const std::string &name, const Signature &signature) {
  std::string text = name + "(";
  for (size_t i = 0; i < signature.params.size(); ++i)
    text += (i ? ", " : "") + signature.params[i] + (i < signature.required ? "" : "=...");
  return text + ")";
}

std::string listString(const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

/// Every builtin function's name: the ops' (Ops.def's builtin column), the other functions', the casts'.
const std::vector<std::string> &builtinNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> names;
    for (const auto &[name, function] : kFunctions)
      names.push_back(name);
#define OP(Enum, name, arity, fusion, device, symbol, builtin, ...)                                          \
  if (*(builtin)) names.push_back(name);
#include "ir/Ops.def"
    for (ir::DType dtype : ir::kAllDTypes)
      names.push_back(ir::dtypeName(dtype));
    return names;
  }();
  return names;
}

/// A standard library function's help: `module.name(params)` from its def, and the comment lines above it.
std::optional<std::string> stdlibHelp(const std::string &module, const std::string &name) {
  auto found = embeddedStdlib().find(module);
  if (found == embeddedStdlib().end()) return std::nullopt;
  const std::string &text = found->second;
  std::smatch match;
  if (!std::regex_search(text, match, std::regex(R"((^|\n)def\s+)" + name + R"(\s*\(([^)]*)\))")))
    return std::nullopt;
  std::string help = module + "." + name + "(" + match[2].str() + ")\n";
  // The comment just above the def, its lines in order.
  size_t end = static_cast<size_t>(match.position(0)) + match[1].length();
  std::vector<std::string> comment;
  while (end > 0) {
    size_t begin = text.rfind('\n', end - 2);
    begin = begin == std::string::npos ? 0 : begin + 1;
    std::string line = text.substr(begin, end - 1 - begin);
    if (line.rfind("# ", 0) != 0) break;
    comment.insert(comment.begin(), line.substr(2));
    end = begin;
  }
  for (const std::string &line : comment)
    help += "  " + line + "\n";
  return help + "  (in the standard library: import " + module + ")\n";
}

} // namespace

bool GraphBuilder::isBuiltin(const std::string &name) {
  return builtinOp(name) || ir::parseDType(name) || kFunctions.count(name);
}

std::string GraphBuilder::unknownFunctionHelp(const std::string &name, const Scope &scope) {
  for (ir::DType dtype : ir::kAllDTypes)
    if (name == ir::dtypeInfo(dtype).numpy)
      return std::string("; NumPy's ") + ir::dtypeInfo(dtype).numpy + " is " + ir::dtypeName(dtype) +
             " in tgc: did you mean '" + ir::dtypeName(dtype) + "'?";
  for (const auto &[module, text] : embeddedStdlib()) {
    if (!stdlibHelp(module, name)) continue;
    const Binding *imported = scope.find(module);
    if (imported && imported->kind == Binding::Kind::Module)
      return "; did you mean '" + module + "." + name + "'?";
    return "; the standard library's module '" + module + "' has it: 'import " + module + "', then call " +
           module + "." + name + "(...)";
  }
  std::vector<std::string> candidates = scope.names(Binding::Kind::Function);
  const std::vector<std::string> &builtins = builtinNames();
  candidates.insert(candidates.end(), builtins.begin(), builtins.end());
  return didYouMean(name, candidates);
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
    if (!dtype) fail(expr->loc, "expected a dtype: " + ir::dtypeNames());
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
  // A reduction's axes (sorted; all when none is given, but for a positional one, which takes a single axis
  // or the flattened array) and keepdims, from its `axis` and `keepdims` arguments.
  auto reductionAttrs = [&](const Arguments &args, size_t rank, bool positional) {
    OpAttrs attrs;
    attrs.keepdims = flag(args.get("keepdims"), false);
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
    return attrs;
  };

  // A window argument (a kernel, a stride, ...): one integer for every one of `axes` spatial axes or one per
  // axis, each at least `least`.
  auto windowInts = [&](const Expr &given, const char *what, size_t axes, int64_t least) {
    std::vector<int64_t> values = staticInts(given, scope, what);
    if (values.size() == 1) values.assign(axes, values[0]);
    if (values.size() != axes)
      fail(given.loc, name + "(): " + what + " takes one integer or " + std::to_string(axes));
    for (int64_t v : values)
      if (v < least)
        fail(given.loc, name + "(): " + what + " must be at least " + std::to_string(least) + ", got " +
                            std::to_string(v));
    return values;
  };

  // A shape list naming symbolic dimensions (zeros([n, 8])): each one's position and name, its static sizes
  // (1 where a dimension stands), and the value made of those sizes with each dimension's zeros added.
  auto symbolicSizes = [&](const Expr &expr) {
    std::vector<std::pair<size_t, std::string>> symbols;
    if (const auto *list = expr.as<ListExpr>())
      for (size_t i = 0; i < list->elements.size(); ++i)
        if (std::optional<std::string> symbol = dimensionName(*list->elements[i], scope))
          symbols.emplace_back(i, *symbol);
    return symbols;
  };
  auto staticSizes = [&](const Expr &expr) {
    std::vector<int64_t> sizes;
    for (const ExprPtr &element : expr.as<ListExpr>()->elements) {
      sizes.push_back(dimensionName(*element, scope) ? 1 : staticInt(*element, scope, "a shape"));
      if (sizes.back() < 0) fail(element->loc, "negative dimensions are not allowed");
    }
    return sizes;
  };
  // `value` broadcast along axis `position` to the size of the first axis of `carrier` (whose elements are
  // never read): plus zeros of that size, those of an arange over the carrier.
  auto withSize = [&](TypedValue value, size_t position, ir::Value *carrier) {
    size_t rank = value.value->type().rank();
    DType dtype = value.value->type().dtype;
    OpAttrs indices, others;
    indices.dtype = dtype;
    indices.scalars = {ir::Number::ofInt(0), ir::Number::ofInt(0), ir::Number::ofInt(1)};
    for (size_t d = 0; d < rank; ++d)
      if (d != position) others.axes.push_back(static_cast<int64_t>(d));
    ir::Value *zeros =
        apply(Op(OpKind::ZerosLike), {apply(Op(OpKind::Arange, indices), {carrier}, loc).value}, loc).value;
    if (!others.axes.empty()) zeros = apply(Op(OpKind::ExpandDims, others), {zeros}, loc).value;
    return apply(Op(dtype == DType::Bool ? OpKind::Or : OpKind::Add), {value.value, zeros}, loc);
  };
  auto withSizes = [&](TypedValue value, const std::vector<std::pair<size_t, std::string>> &symbols) {
    for (const auto &[position, symbol] : symbols)
      value = withSize(value, position, dimensionCarrier(symbol, loc));
    return value;
  };

  // 0, 1, ..., size - 1 in `dtype`, for a size known now (`what`, not negative) or a symbolic dimension.
  auto range = [&](const Expr &size, DType dtype, const std::string &what) {
    OpAttrs attrs;
    attrs.dtype = dtype;
    if (std::optional<std::string> symbol = dimensionName(size, scope)) {
      attrs.scalars = {ir::Number::ofInt(0), ir::Number::ofInt(0), ir::Number::ofInt(1)};
      return apply(Op(OpKind::Arange, attrs), {dimensionCarrier(*symbol, size.loc)}, loc).value;
    }
    int64_t count = staticInt(size, scope, what.c_str());
    if (count < 0) fail(size.loc, name + "(): " + what + " cannot be negative");
    attrs.scalars = {ir::Number::ofInt(0), ir::Number::ofInt(count), ir::Number::ofInt(1)};
    attrs.shape = {count};
    return apply(Op(OpKind::Arange, attrs), {}, loc).value;
  };

  if (auto dtype = ir::parseDType(name)) {
    Arguments args(name, {{"x"}, 1}, call, *this);
    TypedValue x = tensor(args.at(0));
    if (x.value->type().dtype == *dtype) return TypedValue{x.value, false};
    OpAttrs attrs;
    attrs.dtype = *dtype;
    return apply(Op(OpKind::Cast, attrs), {materialize(x, loc)}, loc);
  }
  if (name == "var" || name == "std") {
    // NumPy's: the mean of the squared deviations from the mean over `axis`, times n / (n - ddof) for the n
    // elements each result reduces; std is its square root. Integers and bools are computed in f64.
    Arguments args(name, functionSignature(name), call, *this);
    ir::Value *x = strong(args.at(0));
    if (!ir::isFloat(x->type().dtype)) x = convert({x, false}, DType::F64, loc);
    OpAttrs attrs = reductionAttrs(args, x->type().rank(), false), centered = attrs;
    centered.keepdims = true;
    TypedValue deviation =
        applyElementwise(OpKind::Sub, {{x, false}, apply(Op(OpKind::Mean, centered), {x}, loc)}, loc);
    TypedValue result = apply(Op(OpKind::Mean, attrs),
                              {applyElementwise(OpKind::Mul, {deviation, deviation}, loc).value}, loc);
    if (const Expr *ddofArg = args.get("ddof"); ddofArg && staticInt(*ddofArg, scope, "ddof") != 0) {
      auto weak = [&](double value) {
        return TypedValue{graph_->addConstant(ir::TensorData::scalar(DType::F64, value)), true};
      };
      TypedValue count = weak(1); // the elements each result reduces: static, or counted at run time
      for (int64_t axis : attrs.axes) {
        const ir::Dim &size = x->type().shape[static_cast<size_t>(axis)];
        if (size.isStatic()) count = weak(count.value->constant().get(0) * static_cast<double>(size.size()));
      }
      bool symbolic = std::any_of(attrs.axes.begin(), attrs.axes.end(), [&](int64_t axis) {
        return !x->type().shape[static_cast<size_t>(axis)].isStatic();
      });
      if (symbolic) count = apply(Op(OpKind::Sum, attrs), {apply(Op(OpKind::OnesLike), {x}, loc).value}, loc);
      TypedValue ddof = weak(static_cast<double>(staticInt(*ddofArg, scope, "ddof")));
      TypedValue scale =
          applyElementwise(OpKind::Div, {count, applyElementwise(OpKind::Sub, {count, ddof}, loc)}, loc);
      result = applyElementwise(OpKind::Mul, {result, scale}, loc);
    }
    return name == "std" ? applyElementwise(OpKind::Sqrt, {result}, loc) : result;
  }
  if (name == "take" || name == "take_along_axis") {
    // NumPy's take: x[:, ..., indices] on `axis`; take_along_axis: out[p] = x[p with p[axis] = indices[p]].
    bool along = name == "take_along_axis";
    Arguments args(name, functionSignature(name), call, *this);
    ir::Value *x = strong(args.at(0)), *index = indexArray(args.at(1), scope);
    if (along && index->type().rank() != x->type().rank())
      fail(args.at(1).loc, "take_along_axis(): the indices must have the array's rank, " +
                               std::to_string(x->type().rank()) + ", not " +
                               std::to_string(index->type().rank()) + " (add axes with None or expand_dims)");
    if (x->type().isScalar()) fail(args.at(0).loc, name + "() needs an array with at least one axis");
    const Expr *axisArg = args.get("axis");
    OpAttrs attrs;
    attrs.axes = {axisArg ? normalizeAxis(staticInt(*axisArg, scope, "an axis"), x->type().rank(), *axisArg)
                          : 0};
    attrs.keepdims = along;
    auto axis = static_cast<size_t>(attrs.axes[0]);
    checkIndexValues(index, x->type().shape[axis], axis, loc);
    return apply(Op(OpKind::Gather, attrs), {x, index}, loc);
  }
  if (name ==
      "one_hot") { // a new last axis of `classes`, 1 at each index and 0 elsewhere (all 0 out of range)
    Arguments args(name, functionSignature(name), call, *this);
    ir::Value *index = indexArray(args.at(0), scope);
    OpAttrs last, cast;
    last.axes = {static_cast<int64_t>(index->type().rank())};
    cast.dtype = dtypeArgument(args.get("dtype"), DType::F32);
    ir::Value *classes = range(args.at(1), index->type().dtype, "the number of classes");
    ir::Value *equal =
        apply(Op(OpKind::Eq), {apply(Op(OpKind::ExpandDims, last), {index}, loc).value, classes}, loc).value;
    return apply(Op(OpKind::Cast, cast), {equal}, loc);
  }
  if (name == "inc_subtensor" || name == "set_subtensor")
    return updateIndex(call, scope, name == "inc_subtensor");
  if (name == "conv1d" || name == "conv2d" || name == "conv_transpose2d") {
    // PyTorch's: x [N, C, *S], w [O, C / groups, *K] (conv_transpose2d: x [N, O, *S], w [O, C / groups, *K],
    // the gradient of conv2d with respect to its input); every window argument one integer for every spatial
    // axis or one per axis.
    bool transposed = name == "conv_transpose2d";
    size_t spatial = name == "conv1d" ? 1 : 2;
    Arguments args(name, functionSignature(name), call, *this);
    ir::Value *x = strong(args.at(0)), *w = strong(args.at(1));
    for (size_t i = 0; i < 2; ++i) {
      ir::Value *value = i == 0 ? x : w;
      std::string what = i == 0 ? "input" : "filters";
      if (value->type().rank() != spatial + 2)
        fail(args.at(i).loc, name + "(): the " + what + " must have " + std::to_string(spatial + 2) +
                                 " axes (" + (spatial == 1 ? "N, C, L" : "N, C, H, W") + "), got " +
                                 value->type().str());
      if (!ir::isFloat(value->type().dtype))
        fail(args.at(i).loc, name + "(): the " + what + " must be f32 or f64, got " + value->type().str());
    }
    if (x->type().dtype != w->type().dtype)
      fail(loc, name + "(): the input is " + ir::dtypeName(x->type().dtype) + " and the filters " +
                    ir::dtypeName(w->type().dtype) + "; convert one (f32(w))");
    auto perAxis = [&](const char *parameter, int64_t fallback, int64_t least) {
      const Expr *given = args.get(parameter);
      return given ? windowInts(*given, parameter, spatial, least) : std::vector<int64_t>(spatial, fallback);
    };
    ir::Window window;
    window.stride = perAxis("stride", 1, 1);
    window.dilation = perAxis("dilation", 1, 1);
    window.outputPadding = transposed ? perAxis("output_padding", 0, 0) : std::vector<int64_t>(spatial, 0);
    window.groups = args.get("groups") ? staticInt(*args.get("groups"), scope, "groups") : 1;
    if (window.groups < 1) fail(args.get("groups")->loc, name + "(): groups must be at least 1");
    const Expr *padding = args.get("padding");
    if (const auto *text = padding ? padding->as<StringExpr>() : nullptr; text && !transposed) {
      if (text->value != "same" && text->value != "valid")
        fail(padding->loc, name + "(): padding is an integer, one per axis, \"same\" or \"valid\", got \"" +
                               text->value + "\"");
      window.padBefore.assign(spatial, 0);
      window.padAfter.assign(spatial, 0);
      for (size_t a = 0; text->value == "same" && a < spatial; ++a) {
        if (window.stride[a] != 1)
          fail(padding->loc, name + "(): padding=\"same\" needs stride 1, as PyTorch's");
        const ir::Dim &kernel = w->type().shape[a + 2];
        int64_t total = window.dilation[a] * ((kernel.isStatic() ? kernel.size() : 1) - 1);
        window.padBefore[a] = total / 2; // the odd one after, as PyTorch pads
        window.padAfter[a] = total - total / 2;
      }
    } else {
      window.padBefore = window.padAfter = perAxis("padding", 0, 0);
    }
    for (size_t a = 0; transposed && a < spatial; ++a)
      if (window.outputPadding[a] >= std::max(window.stride[a], window.dilation[a]))
        fail(args.get("output_padding")->loc,
             name + "(): output_padding must be smaller than the stride or the dilation");
    OpAttrs attrs;
    attrs.window = std::move(window);
    return apply(Op(transposed ? OpKind::ConvTranspose : OpKind::Conv, attrs), {x, w}, loc);
  }
  if (name == "max_pool2d" || name == "avg_pool2d") {
    // PyTorch's defaults: stride the kernel, padding 0 (at most half the kernel), floor of the output size;
    // average pooling counts the padding (count_include_pad) and is a depthwise conv2d of a constant filter.
    Arguments args(name, functionSignature(name), call, *this);
    ir::Value *x = strong(args.at(0));
    const ir::TensorType &type = x->type();
    if (type.rank() != 4)
      fail(args.at(0).loc, name + "(): the input must have 4 axes (N, C, H, W), got " + type.str());
    ir::Window window;
    window.kernel = windowInts(args.at(1), "kernel", 2, 1);
    window.stride = args.get("stride") ? windowInts(*args.get("stride"), "stride", 2, 1) : window.kernel;
    window.padBefore = window.padAfter =
        args.get("padding") ? windowInts(*args.get("padding"), "padding", 2, 0) : std::vector<int64_t>(2, 0);
    window.dilation.assign(2, 1);
    window.outputPadding.assign(2, 0);
    if (name == "max_pool2d") {
      if (type.dtype == DType::Bool) fail(args.at(0).loc, name + "(): the input must be a number, got bool");
      OpAttrs attrs;
      attrs.window = std::move(window);
      return apply(Op(OpKind::MaxPool, attrs), {x}, loc);
    }
    if (!ir::isFloat(type.dtype))
      fail(args.at(0).loc, name + "(): the input must be f32 or f64, got " + type.str());
    if (!type.shape[1].isStatic())
      fail(args.at(0).loc, name + "(): the channel axis must have a static size, got " + type.str());
    for (size_t a = 0; a < 2; ++a)
      if (2 * window.padBefore[a] > window.kernel[a])
        fail(args.get("padding")->loc, name + "(): the padding (" + std::to_string(window.padBefore[a]) +
                                           ") must be at most half the kernel (" +
                                           std::to_string(window.kernel[a]) + ")");
    int64_t channels = type.shape[1].size();
    OpAttrs fill, conv;
    fill.dtype = type.dtype;
    fill.shape = {channels, 1, window.kernel[0], window.kernel[1]};
    fill.scalars = {ir::Number::ofFloat(1.0 / static_cast<double>(window.kernel[0] * window.kernel[1]))};
    window.kernel.clear();
    window.groups = channels;
    conv.window = std::move(window);
    return apply(Op(OpKind::Conv, conv), {x, apply(Op(OpKind::Full, fill), {}, loc).value}, loc);
  }
  if (name == "pad") {
    // NumPy's constant mode: `widths` one count for every side, a [before, after] pair for every axis, or a
    // pair per axis. The result is a fill of the padded shape with x stored into its middle (set_slice, whose
    // gradient slices x's part back out), on every place.
    Arguments args(name, functionSignature(name), call, *this);
    ir::Value *x = strong(args.at(0));
    const ir::TensorType &type = x->type();
    const Expr &widthsArg = args.at(1);
    auto count = [&](const Expr &expr) {
      int64_t width = staticInt(expr, scope, "a pad width");
      if (width < 0) fail(expr.loc, "pad(): widths cannot be negative, got " + std::to_string(width));
      return width;
    };
    std::vector<std::pair<int64_t, int64_t>> widths;
    const auto *list = widthsArg.as<ListExpr>();
    bool perAxis = list && !list->elements.empty() && list->elements[0]->as<ListExpr>();
    if (!list) {
      widths.assign(type.rank(), {count(widthsArg), count(widthsArg)});
    } else if (!perAxis && list->elements.size() == 2) {
      widths.assign(type.rank(), {count(*list->elements[0]), count(*list->elements[1])});
    } else if (perAxis && list->elements.size() == type.rank()) {
      for (const ExprPtr &pair : list->elements) {
        const auto *sides = pair->as<ListExpr>();
        if (!sides || sides->elements.size() != 2) fail(pair->loc, "pad(): expected [before, after]");
        widths.emplace_back(count(*sides->elements[0]), count(*sides->elements[1]));
      }
    } else {
      fail(widthsArg.loc, "pad(): expected a width, [before, after], or " + std::to_string(type.rank()) +
                              " pairs (one per axis of x, of shape " + type.str() + ")");
    }
    ir::Number value =
        args.get("value") ? staticNumber(*args.get("value"), scope, "a fill value") : ir::Number::ofInt(0);
    if (!fitsDType(value, type.dtype))
      fail(args.get("value")->loc,
           "pad(): the fill value " + value.str() + " does not fit " + ir::dtypeName(type.dtype));
    OpAttrs fill, region;
    fill.dtype = type.dtype;
    fill.scalars = {value};
    region.slices.resize(type.rank());
    for (size_t d = 0; d < type.rank(); ++d) {
      const ir::Dim &size = type.shape[d];
      auto [before, after] = widths[d];
      if (!size.isStatic() && before + after > 0)
        fail(widthsArg.loc, "pad(): axis " + std::to_string(d) + " has the symbolic size " + size.str() +
                                "; only axes of static size can be padded");
      fill.shape.push_back(size.isStatic() ? before + size.size() + after : 1);
      region.slices[d] = {false, before,     before + (size.isStatic() ? size.size() : 0),
                          1,     before > 0, size.isStatic() && (before > 0 || after > 0)};
    }
    TypedValue base = apply(Op(OpKind::Full, fill), {}, loc);
    for (size_t d = 0; d < type.rank(); ++d) // the fill takes a symbolic size from x
      if (!type.shape[d].isStatic()) base = withSize(base, d, axisFirst(x, d, loc));
    return apply(Op(OpKind::SetSlice, region), {base.value, x}, loc);
  }
  if (name == "grad") {
    std::vector<TypedValue> results = gradients(call, scope);
    if (results.size() != 1)
      fail(loc, "grad(...) returns " + std::to_string(results.size()) +
                    " values here; unpack them with let, e.g. let ga, gb = grad(cost, a, b)");
    return results[0];
  }
  if (name == "scan") {
    std::vector<TypedValue> stacks = scan(call, scope);
    if (stacks.size() != 1)
      fail(loc,
           "scan(...) returns " + std::to_string(stacks.size()) +
               " stacks here, one per carry; bind them with let, e.g. let hs, cs = scan(step, [h0, c0], xs)");
    return stacks[0];
  }
  if (name == "load") {
    Arguments args(name, functionSignature(name), call, *this);
    const auto *path = args.at(0).as<StringExpr>();
    if (!path) fail(args.at(0).loc, "load() expects a file name in quotes, e.g. load(\"weights.npy\")");
    // Relative paths are relative to the file that names them.
    std::string file = path->value;
    if (!file.empty() && file[0] != '/' && path->loc.file) file = folderOf(*path->loc.file) + "/" + file;
    try {
      return TypedValue{graph_->addConstant(io::loadNpy(file), path->value), false};
    } catch (ir::UserError &error) {
      error.loc = path->loc;
      throw;
    }
  }
  std::optional<OpKind> op = builtinOp(name);
  if (!op) return std::nullopt;
  OpKind kind = *op;
  Arguments args(name, signatureOf(kind), call, *this);
  const ir::OpInfo &info = ir::opInfo(kind);
  if (info.fusion == ir::FusionKind::Elementwise && kind != OpKind::Where) {
    std::vector<TypedValue> operands;
    for (size_t i = 0; i < signatureOf(kind).params.size(); ++i)
      operands.push_back(tensor(args.at(i)));
    return applyElementwise(kind, std::move(operands), loc);
  }
  if (info.fusion == ir::FusionKind::Reduce) {
    ir::Value *x = strong(args.at(0));
    OpAttrs attrs = reductionAttrs(args, x->type().rank(), ir::isPositionalReduction(kind));
    if (info.operands == ir::Operands::Bools) x = convert({x, false}, DType::Bool, loc);
    return apply(Op(kind, attrs), {x}, loc);
  }
  switch (kind) {
  case OpKind::Where: {
    ir::Value *condition = convert({strong(args.at(0)), false}, DType::Bool, loc);
    TypedValue a = tensor(args.at(1)), b = tensor(args.at(2));
    DType dtype = resultDType({a, b});
    // Like any elementwise op of literals alone, where(c, 1.5, 2.5) is weak: f32 alone, the other dtype with
    // it.
    TypedValue result = apply(Op(kind), {condition, convert(a, dtype, loc), convert(b, dtype, loc)}, loc);
    result.weak = a.weak && b.weak;
    return result;
  }
  case OpKind::Matmul: {
    TypedValue a = tensor(args.at(0)), b = tensor(args.at(1));
    if (a.weak || b.weak) fail(loc, "matmul: operands must have at least one dimension, not be literals");
    DType dtype = resultDType({a, b});
    return apply(Op(kind), {convert(a, dtype, loc), convert(b, dtype, loc)}, loc);
  }
  case OpKind::Transpose: {
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
    return apply(Op(kind, attrs), {x}, loc);
  }
  case OpKind::ExpandDims: { // NumPy's: `axis` (one or a list) counted in the result
    ir::Value *x = strong(args.at(0));
    const Expr &axis = args.at(1);
    std::vector<int64_t> axes = staticInts(axis, scope, "an axis");
    OpAttrs attrs;
    for (int64_t a : axes) {
      int64_t normalized = normalizeAxis(a, x->type().rank() + axes.size(), axis);
      if (std::count(attrs.axes.begin(), attrs.axes.end(), normalized))
        fail(axis.loc, "axis " + std::to_string(a) + " is repeated");
      attrs.axes.push_back(normalized);
    }
    std::sort(attrs.axes.begin(), attrs.axes.end());
    return apply(Op(kind, attrs), {x}, loc);
  }
  case OpKind::Reshape:
  case OpKind::BroadcastTo: {
    ir::Value *x = strong(args.at(0));
    if (const auto *list = args.at(1).as<ListExpr>())
      for (const ExprPtr &element : list->elements)
        if (dimensionName(*element, scope))
          fail(element->loc,
               name + "() needs sizes known when the script is compiled; " +
                   (kind == OpKind::Reshape ? "-1 stands for one size it infers: reshape(x, [-1, 3])"
                                            : "adding zeros broadcasts: x + zeros([n, 3])"));
    OpAttrs attrs;
    attrs.shape = staticInts(args.at(1), scope, "a shape");
    return apply(Op(kind, attrs), {x}, loc);
  }
  case OpKind::Concat:
  case OpKind::Stack: {
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
    size_t rank = inputs[0]->type().rank() + (kind == OpKind::Stack ? 1 : 0);
    OpAttrs attrs;
    int64_t axis = args.get("axis") ? staticInt(*args.get("axis"), scope, "an axis") : 0;
    attrs.axes = {normalizeAxis(axis, rank, args.get("axis") ? *args.get("axis") : args.at(0))};
    return apply(Op(kind, attrs), inputs, loc);
  }
  case OpKind::Zeros:
  case OpKind::Ones: {
    OpAttrs attrs;
    std::vector<std::pair<size_t, std::string>> symbols = symbolicSizes(args.at(0));
    attrs.shape = symbols.empty() ? shapeArgument(args.at(0)) : staticSizes(args.at(0));
    attrs.dtype = dtypeArgument(args.get("dtype"), DType::F32);
    return withSizes(apply(Op(kind, attrs), {}, loc), symbols);
  }
  case OpKind::Full: {
    OpAttrs attrs;
    std::vector<std::pair<size_t, std::string>> symbols = symbolicSizes(args.at(0));
    attrs.shape = symbols.empty() ? shapeArgument(args.at(0)) : staticSizes(args.at(0));
    ir::Number value = staticNumber(args.at(1), scope, "a fill value");
    DType fallback = args.at(1).as<BoolExpr>() ? DType::Bool : value.isInteger ? DType::I64 : DType::F32;
    attrs.dtype = dtypeArgument(args.get("dtype"), fallback);
    if (!fitsDType(value, attrs.dtype))
      fail(args.at(1).loc,
           "full(): the fill value " + value.str() + " does not fit " + ir::dtypeName(attrs.dtype));
    attrs.scalars = {value};
    return withSizes(apply(Op(kind, attrs), {}, loc), symbols);
  }
  case OpKind::Eye: {
    const Expr *columns = args.get("m") ? args.get("m") : &args.at(0);
    if (dimensionName(args.at(0), scope) || dimensionName(*columns, scope)) {
      // A symbolic size: 1 where the row's index equals the column's.
      OpAttrs column, cast;
      column.axes = {1};
      cast.dtype = dtypeArgument(args.get("dtype"), DType::F32);
      ir::Value *rows =
          apply(Op(OpKind::ExpandDims, column), {range(args.at(0), DType::I64, "sizes")}, loc).value;
      return apply(Op(OpKind::Cast, cast),
                   {apply(Op(OpKind::Eq), {rows, range(*columns, DType::I64, "sizes")}, loc).value}, loc);
    }
    int64_t n = staticInt(args.at(0), scope, "a size");
    int64_t m = args.get("m") ? staticInt(*args.get("m"), scope, "a size") : n;
    if (n < 0 || m < 0) fail(loc, "eye(): sizes cannot be negative");
    OpAttrs attrs;
    attrs.shape = {n, m};
    attrs.dtype = dtypeArgument(args.get("dtype"), DType::F32);
    return apply(Op(kind, attrs), {}, loc);
  }
  case OpKind::Arange: {
    for (const char *bound : {"stop", "step"})
      if (const Expr *given = args.get(bound); given && dimensionName(*given, scope))
        fail(given->loc, "arange() takes a symbolic dimension alone: arange(n), then add or scale it");
    if (std::optional<std::string> length = dimensionName(args.at(0), scope)) { // arange(n): 0, 1, ..., n - 1
      if (args.get("stop") || args.get("step"))
        fail(args.at(0).loc, "arange() takes a symbolic dimension alone: arange(n), then add or scale it");
      return TypedValue{range(args.at(0), dtypeArgument(args.get("dtype"), DType::I64), "a length"), false};
    }
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
    return apply(Op(kind, attrs), {}, loc);
  }
  case OpKind::Rand:
  case OpKind::Randn: {
    OpAttrs attrs;
    std::vector<std::pair<size_t, std::string>> symbols = symbolicSizes(args.at(0));
    attrs.shape = symbols.empty() ? shapeArgument(args.at(0)) : staticSizes(args.at(0));
    attrs.dtype = dtypeArgument(args.get("dtype"), DType::F32);
    if (!ir::takes(kind, attrs.dtype))
      fail(args.get("dtype")->loc, name + "() makes floats: dtype must be f32 or f64");
    if (const Expr *seed = args.get("seed")) {
      int64_t value = staticInt(*seed, scope, "a seed");
      if (value < 0) fail(seed->loc, "a seed cannot be negative");
      attrs.seed = static_cast<uint64_t>(value);
    } else {
      attrs.seed = takeSeed();
    }
    if (symbols.empty()) return apply(Op(kind, attrs), {}, loc);
    // A symbolic shape: the numbers of that shape, given by zeros of it (the counter is the element's index).
    OpAttrs zeros;
    zeros.shape = attrs.shape;
    zeros.dtype = DType::Bool;
    ir::Value *shape = withSizes(apply(Op(OpKind::Zeros, zeros), {}, loc), symbols).value;
    return apply(Op(kind, attrs), {shape}, loc);
  }
  case OpKind::ZerosLike:
  case OpKind::OnesLike: {
    // A param's initial value may take the static type of a value it cannot read (another param, an
    // input): only the type matters.
    const auto *name = args.at(0).as<NameExpr>();
    const Binding *binding = name ? scope.find(name->name) : nullptr;
    if (binding && binding->kind == Binding::Kind::Tensor &&
        !visible(binding->tensor.value, binding->graph) &&
        binding->tensor.value->type().staticNumElements()) {
      const ir::TensorType &type = binding->tensor.value->type();
      OpAttrs attrs;
      for (const ir::Dim &dim : type.shape)
        attrs.shape.push_back(dim.size());
      attrs.dtype = type.dtype;
      return apply(Op(kind == OpKind::ZerosLike ? OpKind::Zeros : OpKind::Ones, attrs), {}, loc);
    }
    return apply(Op(kind), {strong(args.at(0))}, loc);
  }
  case OpKind::Sort:
  case OpKind::Argsort:
  case OpKind::Cumsum: {
    ir::Value *x = strong(args.at(0));
    OpAttrs attrs;
    if (const Expr *axis = args.get("axis"))
      attrs.axes = {normalizeAxis(staticInt(*axis, scope, "an axis"), x->type().rank(), *axis)};
    else if (kind != OpKind::Cumsum) {
      if (x->type().isScalar()) fail(loc, name + "(): cannot sort a zero-dimensional array");
      attrs.axes = {static_cast<int64_t>(x->type().rank()) - 1};
    }
    return apply(Op(kind, attrs), {x}, loc);
  }
  default:
    TG_ASSERT(false) << name << "(): a builtin in Ops.def that the front end does not build";
    return std::nullopt;
  }
}

} // namespace tg::frontend::detail

namespace tg::frontend {

std::optional<std::string> builtinHelp(const std::string &topic) {
  if (std::optional<ir::OpKind> kind = detail::builtinOp(topic)) {
    auto doc = detail::kOpDocs.find(topic);
    return detail::signatureText(topic, detail::signatureOf(*kind)) + "\n  " +
           (doc != detail::kOpDocs.end() ? doc->second : "") + "\n";
  }
  if (auto function = detail::kFunctions.find(topic); function != detail::kFunctions.end())
    return detail::signatureText(topic, function->second.signature) + "\n  " + function->second.doc + "\n";
  if (std::optional<ir::DType> dtype = ir::parseDType(topic))
    return topic + "(x)\n  x converted to " + topic + " (NumPy's x.astype(" + ir::dtypeInfo(*dtype).numpy +
           "))\n";
  size_t dot = topic.find('.');
  if (dot != std::string::npos) return detail::stdlibHelp(topic.substr(0, dot), topic.substr(dot + 1));
  for (const auto &[module, text] : embeddedStdlib())
    if (std::optional<std::string> help = detail::stdlibHelp(module, topic)) return help;
  return std::nullopt;
}

std::vector<std::string> helpTopics() {
  std::vector<std::string> topics = detail::builtinNames();
  static const std::regex def(R"((^|\n)def\s+(\w+))");
  for (const auto &[module, text] : embeddedStdlib())
    for (auto it = std::sregex_iterator(text.begin(), text.end(), def); it != std::sregex_iterator(); ++it)
      topics.push_back(module + "." + (*it)[2].str());
  return topics;
}

} // namespace tg::frontend
