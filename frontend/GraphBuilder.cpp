#include "autodiff/Gradient.h"
#include "frontend/GraphBuilderInternal.h"
#include "ir/Assert.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

namespace tg::frontend {

using namespace detail;
using ir::DType;
using ir::Op;
using ir::OpAttrs;
using ir::OpKind;

namespace detail {

namespace {

/// The op an operator writes (Ops.def's symbol column), by its spelling and operand count: `-x` is neg,
/// `a - b` sub.
OpKind operatorOp(const std::string &symbol, int arity) {
  static const std::map<std::pair<std::string, int>, OpKind> operators = [] {
    std::map<std::pair<std::string, int>, OpKind> table;
#define OP(Enum, name, arity, ...) OPERATOR(Enum, arity)
#define OPERATOR(Enum, arity)                                                                                \
  if (*ir::opInfo(OpKind::Enum).symbol) table[{ir::opInfo(OpKind::Enum).symbol, arity}] = OpKind::Enum;
#include "ir/Ops.def"
#undef OPERATOR
    return table;
  }();
  auto found = operators.find({symbol, arity});
  TG_ASSERT(found != operators.end()) << "no op for the operator " << symbol;
  return found->second;
}

} // namespace

const Binding *Scope::findLocal(const std::string &name) const {
  auto found = names_.find(name);
  return found == names_.end() ? nullptr : &found->second;
}

const Binding *Scope::find(const std::string &name) const {
  for (const Scope *scope = this; scope; scope = scope->parent_)
    if (const Binding *binding = scope->findLocal(name)) return binding;
  return nullptr;
}

std::vector<std::string> Scope::names(std::optional<Binding::Kind> kind) const {
  std::vector<std::string> result;
  for (const Scope *scope = this; scope; scope = scope->parent_)
    for (const auto &[name, binding] : scope->names_)
      if (!kind || binding.kind == *kind) result.push_back(name);
  std::sort(result.begin(), result.end()); // suggestions must not depend on the hash table's order
  return result;
}

void GraphBuilder::fail(const SourceLoc &loc, const std::string &message) {
  throw ir::UserError(message, loc);
}

// ---- Statements
// ----------------------------------------------------------------------------------------------

std::unique_ptr<ir::Program> GraphBuilder::build(const Module &script) {
  program_ = std::make_unique<ir::Program>();
  graph_ = &program_->graph;
  modules_.push_back(std::make_unique<ModuleScope>());
  ModuleScope &top = *modules_.back();
  top.name = *script.file;
  top.ast = &script;
  top.folder = folderOf(*script.file);
  for (const StmtPtr &stmt : script.statements)
    statement(*stmt, top, /*isScript=*/true);
  if (diags_.hasErrors()) return nullptr;
  for (const auto &update : program_->updates)
    program_->graph.addOutput(update.value);
  // Declarations may interleave; the program's graph takes its inputs first, then its params.
  std::vector<ir::Value *> order;
  for (const auto &input : program_->inputs)
    order.push_back(input.value);
  for (const auto &param : program_->params)
    order.push_back(param.value);
  program_->graph.setInputOrder(std::move(order));
  return std::move(program_);
}

void GraphBuilder::declare(Scope &scope, const Identifier &id, Binding binding) {
  const Binding *previous = scope.findLocal(id.name);
  if (previous && !(options_.rebinding && &scope == &modules_.front()->scope)) {
    diags_.error(id.loc, "'" + id.name + "' is already defined");
    if (previous->loc.known()) diags_.note(previous->loc, "previous definition of '" + id.name + "' is here");
    return;
  }
  binding.loc = id.loc;
  scope.bind(id.name, std::move(binding));
}

ir::TensorType GraphBuilder::declaredType(const TypeExpr &type, bool isParam) {
  auto dtype = ir::parseDType(type.dtype);
  if (!dtype) fail(type.loc, "unknown dtype '" + type.dtype + "'; expected one of " + ir::dtypeNames());
  ir::Shape shape;
  for (const DimExpr &dim : type.dims) {
    auto size = dim.isSymbol ? options_.sizes.find(dim.symbol) : options_.sizes.end();
    if (dim.isSymbol && isParam && size == options_.sizes.end())
      fail(dim.loc, "a param needs a static shape, but dimension '" + dim.symbol + "' is symbolic");
    if (!dim.isSymbol && dim.size < 0) fail(dim.loc, "dimension sizes cannot be negative");
    shape.push_back(size != options_.sizes.end() ? ir::Dim::of(size->second)
                    : dim.isSymbol               ? ir::Dim::named(dim.symbol)
                                                 : ir::Dim::of(dim.size));
  }
  return {*dtype, shape, ir::Place::Host};
}

ir::Value *GraphBuilder::fitToType(TypedValue value, const ir::TensorType &type, const SourceLoc &loc,
                                   const std::string &what) {
  const ir::TensorType &actual = value.value->type();
  if (!value.weak && actual.dtype != type.dtype)
    fail(loc, what + " has dtype " + ir::dtypeName(actual.dtype) + ", but " + type.str() +
                  " was declared; convert it with " + ir::dtypeName(type.dtype) + "(...)");
  ir::Value *converted = convert(value, type.dtype, loc);
  if (converted->type().shape == type.shape) return converted;
  auto broadcast = ir::broadcastShapes(converted->type().shape, type.shape);
  if (!broadcast || *broadcast != type.shape)
    fail(loc, what + " has type " + actual.str() + ", which does not fit the declared " + type.str());
  std::vector<int64_t> sizes;
  for (const ir::Dim &dim : type.shape)
    sizes.push_back(dim.size());
  OpAttrs attrs;
  attrs.shape = sizes;
  return apply(Op(OpKind::BroadcastTo, attrs), {converted}, loc).value;
}

void GraphBuilder::statement(const Stmt &stmt, ModuleScope &module, bool isScript) {
  auto scriptOnly = [&](const char *keyword) {
    if (!isScript)
      fail(stmt.loc,
           std::string("'") + keyword + "' is not allowed in an imported module (only 'def' and 'import')");
  };
  try {
    switch (stmt.kind) {
    case Stmt::Kind::Import:
      importModule(*stmt.as<ImportStmt>(), module);
      break;
    case Stmt::Kind::Def: {
      const auto &def = *stmt.as<DefStmt>();
      Binding binding;
      binding.kind = Binding::Kind::Function;
      binding.function = &def;
      binding.definingModule = &module;
      for (size_t i = 0; i < def.params.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (def.params[i].name == def.params[j].name)
            fail(def.params[i].loc, "duplicate parameter '" + def.params[i].name + "'");
      declare(module.scope, def.name, binding);
      break;
    }
    case Stmt::Kind::Input: {
      scriptOnly("input");
      const auto &input = *stmt.as<InputStmt>();
      ir::TensorType type = declaredType(input.type, /*isParam=*/false);
      ir::Value *value = program_->graph.addInput(type, input.name.name);
      program_->inputs.push_back({input.name.name, value, input.name.loc});
      for (size_t axis = 0; axis < type.rank(); ++axis)
        if (!type.shape[axis].isStatic())
          dimensions_.try_emplace(type.shape[axis].symbol(), DimensionSource{value, axis});
      Binding binding;
      binding.kind = Binding::Kind::Tensor;
      binding.tensor = {value, false};
      binding.graph = &program_->graph;
      declare(module.scope, input.name, binding);
      break;
    }
    case Stmt::Kind::Param: {
      scriptOnly("param");
      const auto &param = *stmt.as<ParamStmt>();
      // The initial value is computed once, by its own graph, before the first step.
      ir::Value *initial = nullptr;
      ir::TensorType type;
      try {
        type = declaredType(param.type, /*isParam=*/true);
        graph_ = &program_->init;
        initial = fitToType(evaluateTensor(*param.init, module.scope, "a param's initial value"), type,
                            param.init->loc, "the initial value of '" + param.name.name + "'");
      } catch (...) {
        graph_ = &program_->graph;
        // Later uses of the name, and its update, would only repeat this error.
        if (!module.scope.findLocal(param.name.name)) module.scope.bind(param.name.name, Binding{});
        throw;
      }
      graph_ = &program_->graph;
      program_->init.addOutput(initial);
      ir::Value *value = program_->graph.addInput(type, param.name.name);
      program_->params.push_back({param.name.name, value, initial, param.name.loc});
      Binding binding;
      binding.kind = Binding::Kind::Tensor;
      binding.tensor = {value, false};
      binding.graph = &program_->graph;
      declare(module.scope, param.name, binding);
      break;
    }
    case Stmt::Kind::Let: {
      scriptOnly("let");
      const auto &let = *stmt.as<LetStmt>();
      try {
        bindLet(let, module.scope);
      } catch (...) {
        // Later uses of these names would only repeat this error.
        for (const Identifier &name : let.names)
          if (!module.scope.findLocal(name.name)) module.scope.bind(name.name, Binding{});
        throw;
      }
      break;
    }
    case Stmt::Kind::Output: {
      scriptOnly("output");
      const auto &output = *stmt.as<OutputStmt>();
      for (size_t i = 0; i < output.names.size(); ++i) {
        const Identifier &name = output.names[i];
        ir::Value *value =
            materialize(evaluateTensor(*output.values[i], module.scope, "an output"), name.loc);
        for (const auto &output : program_->outputs)
          if (output.name == name.name) fail(name.loc, "'" + name.name + "' is already an output");
        program_->graph.addOutput(value);
        program_->outputs.push_back({name.name, value});
      }
      break;
    }
    case Stmt::Kind::Update: {
      scriptOnly("update");
      const auto &update = *stmt.as<UpdateStmt>();
      auto param = std::find_if(program_->params.begin(), program_->params.end(),
                                [&](const ir::Program::Param &p) { return p.name == update.name.name; });
      if (param == program_->params.end()) {
        if (const Binding *binding = module.scope.findLocal(update.name.name);
            binding && binding->kind == Binding::Kind::Poisoned)
          throw AlreadyReported{}; // a param whose declaration failed
        std::vector<std::string> params;
        for (const ir::Program::Param &declared : program_->params)
          params.push_back(declared.name);
        fail(update.name.loc, "'" + update.name.name + "' is not a param; only params can be updated" +
                                  didYouMean(update.name.name, params));
      }
      size_t index = static_cast<size_t>(param - program_->params.begin());
      for (const auto &existing : program_->updates)
        if (existing.param == index) fail(update.name.loc, "'" + update.name.name + "' is updated twice");
      ir::Value *value =
          fitToType(evaluateTensor(*update.value, module.scope, "an update"), param->value->type(),
                    update.value->loc, "the update of '" + update.name.name + "'");
      program_->updates.push_back({index, value});
      break;
    }
    }
  } catch (const ir::UserError &error) {
    diags_.report(error);
  } catch (const AlreadyReported &) {
  }
}

void GraphBuilder::importModule(const ImportStmt &stmt, ModuleScope &module) {
  const std::string &name = stmt.module.name;
  if (std::find(importStack_.begin(), importStack_.end(), name) != importStack_.end()) {
    std::string cycle;
    for (const std::string &entry : importStack_)
      cycle += entry + " -> ";
    fail(stmt.module.loc, "import cycle: " + cycle + name);
  }
  for (const auto &loaded : modules_) {
    if (loaded->name == name) {
      Binding binding;
      binding.kind = Binding::Kind::Module;
      binding.module = loaded.get();
      declare(module.scope, stmt.module, binding);
      return;
    }
  }
  const Module *ast = loader_.loadModule(name, module.folder, stmt.module.loc);
  if (!ast) throw AlreadyReported{};
  modules_.push_back(std::make_unique<ModuleScope>());
  ModuleScope &imported = *modules_.back();
  imported.name = name;
  imported.ast = ast;
  imported.folder = folderOf(*ast->file);
  importStack_.push_back(name);
  unsigned errorsBefore = diags_.errorCount();
  for (const StmtPtr &inner : ast->statements)
    statement(*inner, imported, /*isScript=*/false);
  importStack_.pop_back();
  if (diags_.errorCount() != errorsBefore)
    diags_.note(stmt.module.loc, "in the module '" + name + "' imported here");
  Binding binding;
  binding.kind = Binding::Kind::Module;
  binding.module = &imported;
  declare(module.scope, stmt.module, binding);
}

void GraphBuilder::bindLet(const LetStmt &let, Scope &scope) {
  std::vector<TypedValue> values = evaluateValues(*let.value, scope);
  if (values.size() != let.names.size()) {
    size_t extra = std::min(values.size(), let.names.size() - 1);
    if (values.size() == 1)
      fail(let.names[extra].loc,
           "cannot unpack one value into " + std::to_string(let.names.size()) + " names");
    const auto *call = let.value->as<CallExpr>(); // grad, or a function of several results
    fail(values.size() < let.names.size() ? let.names[extra].loc : let.value->loc,
         calleeName(*call) + " returns " + std::to_string(values.size()) + " values, but " +
             std::to_string(let.names.size()) + (let.names.size() == 1 ? " name is" : " names are") +
             " given");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].value->name().empty() && values[i].value->owner())
      values[i].value->setName(let.names[i].name);
    Binding binding;
    binding.kind = Binding::Kind::Tensor;
    binding.tensor = values[i];
    binding.graph = graph_;
    declare(scope, let.names[i], binding);
  }
}

std::vector<TypedValue> GraphBuilder::evaluateValues(const Expr &expr, const Scope &scope) {
  if (const auto *call = expr.as<CallExpr>()) {
    if (const auto *callee = call->callee->as<NameExpr>();
        callee && callee->name == "grad" && !scope.find("grad"))
      return gradients(*call, scope);
    if (const Binding *function = calledFunction(*call, scope))
      return callFunctionValues(*function, *call, scope);
    if (const auto *callee = call->callee->as<NameExpr>(); callee && callee->name == "scan")
      return scan(*call, scope);
  }
  return {evaluateTensor(expr, scope, "a 'let'")};
}

std::vector<TypedValue> GraphBuilder::gradients(const CallExpr &call, const Scope &scope) {
  autodiff::Disconnected disconnected = autodiff::Disconnected::Raise;
  for (const KeywordArg &keyword : call.keywords) {
    if (keyword.name != "disconnected")
      fail(keyword.loc, "grad() has no argument '" + keyword.name +
                            "'; it takes disconnected=\"raise\" or "
                            "disconnected=\"zero\"");
    const auto *value = keyword.value->as<StringExpr>();
    if (!value || (value->value != "raise" && value->value != "zero"))
      fail(keyword.value->loc, "grad(): disconnected= is \"raise\" (the default: an error when the cost does "
                               "not depend on a value) or \"zero\" (its gradient is zeros)");
    disconnected = value->value == "zero" ? autodiff::Disconnected::Zero : autodiff::Disconnected::Raise;
  }
  if (call.args.size() < 2)
    fail(call.loc, "grad() needs a cost and at least one value to differentiate with respect to, e.g. "
                   "grad(loss, w, b)");
  ir::Value *cost = materialize(evaluateTensor(*call.args[0], scope, "a cost"), call.args[0]->loc);
  std::vector<ir::Value *> wrt;
  for (size_t i = 1; i < call.args.size(); ++i) {
    TypedValue value = evaluateTensor(*call.args[i], scope, "grad");
    if (value.value->isConstant()) // a weak value computed from inputs (where(c, 1.5, 2.5)) is no constant
      fail(call.args[i]->loc, "grad: cannot differentiate with respect to a constant");
    wrt.push_back(value.value);
  }
  std::vector<TypedValue> results;
  for (ir::Value *gradient : autodiff::grad(*graph_, cost, wrt, call.loc, disconnected))
    results.push_back({gradient, false});
  return results;
}

// ---- Typing helpers
// ------------------------------------------------------------------------------------------

bool GraphBuilder::allWeak(const std::vector<TypedValue> &operands) const {
  return std::all_of(operands.begin(), operands.end(), [](const TypedValue &v) { return v.weak; });
}

DType GraphBuilder::resultDType(const std::vector<TypedValue> &operands) const {
  std::optional<DType> strong;
  bool weakFloat = false, weakInt = false;
  for (const TypedValue &operand : operands) {
    DType dtype = operand.value->type().dtype;
    if (!operand.weak)
      strong = strong ? ir::promote(*strong, dtype) : dtype;
    else if (ir::isFloat(dtype))
      weakFloat = true;
    else
      weakInt = true;
  }
  if (!strong) // weak with weak: computed in full precision, and still weak
    return weakFloat ? DType::F64 : DType::I64;
  // A weak literal yields to the strong operands' kind; it can only raise bool to an integer, or an integer
  // or bool to NumPy's default float.
  if (weakFloat && !ir::isFloat(*strong)) return DType::F64;
  if (weakInt && *strong == DType::Bool) return DType::I64;
  return *strong;
}

bool fitsDType(const ir::Number &number, DType dtype) {
  if (!number.isInteger) return true;
  if (dtype == DType::I32)
    return number.intValue >= std::numeric_limits<int32_t>::min() &&
           number.intValue <= std::numeric_limits<int32_t>::max();
  return true;
}

ir::Value *GraphBuilder::convert(TypedValue value, DType dtype, const SourceLoc &loc) {
  ir::Value *v = value.value;
  if (v->type().dtype == dtype) return v;
  // A weak integer literal takes the other operand's dtype, and must fit it (NumPy 2 raises an error too).
  if (value.weak && v->isConstant() && v->type().dtype == DType::I64 &&
      !fitsDType(ir::Number::ofInt(v->constant().data<int64_t>()[0]), dtype))
    fail(literalLocs_.count(v) ? literalLocs_.at(v) : loc,
         "the integer " + std::to_string(v->constant().data<int64_t>()[0]) + " does not fit " +
             ir::dtypeName(dtype) + ", the dtype it takes from the other operand; convert that operand " +
             "first, e.g. with i64(...)");
  if (v->isConstant()) {
    const ir::TensorData &data = v->constant();
    ir::TensorData converted(dtype, data.shape);
    for (int64_t i = 0; i < data.numElements(); ++i)
      converted.set(i, data.get(i));
    return graph_->addConstant(std::move(converted));
  }
  OpAttrs attrs;
  attrs.dtype = dtype;
  return apply(Op(OpKind::Cast, attrs), {v}, loc).value;
}

ir::Value *GraphBuilder::materialize(TypedValue value, const SourceLoc &loc) {
  if (!value.weak) return value.value;
  return convert(value, ir::isFloat(value.value->type().dtype) ? DType::F32 : DType::I64, loc);
}

TypedValue GraphBuilder::apply(Op op, std::vector<ir::Value *> inputs, const SourceLoc &loc) {
  ir::Node *node = graph_->addNode(std::move(op), std::move(inputs), loc);
  return {node->output(), false};
}

TypedValue GraphBuilder::applyElementwise(OpKind kind, std::vector<TypedValue> operands,
                                          const SourceLoc &loc) {
  bool weak = allWeak(operands);
  DType dtype = resultDType(operands);
  ir::Operands takes = ir::opInfo(kind).operands;
  if (takes == ir::Operands::Bools) {
    dtype = DType::Bool;
    weak = false;
  } else if (takes == ir::Operands::Floats && !ir::isFloat(dtype)) {
    // NumPy computes these in its default float for integer and bool operands.
    dtype = DType::F64;
  } else if (dtype == DType::Bool) {
    // NumPy's boolean arithmetic: + and maximum are `or`, * and minimum are `and`, abs is the identity;
    // comparisons order false before true; the rest (NumPy rejects `-` too) needs a conversion first.
    switch (kind) {
    case OpKind::Add:
    case OpKind::Maximum:
      kind = OpKind::Or;
      break;
    case OpKind::Mul:
    case OpKind::Minimum:
      kind = OpKind::And;
      break;
    case OpKind::Abs:
      return {operands[0].value, false};
    default:
      if (!ir::takes(kind, DType::Bool))
        fail(loc, std::string("'") + ir::opName(kind) +
                      "' is not defined for bool operands; convert them first, e.g. with i64(x)");
    }
  }
  std::vector<ir::Value *> inputs;
  for (const TypedValue &operand : operands)
    inputs.push_back(convert(operand, dtype, loc));
  TypedValue result = apply(Op(kind), std::move(inputs), loc);
  result.weak = weak && !ir::isComparison(kind);
  return result;
}

// ---- Expressions
// ---------------------------------------------------------------------------------------------

TypedValue GraphBuilder::evaluateTensor(const Expr &expr, const Scope &scope, const char *what) {
  return evaluate(expr, scope);
}

TypedValue GraphBuilder::listConstant(const ListExpr &list) {
  std::vector<int64_t> shape;
  std::optional<size_t> leafDepth; // the depth of the first number: every number must be as deep
  std::vector<const Expr *> leaves;
  enum { kBool, kInteger, kFloat } kind = kBool;
  std::function<void(const Expr &, size_t)> walk = [&](const Expr &expr, size_t depth) {
    if (const auto *nested = expr.as<ListExpr>()) {
      auto size = static_cast<int64_t>(nested->elements.size());
      if (depth == shape.size() && (!leafDepth || depth < *leafDepth))
        shape.push_back(size);
      else if (depth >= shape.size() || shape[depth] != size)
        fail(expr.loc, "this list has " + std::to_string(size) + (size == 1 ? " element" : " elements") +
                           " where the lists beside it have " +
                           (depth < shape.size() ? std::to_string(shape[depth]) : std::string("none")) +
                           ": a tensor's rows must all have the same length");
      for (const ExprPtr &element : nested->elements)
        walk(*element, depth + 1);
      return;
    }
    const Expr *leaf = &expr;
    if (const auto *unary = expr.as<UnaryExpr>(); unary && unary->op != "not") leaf = unary->operand.get();
    if (!leaf->as<NumberExpr>() && !(leaf == &expr && expr.as<BoolExpr>()))
      fail(expr.loc, "a list holds numbers and bools only, where a tensor is expected; for a list of arrays "
                     "use stack([a, b]) or concat([a, b])");
    if (leafDepth ? depth != *leafDepth : depth != shape.size())
      fail(expr.loc, "a number where the lists beside it have lists (or the other way round)");
    leafDepth = depth;
    if (const auto *number = leaf->as<NumberExpr>())
      kind = std::max(kind, number->isFloat ? kFloat : kInteger);
    leaves.push_back(&expr);
  };
  walk(list, 0);
  ir::TensorData data(kind == kFloat ? DType::F32 : kind == kInteger ? DType::I64 : DType::Bool, shape);
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Expr *leaf = leaves[i];
    bool negated = leaf->as<UnaryExpr>() && leaf->as<UnaryExpr>()->op == "-";
    if (negated) leaf = leaf->as<UnaryExpr>()->operand.get();
    auto at = static_cast<int64_t>(i);
    if (const auto *boolean = leaf->as<BoolExpr>()) {
      data.set(at, boolean->value);
    } else if (const auto *number = leaf->as<NumberExpr>(); kind == kInteger) {
      data.data<int64_t>()[i] = negated ? -number->intValue : number->intValue;
    } else {
      data.set(at, negated ? -number->value : number->value);
    }
  }
  return {graph_->addConstant(std::move(data)), false};
}

