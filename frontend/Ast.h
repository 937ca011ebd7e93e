// The abstract syntax tree of a .tg file: what the parser builds and semantic analysis reads.
// Every node carries the location of its first token (for a binary expression: its operator).
#pragma once

#include "ir/SourceLoc.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tg::frontend {

using ir::SourceLoc;

struct Expr {
  enum class Kind { Number, Bool, String, Name, Member, List, Unary, Binary, Call, Index, Pinned };
  Kind kind;
  SourceLoc loc;
  explicit Expr(Kind kind) : kind(kind) {}
  virtual ~Expr() = default;

  template <typename T>
  const T *as() const {
    return kind == T::kKind ? static_cast<const T *>(this) : nullptr;
  }
};
using ExprPtr = std::unique_ptr<Expr>;

/// `3`, `2.5`, `1e-3`. Integer literals keep their value in intValue; every literal has `value` too.
struct NumberExpr : Expr {
  static constexpr Kind kKind = Kind::Number;
  NumberExpr() : Expr(kKind) {}
  std::string text;
  bool isFloat = false;
  double value = 0;
  int64_t intValue = 0;
};

struct BoolExpr : Expr {
  static constexpr Kind kKind = Kind::Bool;
  BoolExpr() : Expr(kKind) {}
  bool value = false;
};

/// `"weights.npy"`: only load() takes one. value holds the text between the quotes, escapes resolved.
struct StringExpr : Expr {
  static constexpr Kind kKind = Kind::String;
  StringExpr() : Expr(kKind) {}
  std::string value;
};

struct NameExpr : Expr {
  static constexpr Kind kKind = Kind::Name;
  NameExpr() : Expr(kKind) {}
  std::string name;
};

/// `module.name`, e.g. `nn.sigmoid`.
struct MemberExpr : Expr {
  static constexpr Kind kKind = Kind::Member;
  MemberExpr() : Expr(kKind) {}
  std::string module;
  std::string name;
};

/// `[2, 3]` or `[a, b]`: shapes, axes and the tensors of concat/stack.
struct ListExpr : Expr {
  static constexpr Kind kKind = Kind::List;
  ListExpr() : Expr(kKind) {}
  std::vector<ExprPtr> elements;
};

/// op is "-", "+" or "not".
struct UnaryExpr : Expr {
  static constexpr Kind kKind = Kind::Unary;
  UnaryExpr() : Expr(kKind) {}
  std::string op;
  ExprPtr operand;
};

/// op is one of: or and < <= > >= == != + - * / % @ **
struct BinaryExpr : Expr {
  static constexpr Kind kKind = Kind::Binary;
  BinaryExpr() : Expr(kKind) {}
  std::string op;
  ExprPtr lhs, rhs;
};

struct KeywordArg {
  std::string name;
  SourceLoc loc;
  ExprPtr value;
};

/// `f(a, b, axis=1)`; the callee is a NameExpr or a MemberExpr.
struct CallExpr : Expr {
  static constexpr Kind kKind = Kind::Call;
  CallExpr() : Expr(kKind) {}
  ExprPtr callee;
  std::vector<ExprPtr> args;
  std::vector<KeywordArg> keywords;
};

/// One subscript of `x[0, 1:3, ::2, :, None, ...]`: an index, a range whose parts may each be absent, a new
/// axis or an ellipsis.
struct Subscript {
  enum class Kind { Index, Range, NewAxis, Ellipsis };
  SourceLoc loc;
  Kind kind = Kind::Index;
  ExprPtr index;             // an Index's
  ExprPtr start, stop, step; // a Range's; each may be null
};

struct IndexExpr : Expr {
  static constexpr Kind kKind = Kind::Index;
  IndexExpr() : Expr(kKind) {}
  ExprPtr base;
  std::vector<Subscript> subscripts;
};

/// `@host expr` or `@device expr`: pins the node computing expr. place is "host" or "device".
struct PinnedExpr : Expr {
  static constexpr Kind kKind = Kind::Pinned;
  PinnedExpr() : Expr(kKind) {}
  std::string place;
  ExprPtr operand;
};

struct Identifier {
  std::string name;
  SourceLoc loc;
};

/// One dimension of a type: an integer size or a symbol.
struct DimExpr {
  SourceLoc loc;
  bool isSymbol = false;
  std::string symbol;
  int64_t size = 0;
};

/// `f32` or `f32[n, 4]`. dtype is the spelled name, checked by semantic analysis.
struct TypeExpr {
  SourceLoc loc;
  std::string dtype;
  std::vector<DimExpr> dims;
};

struct Stmt {
  enum class Kind { Import, Def, Input, Param, Let, Output, Update };
  Kind kind;
  SourceLoc loc;
  explicit Stmt(Kind kind) : kind(kind) {}
  virtual ~Stmt() = default;

  template <typename T>
  const T *as() const {
    return kind == T::kKind ? static_cast<const T *>(this) : nullptr;
  }
};
using StmtPtr = std::unique_ptr<Stmt>;

struct ImportStmt : Stmt {
  static constexpr Kind kKind = Kind::Import;
  ImportStmt() : Stmt(kKind) {}
  Identifier module;
};

/// `let a, b = expr`
struct LetStmt : Stmt {
  static constexpr Kind kKind = Kind::Let;
  LetStmt() : Stmt(kKind) {}
  std::vector<Identifier> names;
  ExprPtr value;
};

/// `def f(x, y) = expr`, or `def f(x, y) { let ... ; return expr }` (body holds the lets); several results
/// (`= a, b`, `return a, b`) are bound by `let a, b = f(x, y)`.
struct DefStmt : Stmt {
  static constexpr Kind kKind = Kind::Def;
  DefStmt() : Stmt(kKind) {}
  Identifier name;
  std::vector<Identifier> params;
  std::vector<std::unique_ptr<LetStmt>> body;
  std::vector<ExprPtr> results; // one at least
};

struct InputStmt : Stmt {
  static constexpr Kind kKind = Kind::Input;
  InputStmt() : Stmt(kKind) {}
  Identifier name;
  TypeExpr type;
};

struct ParamStmt : Stmt {
  static constexpr Kind kKind = Kind::Param;
  ParamStmt() : Stmt(kKind) {}
  Identifier name;
  TypeExpr type;
  ExprPtr init;
};

struct OutputStmt : Stmt {
  static constexpr Kind kKind = Kind::Output;
  OutputStmt() : Stmt(kKind) {}
  /// Each output's name (a name as written, or the source text of another expression) and its value.
  std::vector<Identifier> names;
  std::vector<ExprPtr> values;
};

struct UpdateStmt : Stmt {
  static constexpr Kind kKind = Kind::Update;
  UpdateStmt() : Stmt(kKind) {}
  Identifier name;
  ExprPtr value;
};

struct Module {
  std::shared_ptr<const std::string> file;
  std::vector<StmtPtr> statements;
};

} // namespace tg::frontend
