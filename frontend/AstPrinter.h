// A readable, stable dump of the AST for `tgc compile --emit=ast` and for tests.
#pragma once

#include "frontend/Ast.h"

#include <string>

namespace tg::frontend {

/// Prints a module as S-expressions, one top-level statement per line (each line ends in '\n'; an empty
/// module prints as ""). Statements:
///   (import nn)                      (input X f32[n, 4])               (param w f32[4] (call zeros (list
///   4))) (let p EXPR)                     (let (gw gb) EXPR)                (output loss acc) (update w
///   EXPR)                  (def predict (X w b) EXPR)
/// A def with a block body puts each let and then its result on its own line, indented by two spaces:
///   (def f (x)
///     (let y (* x 2))
///     (+ y 1))
/// Expressions: numbers as written in the source, true, false, strings quoted and escaped as in the source,
/// names, nn.sigmoid for members, (list a b), (neg x) (pos x) (not x) for prefix operators, (OP a b) for
/// binary ones (OP as spelled: + ** and <= ...), (call f a b (kw axis 1)), (@host x) and (@device x) for
/// pins, and (index x 0 (range 1 3) (range _ _ 2)) for subscripts, where a range lists start, stop and (when
/// given) step, with _ for a part left out.
std::string printAst(const Module &module);

} // namespace tg::frontend