TypedValue GraphBuilder::evaluate(const Expr &expr, const Scope &scope) {
  switch (expr.kind) {
  case Expr::Kind::Number: {
    const auto &number = *expr.as<NumberExpr>();
    // A weak float keeps its full double value until it meets the dtype it yields to.
    ir::TensorData data =
        number.isFloat ? ir::TensorData::scalar(DType::F64, number.value) : ir::TensorData(DType::I64, {});
    if (!number.isFloat) data.data<int64_t>()[0] = number.intValue;
    ir::Value *literal = graph_->addConstant(std::move(data));
    literalLocs_[literal] = expr.loc;
    return {literal, true};
  }
  case Expr::Kind::Bool:
    return {graph_->addConstant(ir::TensorData::scalar(DType::Bool, expr.as<BoolExpr>()->value)), false};
  case Expr::Kind::String:
    fail(expr.loc, "a string is not a tensor; strings are only for load(\"FILE.npy\")");
  case Expr::Kind::Name:
    return evaluateName(*expr.as<NameExpr>(), scope);
  case Expr::Kind::Member: {
    const auto &member = *expr.as<MemberExpr>();
    functionNamed(member, scope); // an error unless it names a function of a module
    fail(member.loc, "'" + member.module + "." + member.name + "' is a function; call it with arguments");
  }
  case Expr::Kind::List:
    return listConstant(*expr.as<ListExpr>());
  case Expr::Kind::Unary:
    return evaluateUnary(*expr.as<UnaryExpr>(), scope);
  case Expr::Kind::Binary:
    return evaluateBinary(*expr.as<BinaryExpr>(), scope);
  case Expr::Kind::Call:
    return evaluateCall(*expr.as<CallExpr>(), scope);
  case Expr::Kind::Index:
    return evaluateIndex(*expr.as<IndexExpr>(), scope);
  case Expr::Kind::Pinned:
    return evaluatePinned(*expr.as<PinnedExpr>(), scope);
  }
  TG_ASSERT(false) << "unhandled expression kind";
  return {};
}

