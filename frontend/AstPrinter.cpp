// The S-expression dump of the AST; the format is described in AstPrinter.h.
#include "frontend/AstPrinter.h"

#include "ir/Assert.h"

#include <sstream>

namespace tg::frontend {
namespace {

void printExpr(std::ostream &out, const Expr &expr);

/// A range part that may be left out prints as _.
void printOptional(std::ostream &out, const ExprPtr &expr) {
  if (expr)
    printExpr(out, *expr);
  else
    out << "_";
}

void printExpr(std::ostream &out, const Expr &expr) {
  switch (expr.kind) {
  case Expr::Kind::Number:
    out << expr.as<NumberExpr>()->text;
    return;
  case Expr::Kind::Bool:
    out << (expr.as<BoolExpr>()->value ? "true" : "false");
    return;
  case Expr::Kind::String:
    out << "\"";
    for (char c : expr.as<StringExpr>()->value)
      out << (c == '"'    ? "\\\""
              : c == '\\' ? "\\\\"
              : c == '\n' ? "\\n"
              : c == '\t' ? "\\t"
                          : std::string(1, c));
    out << "\"";
    return;
  case Expr::Kind::Name:
    out << expr.as<NameExpr>()->name;
    return;
  case Expr::Kind::Member: {
    const auto *member = expr.as<MemberExpr>();
    out << member->module << "." << member->name;
    return;
  }
  case Expr::Kind::List:
    out << "(list";
    for (const ExprPtr &element : expr.as<ListExpr>()->elements) {
      out << " ";
      printExpr(out, *element);
    }
    out << ")";
    return;
  case Expr::Kind::Unary: {
    const auto *unary = expr.as<UnaryExpr>();
    out << "(" << (unary->op == "-" ? "neg" : unary->op == "+" ? "pos" : unary->op) << " ";
    printExpr(out, *unary->operand);
    out << ")";
    return;
  }
  case Expr::Kind::Binary: {
    const auto *binary = expr.as<BinaryExpr>();
    out << "(" << binary->op << " ";
    printExpr(out, *binary->lhs);
    out << " ";
    printExpr(out, *binary->rhs);
    out << ")";
    return;
  }
  case Expr::Kind::Call: {
    const auto *call = expr.as<CallExpr>();
    out << "(call ";
    printExpr(out, *call->callee);
    for (const ExprPtr &arg : call->args) {
      out << " ";
      printExpr(out, *arg);
    }
    for (const KeywordArg &keyword : call->keywords) {
      out << " (kw " << keyword.name << " ";
      printExpr(out, *keyword.value);
      out << ")";
    }
    out << ")";
    return;
  }
  case Expr::Kind::Index: {
    const auto *index = expr.as<IndexExpr>();
    out << "(index ";
    printExpr(out, *index->base);
    for (const Subscript &subscript : index->subscripts) {
      out << " ";
      if (subscript.kind == Subscript::Kind::NewAxis || subscript.kind == Subscript::Kind::Ellipsis) {
        out << (subscript.kind == Subscript::Kind::NewAxis ? "None" : "...");
        continue;
      }
      if (subscript.kind == Subscript::Kind::Index) {
        printExpr(out, *subscript.index);
        continue;
      }
      out << "(range ";
      printOptional(out, subscript.start);
      out << " ";
      printOptional(out, subscript.stop);
      if (subscript.step) {
        out << " ";
        printExpr(out, *subscript.step);
      }
      out << ")";
    }
    out << ")";
    return;
  }
  case Expr::Kind::Pinned: {
    const auto *pinned = expr.as<PinnedExpr>();
    out << "(@" << pinned->place << " ";
    printExpr(out, *pinned->operand);
    out << ")";
    return;
  }
  }
  TG_ASSERT(false) << "an expression kind the AST printer does not know";
}

/// "a b c": names separated by spaces.
std::string joinNames(const std::vector<Identifier> &names) {
  std::string text;
  for (const Identifier &name : names)
    text += (text.empty() ? "" : " ") + name.name;
  return text;
}

void printType(std::ostream &out, const TypeExpr &type) {
  out << type.dtype;
  if (type.dims.empty()) return;
  out << "[";
  for (size_t i = 0; i < type.dims.size(); ++i) {
    const DimExpr &dim = type.dims[i];
    out << (i ? ", " : "");
    if (dim.isSymbol)
      out << dim.symbol;
    else
      out << dim.size;
  }
  out << "]";
}

void printLet(std::ostream &out, const LetStmt &let) {
  std::string names = joinNames(let.names);
  out << "(let " << (let.names.size() == 1 ? names : "(" + names + ")") << " ";
  printExpr(out, *let.value);
  out << ")";
}

void printStmt(std::ostream &out, const Stmt &stmt) {
  switch (stmt.kind) {
  case Stmt::Kind::Import:
    out << "(import " << stmt.as<ImportStmt>()->module.name << ")";
    return;
  case Stmt::Kind::Def: {
    const auto *def = stmt.as<DefStmt>();
    out << "(def " << def->name.name << " (" << joinNames(def->params) << ")";
    const char *separator = def->body.empty() ? " " : "\n  ";
    for (const auto &let : def->body) {
      out << separator;
      printLet(out, *let);
    }
    out << separator;
    bool several = def->results.size() > 1; // (values a b)
    if (several) out << "(values";
    for (size_t i = 0; i < def->results.size(); ++i) {
      if (several) out << " ";
      printExpr(out, *def->results[i]);
    }
    out << (several ? "))" : ")");
    return;
  }
  case Stmt::Kind::Input: {
    const auto *input = stmt.as<InputStmt>();
    out << "(input " << input->name.name << " ";
    printType(out, input->type);
    out << ")";
    return;
  }
  case Stmt::Kind::Param: {
    const auto *param = stmt.as<ParamStmt>();
    out << "(param " << param->name.name << " ";
    printType(out, param->type);
    out << " ";
    printExpr(out, *param->init);
    out << ")";
    return;
  }
  case Stmt::Kind::Let:
    printLet(out, *stmt.as<LetStmt>());
    return;
  case Stmt::Kind::Output: {
    // Names as they are, other expressions as trees.
    const auto *output = stmt.as<OutputStmt>();
    out << "(output";
    for (const ExprPtr &value : output->values) {
      out << " ";
      if (const auto *name = value->as<NameExpr>())
        out << name->name;
      else
        printExpr(out, *value);
    }
    out << ")";
    return;
  }
  case Stmt::Kind::Update: {
    const auto *update = stmt.as<UpdateStmt>();
    out << "(update " << update->name.name << " ";
    printExpr(out, *update->value);
    out << ")";
    return;
  }
  }
  TG_ASSERT(false) << "a statement kind the AST printer does not know";
}

} // namespace

std::string printAst(const Module &module) {
  std::ostringstream out;
  for (const StmtPtr &stmt : module.statements) {
    printStmt(out, *stmt);
    out << "\n";
  }
  return out.str();
}

} // namespace tg::frontend
