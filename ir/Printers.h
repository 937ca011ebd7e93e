// Text forms of a program's graph: a debugprint-style tree (--emit=ir), JSON (--emit=json) and DOT
// (--emit=dot).
#pragma once

#include "ir/Program.h"

#include <string>
#include <utility>
#include <vector>

namespace tg::ir {

/// Theano's debugprint: each output and update as a tree, children indented under " |", every node and value
/// given a letter id [id A] in printing order; a subtree printed once is later shown by its id alone.
std::string printIr(const Program &program);
std::string printIr(const Graph &graph);

/// The schema docs/cli.md documents: {"inputs", "params", "outputs", "updates", "nodes": [{"id", "op",
/// "attrs", "place", "inputs", "outputs", "type", "loc"}], "constants": [...]}. Value ids are shared by every
/// list; node ids are positions in topological order. `members` are added after them as they are: (name, JSON
/// text) pairs such as the optimizer's "profile" and the lift's "placement".
std::string printJson(const Program &program,
                      const std::vector<std::pair<std::string, std::string>> &members = {});

/// `text` as a JSON string literal, quotes and escapes included.
std::string jsonQuote(const std::string &text);

/// A Graphviz digraph: ops as boxes, inputs as ellipses, constants as notes; edges labelled with types. A box
/// names its op (a long fused one by its first members and a count), the value's name and its source line;
/// its tooltip has the whole op and location.
std::string printDot(const Program &program);

/// An op as a line of a table or a box shows it: its str(), or for a fused op longer than `width`
/// characters, its first members and how many there are ("fused{add, sigmoid ... 25 ops}").
std::string shortOpName(const Op &op, size_t width);

/// Where a node came from, short: "logreg.tg:12" and the name of the value it computes ("logreg.tg:12 p"),
/// or "" when unknown.
std::string shortSource(const Node &node);

} // namespace tg::ir