TypedValue GraphBuilder::evaluateName(const NameExpr &expr, const Scope &scope) {
  const Binding *binding = scope.find(expr.name);
  if (!binding && dimensions_.count(expr.name)) { // a symbolic dimension: its size, an integer as Python's
    if (baseGraph() != &program_->graph)
      fail(expr.loc, "a param's initial value cannot use the dimension '" + expr.name +
                         "': its size is known only when the script runs");
    const DimensionSource &source = dimensions_.at(expr.name);
    OpAttrs axis;
    axis.axes = {static_cast<int64_t>(source.axis)};
    return {apply(Op(OpKind::DimSize, axis), {visible(source.input, &program_->graph)}, expr.loc).value,
            true};
  }
  if (auto size = options_.sizes.find(expr.name); !binding && size != options_.sizes.end()) {
    ir::TensorData data(DType::I64, {}); // a size given at compile time: an integer literal
    data.data<int64_t>()[0] = size->second;
    ir::Value *literal = graph_->addConstant(std::move(data));
    literalLocs_[literal] = expr.loc;
    return {literal, true};
  }
  if (!binding) {
    if (isBuiltin(expr.name))
      fail(expr.loc, "'" + expr.name + "' is a builtin function; call it with arguments");
    std::vector<std::string> candidates = scope.names();
    for (const auto &[dimension, source] : dimensions_)
      candidates.push_back(dimension);
    fail(expr.loc, "use of undefined name '" + expr.name + "'" + didYouMean(expr.name, candidates));
  }
  switch (binding->kind) {
  case Binding::Kind::Tensor: {
    ir::Value *value = visible(binding->tensor.value, binding->graph);
    if (!value)
      fail(expr.loc, "a param's initial value cannot use '" + expr.name +
                         "': it may only use literals, builtins and functions");
    return {value, binding->tensor.weak};
  }
  case Binding::Kind::Expression:
    return evaluate(*binding->expression, *binding->expressionScope);
  case Binding::Kind::Function:
    fail(expr.loc, "'" + expr.name + "' is a function; call it with arguments");
  case Binding::Kind::Module:
    fail(expr.loc, "'" + expr.name + "' is a module; use " + expr.name + ".NAME(...)");
  case Binding::Kind::Poisoned:
    throw AlreadyReported{};
  }
  return {};
}

