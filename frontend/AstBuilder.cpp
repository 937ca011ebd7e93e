// Parse tree to AST: each visit returns the node it built (an ExprPtr or a StmtPtr) in ANTLR's Any.
#include "frontend/AstBuilder.h"

#include "frontend/Parser.h"
#include "ir/Assert.h"

#include <charconv>

namespace tg::frontend {

SourceLoc tokenLoc(const antlr4::Token *token, std::shared_ptr<const std::string> file) {
  return {std::move(file), static_cast<int>(token->getLine()),
          static_cast<int>(token->getCharPositionInLine()) + 1};
}

namespace {

/// A node as a visit returns it. The Any must hold exactly ExprPtr or StmtPtr, the types the callers take
/// out.
antlrcpp::Any result(ExprPtr node) {
  return antlrcpp::Any(std::move(node));
}
antlrcpp::Any result(StmtPtr node) {
  return antlrcpp::Any(std::move(node));
}

} // namespace

void AstBuilder::addLine(Module &module, TgParser::LineContext *line) {
  if (TgParser::StatementContext *statement = line->statement())
    module.statements.push_back(std::move(visit(statement).as<StmtPtr>()));
}

Identifier AstBuilder::identifier(antlr4::tree::TerminalNode *name) const {
  return {name->getText(), loc(name->getSymbol())};
}

std::vector<Identifier> AstBuilder::names(TgParser::NameListContext *ctx) const {
  std::vector<Identifier> result;
  if (ctx)
    for (antlr4::tree::TerminalNode *name : ctx->NAME())
      result.push_back(identifier(name));
  return result;
}

/// A chain of left-associative operators (`a + b + ... + z`) nests the AST without nesting the parse (ANTLR
/// reads it in a loop), so the AST's depth is limited here too.
ExprPtr AstBuilder::expr(antlr4::ParserRuleContext *ctx) {
  if (++depth_ > kMaxNesting)
    throw ir::UserError("expression too deeply nested or too long", loc(ctx->getStart()));
  ExprPtr node = std::move(visit(ctx).as<ExprPtr>());
  --depth_;
  return node;
}

// ---- Statements

antlrcpp::Any AstBuilder::visitStatement(TgParser::StatementContext *ctx) {
  return visit(ctx->children.at(0));
}

antlrcpp::Any AstBuilder::visitImportStmt(TgParser::ImportStmtContext *ctx) {
  auto stmt = make<ImportStmt>(ctx->getStart());
  stmt->module = identifier(ctx->NAME());
  return result(std::move(stmt));
}

antlrcpp::Any AstBuilder::visitDefStmt(TgParser::DefStmtContext *ctx) {
  auto stmt = make<DefStmt>(ctx->getStart());
  stmt->name = identifier(ctx->NAME());
  stmt->params = names(ctx->nameList());
  TgParser::DefBlockContext *block = ctx->defBlock();
  auto results = [&](TgParser::ResultsContext *list) {
    for (TgParser::ExprContext *value : list->expr())
      stmt->results.push_back(expr(value));
  };
  if (!block) {
    results(ctx->results());
    return result(std::move(stmt));
  }
  for (TgParser::BodyStmtContext *body : block->bodyStmt()) {
    if (!stmt->results.empty()) {
      diags_.error(loc(body->getStart()), "statement after the return of '" + stmt->name.name + "'");
      break;
    }
    if (TgParser::LetStmtContext *letCtx = body->letStmt())
      stmt->body.push_back(let(letCtx));
    else
      results(body->results());
  }
  if (stmt->results.empty())
    diags_.error(loc(block->getStop()), "the body of '" + stmt->name.name + "' must end with 'return EXPR'");
  return result(std::move(stmt));
}

antlrcpp::Any AstBuilder::visitInputStmt(TgParser::InputStmtContext *ctx) {
  auto stmt = make<InputStmt>(ctx->getStart());
  stmt->name = identifier(ctx->NAME());
  stmt->type = type(ctx->type());
  return result(std::move(stmt));
}

antlrcpp::Any AstBuilder::visitParamStmt(TgParser::ParamStmtContext *ctx) {
  auto stmt = make<ParamStmt>(ctx->getStart());
  stmt->name = identifier(ctx->NAME());
  stmt->type = type(ctx->type());
  stmt->init = expr(ctx->expr());
  return result(std::move(stmt));
}

antlrcpp::Any AstBuilder::visitLetStmt(TgParser::LetStmtContext *ctx) {
  return result(let(ctx));
}

std::unique_ptr<LetStmt> AstBuilder::let(TgParser::LetStmtContext *ctx) {
  auto stmt = make<LetStmt>(ctx->getStart());
  stmt->names = names(ctx->names);
  stmt->value = expr(ctx->value);
  return stmt;
}

antlrcpp::Any AstBuilder::visitOutputStmt(TgParser::OutputStmtContext *ctx) {
  auto stmt = make<OutputStmt>(ctx->getStart());
  for (TgParser::ExprContext *value : ctx->expr()) { // named by its source text: a name's is the name
    stmt->values.push_back(expr(value));
    antlr4::misc::Interval span(value->getStart()->getStartIndex(), value->getStop()->getStopIndex());
    stmt->names.push_back({value->getStart()->getInputStream()->getText(span), loc(value->getStart())});
  }
  return result(std::move(stmt));
}

antlrcpp::Any AstBuilder::visitUpdateStmt(TgParser::UpdateStmtContext *ctx) {
  auto stmt = make<UpdateStmt>(ctx->getStart());
  stmt->name = identifier(ctx->NAME());
  stmt->value = expr(ctx->expr());
  return result(std::move(stmt));
}

TypeExpr AstBuilder::type(TgParser::TypeContext *ctx) {
  TypeExpr typeExpr{loc(ctx->dtype), ctx->dtype->getText(), {}};
  for (TgParser::DimContext *dimCtx : ctx->dim()) {
    DimExpr dim;
    dim.loc = loc(dimCtx->getStart());
    if (dimCtx->NAME()) {
      dim.isSymbol = true;
      dim.symbol = dimCtx->NAME()->getText();
    } else {
      dim.size = integer(dimCtx->INT()->getSymbol()).value_or(0);
    }
    typeExpr.dims.push_back(std::move(dim));
  }
  return typeExpr;
}

// ---- Expressions

antlrcpp::Any AstBuilder::visitPrimaryExpr(TgParser::PrimaryExprContext *ctx) {
  return visit(ctx->operand);
}

antlrcpp::Any AstBuilder::visitBinaryExpr(TgParser::BinaryExprContext *ctx) {
  auto node = make<BinaryExpr>(ctx->op);
  node->op = ctx->op->getText();
  node->lhs = expr(ctx->lhs);
  node->rhs = expr(ctx->rhs);
  return result(std::move(node));
}

antlrcpp::Any AstBuilder::visitUnaryExpr(TgParser::UnaryExprContext *ctx) {
  auto node = make<UnaryExpr>(ctx->op);
  node->op = ctx->op->getText();
  node->operand = expr(ctx->operand);
  return result(std::move(node));
}

antlrcpp::Any AstBuilder::visitPinnedExpr(TgParser::PinnedExprContext *ctx) {
  auto node = make<PinnedExpr>(ctx->getStart());
  node->place = ctx->place->getText();
  if (node->place != "host" && node->place != "device")
    diags_.error(loc(ctx->place), "unknown placement '@" + node->place + "'; expected '@host' or '@device'");
  node->operand = expr(ctx->expr());
  return result(std::move(node));
}

antlrcpp::Any AstBuilder::visitIndexExpr(TgParser::IndexExprContext *ctx) {
  auto node = make<IndexExpr>(ctx->LBRACK()->getSymbol());
  node->base = expr(ctx->expr());
  for (TgParser::SubscriptContext *subscriptCtx : ctx->subscript())
    node->subscripts.push_back(subscript(subscriptCtx));
  return result(std::move(node));
}

Subscript AstBuilder::subscript(TgParser::SubscriptContext *ctx) {
  Subscript subscript;
  subscript.loc = loc(ctx->getStart());
  if (ctx->NONE()) {
    subscript.kind = Subscript::Kind::NewAxis;
    return subscript;
  }
  if (ctx->ELLIPSIS()) {
    subscript.kind = Subscript::Kind::Ellipsis;
    return subscript;
  }
  TgParser::SliceContext *slice = ctx->slice();
  if (!slice) {
    subscript.index = expr(ctx->expr());
    return subscript;
  }
  subscript.kind = Subscript::Kind::Range;
  subscript.start = optionalExpr(ctx->expr());
  subscript.stop = optionalExpr(slice->upper);
  subscript.step = optionalExpr(slice->step);
  return subscript;
}

antlrcpp::Any AstBuilder::visitCallExpr(TgParser::CallExprContext *ctx) {
  auto node = make<CallExpr>(ctx->getStart());
  node->callee = name(ctx->callee);
  for (TgParser::ArgumentContext *argument : ctx->args) {
    if (argument->keyword) {
      node->keywords.push_back({argument->keyword->getText(), loc(argument->keyword), expr(argument->value)});
      continue;
    }
    if (!node->keywords.empty())
      diags_.error(loc(argument->getStart()), "positional argument after keyword argument");
    node->args.push_back(expr(argument->value));
  }
  return result(std::move(node));
}

antlrcpp::Any AstBuilder::visitNameExpr(TgParser::NameExprContext *ctx) {
  return result(name(ctx->qualifiedName()));
}

/// `name` as a NameExpr, `module.name` as a MemberExpr.
ExprPtr AstBuilder::name(TgParser::QualifiedNameContext *ctx) {
  if (!ctx->member) {
    auto node = make<NameExpr>(ctx->first);
    node->name = ctx->first->getText();
    return node;
  }
  auto node = make<MemberExpr>(ctx->first);
  node->module = ctx->first->getText();
  node->name = ctx->member->getText();
  return node;
}

antlrcpp::Any AstBuilder::visitIntExpr(TgParser::IntExprContext *ctx) {
  return result(number(ctx->INT()->getSymbol(), false));
}

antlrcpp::Any AstBuilder::visitFloatExpr(TgParser::FloatExprContext *ctx) {
  return result(number(ctx->FLOAT()->getSymbol(), true));
}

ExprPtr AstBuilder::number(const antlr4::Token *token, bool isFloat) {
  auto node = make<NumberExpr>(token);
  node->text = token->getText();
  node->isFloat = isFloat;
  if (!isFloat) {
    node->intValue = integer(token).value_or(0);
    node->value = static_cast<double>(node->intValue);
    return node;
  }
  const std::string &digits = node->text;
  if (std::from_chars(digits.data(), digits.data() + digits.size(), node->value).ec != std::errc())
    diags_.error(loc(token), "floating-point literal out of range");
  return node;
}

/// The value of an INT token, or nothing (and an error) when it does not fit in 64 bits.
std::optional<int64_t> AstBuilder::integer(const antlr4::Token *token) {
  std::string digits = token->getText();
  int64_t value = 0;
  if (std::from_chars(digits.data(), digits.data() + digits.size(), value).ec == std::errc()) return value;
  diags_.error(loc(token), "integer literal out of range");
  return std::nullopt;
}

antlrcpp::Any AstBuilder::visitBoolExpr(TgParser::BoolExprContext *ctx) {
  auto node = make<BoolExpr>(ctx->value);
  node->value = ctx->value->getType() == TgParser::TRUE;
  return result(std::move(node));
}

/// A STRING token's text between the quotes, with its escapes resolved.
antlrcpp::Any AstBuilder::visitStringExpr(TgParser::StringExprContext *ctx) {
  const antlr4::Token *token = ctx->STRING()->getSymbol();
  auto node = make<StringExpr>(token);
  std::string quoted = token->getText();
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    if (quoted[i] != '\\') {
      node->value += quoted[i];
      continue;
    }
    char escaped = quoted[++i];
    switch (escaped) {
    case '"':
    case '\\':
      node->value += escaped;
      break;
    case 'n':
      node->value += '\n';
      break;
    case 't':
      node->value += '\t';
      break;
    default:
      diags_.error(loc(token), "unknown escape sequence in string (known: \\\" \\\\ \\n \\t)");
    }
  }
  return result(std::move(node));
}

antlrcpp::Any AstBuilder::visitListExpr(TgParser::ListExprContext *ctx) {
  auto node = make<ListExpr>(ctx->getStart());
  for (TgParser::ExprContext *element : ctx->expr())
    node->elements.push_back(expr(element));
  return result(std::move(node));
}

antlrcpp::Any AstBuilder::visitParenExpr(TgParser::ParenExprContext *ctx) {
  return visit(ctx->expr());
}

} // namespace tg::frontend
