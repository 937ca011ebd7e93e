// The AST of frontend/Ast.h from ANTLR's parse trees of grammar/Tg.g4, one line at a time, by the visitor
// ANTLR generates. It reports what the grammar cannot state: literals out of range, unknown escapes in
// strings, unknown placements, positional arguments after keyword arguments, where a def's `return` stands,
// and expressions nested deeper than kMaxNesting.
#pragma once

#include "TgBaseVisitor.h"
#include "frontend/Ast.h"
#include "frontend/Diagnostics.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tg::frontend {

/// The 1-based location of a token (ANTLR counts columns from 0).
SourceLoc tokenLoc(const antlr4::Token *token, std::shared_ptr<const std::string> file);

class AstBuilder : public grammar::TgBaseVisitor { // public: ANTLR's accept() casts to TgVisitor
public:
  AstBuilder(std::shared_ptr<const std::string> file, DiagnosticEngine &diags)
      : file_(std::move(file)), diags_(diags) {}

  /// Adds the statement of a line without syntax errors, if it has one, to `module`; reports to the
  /// diagnostics what the grammar cannot check.
  void addLine(Module &module, grammar::TgParser::LineContext *line);

private:
  using TgParser = grammar::TgParser;

  SourceLoc loc(const antlr4::Token *token) const { return tokenLoc(token, file_); }
  template <typename Node>
  std::unique_ptr<Node> make(const antlr4::Token *token) const {
    auto node = std::make_unique<Node>();
    node->loc = loc(token);
    return node;
  }
  Identifier identifier(antlr4::tree::TerminalNode *name) const;
  std::vector<Identifier> names(TgParser::NameListContext *ctx) const;
  TypeExpr type(TgParser::TypeContext *ctx);
  std::unique_ptr<LetStmt> let(TgParser::LetStmtContext *ctx);
  ExprPtr expr(antlr4::ParserRuleContext *ctx);
  ExprPtr optionalExpr(TgParser::ExprContext *ctx) { return ctx ? expr(ctx) : nullptr; }
  Subscript subscript(TgParser::SubscriptContext *ctx);
  ExprPtr name(TgParser::QualifiedNameContext *ctx);
  ExprPtr number(const antlr4::Token *token, bool isFloat);
  std::optional<int64_t> integer(const antlr4::Token *token);

  // Statements, as StmtPtr.
  antlrcpp::Any visitStatement(TgParser::StatementContext *ctx) override;
  antlrcpp::Any visitImportStmt(TgParser::ImportStmtContext *ctx) override;
  antlrcpp::Any visitDefStmt(TgParser::DefStmtContext *ctx) override;
  antlrcpp::Any visitInputStmt(TgParser::InputStmtContext *ctx) override;
  antlrcpp::Any visitParamStmt(TgParser::ParamStmtContext *ctx) override;
  antlrcpp::Any visitLetStmt(TgParser::LetStmtContext *ctx) override;
  antlrcpp::Any visitOutputStmt(TgParser::OutputStmtContext *ctx) override;
  antlrcpp::Any visitUpdateStmt(TgParser::UpdateStmtContext *ctx) override;
  // Expressions, as ExprPtr: the labelled alternatives of expr and primary.
  antlrcpp::Any visitPrimaryExpr(TgParser::PrimaryExprContext *ctx) override;
  antlrcpp::Any visitIndexExpr(TgParser::IndexExprContext *ctx) override;
  antlrcpp::Any visitBinaryExpr(TgParser::BinaryExprContext *ctx) override;
  antlrcpp::Any visitUnaryExpr(TgParser::UnaryExprContext *ctx) override;
  antlrcpp::Any visitPinnedExpr(TgParser::PinnedExprContext *ctx) override;
  antlrcpp::Any visitCallExpr(TgParser::CallExprContext *ctx) override;
  antlrcpp::Any visitNameExpr(TgParser::NameExprContext *ctx) override;
  antlrcpp::Any visitIntExpr(TgParser::IntExprContext *ctx) override;
  antlrcpp::Any visitFloatExpr(TgParser::FloatExprContext *ctx) override;
  antlrcpp::Any visitBoolExpr(TgParser::BoolExprContext *ctx) override;
  antlrcpp::Any visitStringExpr(TgParser::StringExprContext *ctx) override;
  antlrcpp::Any visitListExpr(TgParser::ListExprContext *ctx) override;
  antlrcpp::Any visitParenExpr(TgParser::ParenExprContext *ctx) override;

  std::shared_ptr<const std::string> file_;
  DiagnosticEngine &diags_;
  int depth_ = 0; // of the expression being built
};

} // namespace tg::frontend