TypedValue GraphBuilder::evaluateUnary(const UnaryExpr &expr, const Scope &scope) {
  // Fold the sign of a literal, so that `-1` stays a weak literal usable as an axis or a shape.
  if (const auto *number = expr.operand->as<NumberExpr>(); number && expr.op != "not") {
    TypedValue literal = evaluate(*number, scope);
    if (expr.op == "+") return literal;
    ir::TensorData data = literal.value->constant();
    if (number->isFloat)
      data.data<double>()[0] = -data.data<double>()[0];
    else
      data.data<int64_t>()[0] = -data.data<int64_t>()[0];
    ir::Value *negated = graph_->addConstant(std::move(data));
    literalLocs_[negated] = expr.loc;
    return {negated, true};
  }
  TypedValue operand = evaluateTensor(*expr.operand, scope, "an operand");
  if (expr.op == "+") return operand;
  return applyElementwise(operatorOp(expr.op, 1), {operand}, expr.loc);
}

TypedValue GraphBuilder::evaluateBinary(const BinaryExpr &expr, const Scope &scope) {
  TypedValue lhs = evaluateTensor(*expr.lhs, scope, "an operand");
  TypedValue rhs = evaluateTensor(*expr.rhs, scope, "an operand");
  OpKind kind = operatorOp(expr.op, 2);
  if (kind != OpKind::Matmul) return applyElementwise(kind, {lhs, rhs}, expr.loc);
  DType dtype = resultDType({lhs, rhs});
  if (lhs.weak || rhs.weak)
    fail(expr.loc, "matmul: operands must have at least one dimension, not be literals");
  return apply(Op(OpKind::Matmul), {convert(lhs, dtype, expr.loc), convert(rhs, dtype, expr.loc)}, expr.loc);
}

