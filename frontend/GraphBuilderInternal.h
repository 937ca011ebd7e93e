// The graph builder's internals, shared by GraphBuilder.cpp (statements, expressions, typing) and
// Builtins.cpp (the builtin functions). Not for use outside frontend/.
#pragma once

#include "frontend/GraphBuilder.h"

#include <optional>
#include <unordered_map>
#include <vector>

namespace tg::frontend {

namespace detail {

/// A tensor as semantic analysis sees it: a graph value and whether it is a weak literal, whose dtype yields
/// to the other operand's (`x * 2.0` keeps x's dtype).
struct TypedValue {
  ir::Value *value = nullptr;
  bool weak = false;
};

struct ModuleScope;
class Scope;

/// Whether `number` is within the range of an integer `dtype` (every number fits a float or bool dtype,
/// converted as NumPy converts it).
bool fitsDType(const ir::Number &number, ir::DType dtype);

/// What a name stands for.
struct Binding {
  enum class Kind { Tensor, Expression, Function, Module, Poisoned };
  Kind kind = Kind::Poisoned;
  TypedValue tensor;                // Tensor
  const ir::Graph *graph = nullptr; // Tensor: the graph holding it
  const Expr *expression = nullptr; // Expression: a list argument of an inlined call, evaluated where used
  const Scope *expressionScope = nullptr;
  const DefStmt *function = nullptr;     // Function
  ModuleScope *definingModule = nullptr; // Function: the module whose names its body sees
  ModuleScope *module = nullptr;         // Module
  SourceLoc loc;                         // where it was defined
};

class Scope {
public:
  explicit Scope(const Scope *parent = nullptr) : parent_(parent) {}
  const Binding *find(const std::string &name) const;
  const Binding *findLocal(const std::string &name) const;
  void bind(const std::string &name, Binding binding) { names_[name] = std::move(binding); }
  /// Every name this scope and its parents bind (for suggestions), those of `kind` only when given.
  std::vector<std::string> names(std::optional<Binding::Kind> kind = std::nullopt) const;

private:
  const Scope *parent_;
  std::unordered_map<std::string, Binding> names_; // a script's top level may bind 100,000 names
};

struct ModuleScope {
  std::string name;
  const Module *ast = nullptr;
  std::string folder;
  Scope scope;
};

/// How x[INDEX] is computed from x, step after step, each optional (frontend/Indexing.cpp), so that an update
/// can walk the steps back.
struct IndexPlan {
  ir::Value *x = nullptr;
  std::vector<int64_t> addedFirst;   // `None` beside index arrays: axes added to x first
  std::optional<ir::OpAttrs> slices; // the basic subscripts: a slice of (the expanded) x
  std::vector<int64_t> perm;         // index arrays apart: their axes moved to the front
  std::vector<ir::Value *> indices;  // the index arrays, read on the axes from gatherAxis on
  int64_t gatherAxis = 0;
  std::vector<int64_t> addedLast; // `None` without index arrays: axes added to the result
};

/// A plan's values, step by step: each the one before where its step is absent.
struct IndexValues {
  ir::Value *expanded = nullptr, *sliced = nullptr, *moved = nullptr, *gathered = nullptr, *result = nullptr;
};

/// Thrown after an error has been reported, to unwind to the statement without reporting again.
struct AlreadyReported {};

class GraphBuilder {
public:
  GraphBuilder(ModuleLoader &loader, DiagnosticEngine &diags, BuildOptions options = {})
      : loader_(loader), diags_(diags), options_(std::move(options)) {}
  std::unique_ptr<ir::Program> build(const Module &script);

  // Expressions (GraphBuilder.cpp).
  TypedValue evaluate(const Expr &expr, const Scope &scope);
  TypedValue evaluateTensor(const Expr &expr, const Scope &scope, const char *what);
  /// A list literal of numbers or bools, nested to any depth, as a constant tensor (f32 when an element is a
  /// float, else i64 when one is an integer, else bool).
  TypedValue listConstant(const ListExpr &list);
  /// Integer literals, `-` of them, and names bound to integer constants, as used for axes and shapes.
  std::vector<int64_t> staticInts(const Expr &expr, const Scope &scope, const char *what);
  int64_t staticInt(const Expr &expr, const Scope &scope, const char *what);
  /// A number known when the script is compiled (a literal, `-` of one, a name bound to one), exact for
  /// integers.
  ir::Number staticNumber(const Expr &expr, const Scope &scope, const char *what);