TypedValue GraphBuilder::evaluatePinned(const PinnedExpr &expr, const Scope &scope) {
  TypedValue value = evaluateTensor(*expr.operand, scope, "a placement annotation");
  ir::Node *node = value.value->owner();
  if (!node)
    fail(expr.loc,
         "@" + expr.place + " applies to an operation, not to " +
             (value.value->isConstant() ? std::string("a literal") : "'" + value.value->name() + "'"));
  if (expr.place == "device" && !node->op().info().hasDevice)
    fail(expr.loc, std::string("@device: '") + node->op().name() + "' has no device implementation");
  graph_->setPin(node, expr.place == "host" ? ir::Pin::Host : ir::Pin::Device);
  return value;
}

namespace {

/// "a, b, c": `count` names for an example.
std::string exampleNames(size_t count) {
  std::string names;
  for (size_t i = 0; i < count; ++i)
    names +=
        (i ? ", " : "") + (i < 26 ? std::string(1, static_cast<char>('a' + i)) : "v" + std::to_string(i));
  return names;
}

} // namespace

std::string GraphBuilder::notAModule(const MemberExpr &member, const Binding &binding) {
  const std::string &name = member.module;
  if (binding.kind != Binding::Kind::Tensor) return "'" + name + "' is not a module";
  std::string message = "'" + name + "' is a value (" + binding.tensor.value->type().str() +
                        "), not a module: values have no members";
  if (member.name == "T" || member.name == "mT")
    return message + "; NumPy's " + name + ".T is transpose(" + name + ")";
  if (member.name == "shape" || member.name == "ndim" || member.name == "size" || member.name == "dtype")
    return message + "; its " + member.name +
           " is part of its type, fixed when the script compiles (a symbolic dimension, such as n in "
           "f32[n, 4], is a value by its name)";
  return message + "; call a function with it instead, e.g. " + member.name + "(" + name + ")";
}

const Binding *GraphBuilder::calledFunction(const CallExpr &call, const Scope &scope) {
  return functionNamed(*call.callee, scope);
}

const Binding *GraphBuilder::functionNamed(const Expr &callee, const Scope &scope) {
  if (const auto *member = callee.as<MemberExpr>()) {
    const Binding *module = scope.find(member->module);
    if (!module)
      fail(member->loc,
           "use of undefined name '" + member->module + "'; did you forget 'import " + member->module + "'?");
    if (module->kind != Binding::Kind::Module) fail(member->loc, notAModule(*member, *module));
    const Binding *function = module->module->scope.findLocal(member->name);
    if (!function || function->kind != Binding::Kind::Function)
      fail(member->loc, "module '" + member->module + "' has no function '" + member->name + "'" +
                            didYouMean(member->name, module->module->scope.names(Binding::Kind::Function)));
    return function;
  }
  const auto *name = callee.as<NameExpr>();
  if (!name) fail(callee.loc, "only functions can be called");
  const Binding *binding = scope.find(name->name);
  if (!binding) return nullptr;
  if (binding->kind == Binding::Kind::Function) return binding;
  if (binding->kind == Binding::Kind::Poisoned) throw AlreadyReported{};
  fail(name->loc, "'" + name->name + "' is not a function");
}