  // Typing helpers shared with the builtins.
  ir::Value *convert(TypedValue value, ir::DType dtype, const SourceLoc &loc);
  /// A weak value takes its default dtype (f32 for a float literal, i64 for an integer).
  ir::Value *materialize(TypedValue value, const SourceLoc &loc);
  /// NumPy's result dtype of several operands with weak-literal rules (f64 or i64 when all are weak).
  ir::DType resultDType(const std::vector<TypedValue> &operands) const;
  bool allWeak(const std::vector<TypedValue> &operands) const;
  TypedValue apply(ir::Op op, std::vector<ir::Value *> inputs, const SourceLoc &loc);
  /// Applies an elementwise op after promoting its operands to one dtype.
  TypedValue applyElementwise(ir::OpKind kind, std::vector<TypedValue> operands, const SourceLoc &loc);

  // Builtin functions (Builtins.cpp). Returns nullopt when `name` is not a builtin.
  std::optional<TypedValue> callBuiltin(const std::string &name, const CallExpr &call, const Scope &scope);
  /// grad(cost, wrt...): one gradient per wrt (Gradient.h builds them into the current graph).
  std::vector<TypedValue> gradients(const CallExpr &call, const Scope &scope);
  /// scan(step, init or [inits], xs..., length=, reverse=) (Scan.cpp): one stack per carry.
  std::vector<TypedValue> scan(const CallExpr &call, const Scope &scope);

  // Symbolic dimensions as values (GraphBuilder.cpp): a name no binding holds but an input's dimension.
  /// The dimension `expr` names, when it is such a name.
  std::optional<std::string> dimensionName(const Expr &expr, const Scope &scope) const;
  /// A value whose first axis has the dimension's size, for the ops that read only that (arange of an input):
  /// the input that binds it, that axis moved first.
  ir::Value *dimensionCarrier(const std::string &name, const SourceLoc &loc);
  /// `value` with axis `axis` moved first (a transposed view; the value itself for axis 0).
  ir::Value *axisFirst(ir::Value *value, size_t axis, const SourceLoc &loc);

  // Indexing (Indexing.cpp).
  IndexPlan planIndex(const IndexExpr &expr, const Scope &scope);
  IndexValues applyIndex(const IndexPlan &plan, const SourceLoc &loc);
  /// inc_subtensor(x[INDEX], v) (`add`) and set_subtensor(x[INDEX], v).
  TypedValue updateIndex(const CallExpr &call, const Scope &scope, bool add);
  /// An integer tensor used as an index, or a located error (a bool mask, a float).
  ir::Value *indexArray(const Expr &expr, const Scope &scope);
  /// A constant index's values against a static axis `size`: one out of range is a located error.
  void checkIndexValues(ir::Value *index, const ir::Dim &size, size_t axis, const SourceLoc &loc);
  static bool isBuiltin(const std::string &name);
  /// What to add to "call to undefined function 'NAME'": NumPy's spelling of a dtype, a function of the
  /// standard library's modules, or the closest builtin or function in `scope` ("; did you mean ...").
  static std::string unknownFunctionHelp(const std::string &name, const Scope &scope);
  /// Why `module.name` does not name a module's function when `module` is bound to `binding`, which is not
  /// a module (a value: NumPy's x.T, x.shape).
  static std::string notAModule(const MemberExpr &member, const Binding &binding);

  // Loops (Scan.cpp). A scan's step function is built into a body graph of its own; a value of an enclosing
  // graph that it reads becomes an input of the body (an invariant of the loop).
  /// `value`, which belongs to `owner`, as the current graph sees it: itself, a copy of a constant, or the
  /// body input that carries it in (added on first use, through every loop between); nullptr when `owner`
  /// encloses no loop being built (a param's initial value reading the step graph).
  ir::Value *visible(ir::Value *value, const ir::Graph *owner);
  /// The graph the outermost loop being built is in: the step graph, or the params' init graph.
  const ir::Graph *baseGraph() const { return loops_.empty() ? graph_ : loops_.front().outer; }