std::string GraphBuilder::calleeName(const CallExpr &call) {
  if (const auto *member = call.callee->as<MemberExpr>())
    return "'" + member->module + "." + member->name + "'";
  const auto *name = call.callee->as<NameExpr>();
  return name && name->name != "grad" ? "'" + name->name + "'" : "grad";
}

TypedValue GraphBuilder::evaluateCall(const CallExpr &call, const Scope &scope) {
  if (const Binding *function = calledFunction(call, scope)) {
    size_t results = function->function->results.size();
    if (results != 1)
      fail(call.loc, calleeName(call) + " returns " + std::to_string(results) +
                         " values: bind them with 'let' and as many names, e.g. 'let " +
                         exampleNames(results) + " = ...'");
    return callFunctionValues(*function, call, scope).front();
  }
  const std::string &name = call.callee->as<NameExpr>()->name;
  if (auto result = callBuiltin(name, call, scope)) return *result;
  fail(call.callee->loc, "call to undefined function '" + name + "'" + unknownFunctionHelp(name, scope));
}

std::vector<TypedValue> GraphBuilder::callFunctionValues(const Binding &function, const CallExpr &call,
                                                         const Scope &scope) {
  const DefStmt &def = *function.function;
  if (std::find(callStack_.begin(), callStack_.end(), &def) != callStack_.end())
    fail(call.loc, "recursive call to '" + def.name.name + "': functions are inlined and cannot recurse");
  if (call.args.size() > def.params.size())
    fail(call.loc, "'" + def.name.name + "' takes " + std::to_string(def.params.size()) + " argument" +
                       (def.params.size() == 1 ? "" : "s") + ", but " + std::to_string(call.args.size()) +
                       " were given");
  std::vector<const Expr *> arguments(def.params.size(), nullptr);
  for (size_t i = 0; i < call.args.size(); ++i)
    arguments[i] = call.args[i].get();
  for (const KeywordArg &keyword : call.keywords) {
    auto param = std::find_if(def.params.begin(), def.params.end(),
                              [&](const Identifier &p) { return p.name == keyword.name; });
    if (param == def.params.end())
      fail(keyword.loc, "'" + def.name.name + "' has no parameter named '" + keyword.name + "'");
    size_t index = static_cast<size_t>(param - def.params.begin());
    if (arguments[index])
      fail(keyword.loc, "'" + def.name.name + "' got two values for parameter '" + keyword.name + "'");
    arguments[index] = keyword.value.get();
  }
  std::vector<Binding> params;
  for (size_t i = 0; i < def.params.size(); ++i) {
    if (!arguments[i])
      fail(call.loc, "'" + def.name.name + "' is missing a value for parameter '" + def.params[i].name + "'");
    Binding binding;
    binding.loc = def.params[i].loc;
    if (arguments[i]->as<ListExpr>()) {
      binding.kind = Binding::Kind::Expression;
      binding.expression = arguments[i];
      binding.expressionScope = &scope;
    } else {
      binding.kind = Binding::Kind::Tensor;
      binding.tensor = evaluate(*arguments[i], scope);
      binding.graph = graph_;
    }
    params.push_back(std::move(binding));
  }
  return inlineFunction(function, std::move(params), call.loc);
}

std::vector<TypedValue> GraphBuilder::inlineFunction(const Binding &function, std::vector<Binding> params,
                                                     const SourceLoc &loc) {
  const DefStmt &def = *function.function;
  if (std::find(callStack_.begin(), callStack_.end(), &def) != callStack_.end())
    fail(loc, "recursive call to '" + def.name.name + "': functions are inlined and cannot recurse");
  TG_ASSERT(params.size() == def.params.size()) << params.size() << " values for " << def.params.size();
  // The body sees its own module's names, and the arguments as its parameters.
  callScopes_.push_back(std::make_unique<Scope>(&function.definingModule->scope));
  Scope &body = *callScopes_.back();
  for (size_t i = 0; i < def.params.size(); ++i)
    body.bind(def.params[i].name, std::move(params[i]));
  callStack_.push_back(&def);
  struct PopOnExit {
    std::vector<const DefStmt *> &stack;
    ~PopOnExit() { stack.pop_back(); }
  } pop{callStack_};
  for (const auto &let : def.body)
    bindLet(*let, body);
  std::vector<TypedValue> results;
  for (const ExprPtr &result : def.results)
    results.push_back(evaluateTensor(*result, body, "a function result"));
  return results;
}

std::optional<std::string> GraphBuilder::dimensionName(const Expr &expr, const Scope &scope) const {
  const auto *name = expr.as<NameExpr>();
  if (!name || scope.find(name->name) || !dimensions_.count(name->name)) return std::nullopt;
  return name->name;
}

ir::Value *GraphBuilder::dimensionCarrier(const std::string &name, const SourceLoc &loc) {
  if (baseGraph() != &program_->graph)
    fail(loc, "a param's initial value cannot use the dimension '" + name +
                  "': its size is known only when the script runs");
  // The input with the dimension's axis first (a view): the ops that take a carrier read its first axis's
  // size, never its elements, so an input with an empty other axis carries its dimension too.
  const DimensionSource &source = dimensions_.at(name);
  return axisFirst(visible(source.input, &program_->graph), source.axis, loc);
}

ir::Value *GraphBuilder::axisFirst(ir::Value *value, size_t axis, const SourceLoc &loc) {
  if (axis == 0) return value;
  OpAttrs attrs;
  attrs.axes.push_back(static_cast<int64_t>(axis));
  for (size_t d = 0; d < value->type().rank(); ++d)
    if (d != axis) attrs.axes.push_back(static_cast<int64_t>(d));
  return apply(Op(OpKind::Transpose, attrs), {value}, loc).value;
}

// ---- Static arguments
// ----------------------------------------------------------------------------------------

ir::Number GraphBuilder::staticNumber(const Expr &expr, const Scope &scope, const char *what) {
  if (const auto *name = expr.as<NameExpr>()) {
    if (const Binding *binding = scope.find(name->name);
        binding && binding->kind == Binding::Kind::Expression)
      return staticNumber(*binding->expression, *binding->expressionScope, what);
  }
  if (!expr.as<ListExpr>()) {
    TypedValue value = evaluate(expr, scope);
    if (value.value->isConstant() && value.value->type().isScalar()) {
      const ir::TensorData &data = value.value->constant();
      switch (data.dtype) {
      case DType::F32:
      case DType::F64:
        return ir::Number::ofFloat(data.get(0));
      case DType::I64:
        return ir::Number::ofInt(data.data<int64_t>()[0]);
      case DType::I32:
        return ir::Number::ofInt(data.data<int32_t>()[0]);
      case DType::Bool:
        return ir::Number::ofInt(data.data<uint8_t>()[0]);
      }
    }
  }
  fail(expr.loc, std::string("expected a number literal for ") + what);
}

int64_t GraphBuilder::staticInt(const Expr &expr, const Scope &scope, const char *what) {
  ir::Number number = staticNumber(expr, scope, what);
  if (!number.isInteger) fail(expr.loc, std::string("expected an integer for ") + what + ", found a float");
  return number.intValue;
}

std::vector<int64_t> GraphBuilder::staticInts(const Expr &expr, const Scope &scope, const char *what) {
  if (const auto *name = expr.as<NameExpr>()) {
    if (const Binding *binding = scope.find(name->name);
        binding && binding->kind == Binding::Kind::Expression)
      return staticInts(*binding->expression, *binding->expressionScope, what);
  }
  const auto *list = expr.as<ListExpr>();
  if (!list) return {staticInt(expr, scope, what)};
  std::vector<int64_t> values;
  for (const ExprPtr &element : list->elements)
    values.push_back(staticInt(*element, scope, what));
  return values;
}

} // namespace detail

std::unique_ptr<ir::Program> buildProgram(const Module &script, ModuleLoader &loader, DiagnosticEngine &diags,
                                          const BuildOptions &options) {
  GraphBuilder builder(loader, diags, options);
  return builder.build(script);
}

std::unique_ptr<ir::Program> compileScript(const std::string &path, DiagnosticEngine &diags) {
  ModuleLoader loader(diags, ModuleLoader::searchPathFromEnvironment());
  const Module *script = loader.loadScript(path);
  if (!script || diags.hasErrors()) return nullptr;
  return buildProgram(*script, loader, diags);
}

} // namespace tg::frontend