  [[noreturn]] void fail(const SourceLoc &loc, const std::string &message);
  /// The seed of the next rand/randn call without seed=: calls are numbered in the order they are compiled.
  uint64_t takeSeed() { return nextSeed_++; }

private:
  void statement(const Stmt &stmt, ModuleScope &module, bool isScript);
  void importModule(const ImportStmt &stmt, ModuleScope &module);
  void declare(Scope &scope, const Identifier &id, Binding binding);
  /// `let a, b = expr`: evaluates expr and binds each name in `scope`.
  void bindLet(const LetStmt &let, Scope &scope);
  /// The values of the right side of a let: one, or one per `wrt` for grad(cost, wrt...).
  std::vector<TypedValue> evaluateValues(const Expr &expr, const Scope &scope);
  ir::TensorType declaredType(const TypeExpr &type, bool isParam);
  /// The function binding a call names (a `def`, or a module's), or nullptr for a builtin's name; a located
  /// error for a name bound to something else or a module without it.
  const Binding *calledFunction(const CallExpr &call, const Scope &scope);
  /// How messages name a call's callee: 'f', 'nn.dense', or grad.
  static std::string calleeName(const CallExpr &call);
  /// The function binding `callee` names (as calledFunction), or nullptr for an unbound name.
  const Binding *functionNamed(const Expr &callee, const Scope &scope);
  /// Every result of a call of a `def` (inlined: its lets, then its results, in its own scope).
  std::vector<TypedValue> callFunctionValues(const Binding &function, const CallExpr &call,
                                             const Scope &scope);
  /// The results of `function` with its parameters bound to `params`, in order (inlined at `loc`).
  std::vector<TypedValue> inlineFunction(const Binding &function, std::vector<Binding> params,
                                         const SourceLoc &loc);
  TypedValue evaluateName(const NameExpr &expr, const Scope &scope);
  TypedValue evaluateUnary(const UnaryExpr &expr, const Scope &scope);
  TypedValue evaluateBinary(const BinaryExpr &expr, const Scope &scope);
  TypedValue evaluateIndex(const IndexExpr &expr, const Scope &scope);
  TypedValue evaluateCall(const CallExpr &call, const Scope &scope);
  TypedValue evaluatePinned(const PinnedExpr &expr, const Scope &scope);
  ir::Value *fitToType(TypedValue value, const ir::TensorType &type, const SourceLoc &loc,
                       const std::string &what);

  ModuleLoader &loader_;
  DiagnosticEngine &diags_;
  std::unique_ptr<ir::Program> program_;
  ir::Graph *graph_ = nullptr; // the graph expressions are built into: program_->graph, or ->init for params
  std::vector<std::unique_ptr<ModuleScope>> modules_;
  BuildOptions options_;
  std::vector<std::string> importStack_;
  std::vector<const DefStmt *> callStack_;
  std::vector<std::unique_ptr<Scope>> callScopes_;
  uint64_t nextSeed_ = 0;
  /// A loop whose body is being built: its graph, the graph it is in, and the outer values it reads.
  struct LoopFrame {
    ir::Graph *graph;
    ir::Graph *outer;
    std::vector<ir::Value *> invariants;                       // outer values, in the order first read
    std::unordered_map<const ir::Value *, ir::Value *> inside; // outer value -> its body input
  };
  std::vector<LoopFrame> loops_; // outermost first; graph_ is the last one's graph
  /// Each symbolic dimension's first input and axis, in the order inputs are declared.
  struct DimensionSource {
    ir::Value *input;
    size_t axis;
  };
  std::unordered_map<std::string, DimensionSource> dimensions_;
  /// Where each weak literal's constant was written, for an error when it does not fit the dtype it takes.
  std::unordered_map<const ir::Value *, SourceLoc> literalLocs_;
};

} // namespace detail

} // namespace tg::frontend
