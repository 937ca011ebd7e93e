#include "ir/Printers.h"

#include "ir/Loop.h"
#include "ir/ScalarGraph.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace tg::ir {

namespace {

std::string letterId(size_t index) {
  std::string id;
  for (size_t n = index + 1; n > 0; n = (n - 1) / 26)
    id.insert(id.begin(), static_cast<char>('A' + (n - 1) % 26));
  return id;
}

/// The shortest text that reads back as the same element (f32 elements as f32).
std::string elementText(const TensorData &data, int64_t index) {
  char buffer[64];
  double value = data.get(index);
  if (data.dtype == DType::Bool) return value ? "true" : "false";
  std::to_chars_result result = data.dtype == DType::F32
                                    ? std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(value))
                                    : std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string constantText(const TensorData &data) {
  if (data.shape.empty()) return elementText(data, 0);
  int64_t count = data.numElements();
  std::string text = "[";
  for (int64_t i = 0; i < count && i < 6; ++i)
    text += (i ? " " : "") + elementText(data, i);
  return text + (count > 6 ? " ...]" : "]");
}

/// Where a node runs (a transfer runs on the host, whichever way it copies).
std::string place(const Node &node) {
  return node.op().place() == Place::Device ? "device" : "host";
}

/// Theano's debugprint: each value with its inputs indented below it, a subgraph printed in full only where
/// it first appears ("(shown above)" after that). Indentation stops at kMaxDepth levels: a deeper node is
/// marked
/// "(continued below)" and its inputs are printed after the current tree, from the left margin again, so
/// that a long chain prints in time and space linear in its length (and without recursion).
class TreePrinter {
public:
  explicit TreePrinter(std::ostringstream &out) : out_(out) {}

  void print(const Value *root, const std::string &label) {
    printTree(root, label);
    while (!continued_.empty()) {
      const Node *node = continued_.front();
      continued_.pop_front();
      printTree(node->output(), "continued: ", /*expand=*/true);
    }
  }

private:
  static constexpr size_t kMaxDepth = 32;

  struct Pending {
    const Value *value;
    const std::string *label;
    size_t depth;
  };

  /// Prints `root` and what it reads, depth first; `expand` prints the inputs of a node marked as continued.
  void printTree(const Value *root, const std::string &rootLabel, bool expand = false) {
    static const std::string kNoLabel;
    std::vector<Pending> stack{{root, &rootLabel, 0}};
    while (!stack.empty()) {
      Pending item = stack.back();
      stack.pop_back();
      for (size_t level = 0; level < item.depth; ++level)
        out_ << " |";
      out_ << describe(item.value, *item.label);
      const Node *node = item.value->owner();
      bool isRoot = item.depth == 0 && expand;
      if (!node || (printedNodes_.count(node) && !isRoot)) {
        out_ << (node ? " (shown above)\n" : "\n");
        continue;
      }
      printedNodes_.insert(node);
      if (node->op().kind() == OpKind::Scan) loops_.push_back({node, idOf(node->output())});
      if (item.depth == kMaxDepth && !node->inputs().empty()) {
        out_ << " (continued below)\n";
        continued_.push_back(node);
        continue;
      }
      out_ << "\n";
      for (size_t i = node->inputs().size(); i-- > 0;)
        stack.push_back({node->input(i), &kNoLabel, item.depth + 1});
    }
  }

public:
  /// The scans printed, each with its id, in the order printed: their bodies follow the graph.
  struct PrintedLoop {
    const Node *node;
    std::string id;
  };
  const std::vector<PrintedLoop> &loops() const { return loops_; }

private:
  std::string describe(const Value *value, const std::string &label) {
    std::string id = idOf(value);
    std::string name = value->name().empty() ? "" : " '" + value->name() + "'";
    std::string type = " : " + value->type().str();
    if (const Node *node = value->owner()) {
      std::string pin = node->pin() == Pin::Host ? " @host" : node->pin() == Pin::Device ? " @device" : "";
      // A node of several outputs: which one, as Theano shows it (".0", ".1", ...).
      std::string which;
      if (node->outputs().size() > 1) {
        auto outputs = node->outputs();
        which = "." + std::to_string(std::find(outputs.begin(), outputs.end(), value) - outputs.begin());
      }
      return label + node->op().str() + which + " [id " + id + "]" + name + type + pin;
    }
    if (value->isConstant())
      return label + "const{" + constantText(value->constant()) + "} [id " + id + "]" + type;
    return label + value->name() + " [id " + id + "]" + type;
  }

  std::string idOf(const Value *value) {
    auto [it, inserted] = ids_.try_emplace(value, letterId(ids_.size()));
    return it->second;
  }

  std::ostringstream &out_;
  std::unordered_map<const Value *, std::string> ids_;
  std::unordered_set<const Node *> printedNodes_;
  std::deque<const Node *> continued_; // nodes whose inputs are still to print, from the left margin
  std::vector<PrintedLoop> loops_;
};

/// The bodies of the scans `printer` printed, each indented under a line naming its scan.
void printLoopBodies(const TreePrinter &printer, std::ostringstream &out) {
  for (const TreePrinter::PrintedLoop &loop : printer.loops()) {
    out << "body of scan [id " << loop.id << "]:\n";
    std::istringstream lines(printIr(loop.node->op().attrs().loop->body));
    for (std::string line; std::getline(lines, line);)
      out << "    " << line << "\n";
  }
}

} // namespace

std::string jsonQuote(const std::string &text) {
  std::string quoted = "\"";
  for (char c : text) {
    switch (c) {
    case '"':
      quoted += "\\\"";
      break;
    case '\\':
      quoted += "\\\\";
      break;
    case '\n':
      quoted += "\\n";
      break;
    case '\t':
      quoted += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
        quoted += buffer;
      } else {
        quoted += c;
      }
    }
  }
  return quoted + "\"";
}

std::string printIr(const Program &program) {
  std::ostringstream out;
  TreePrinter printer(out);
  for (const auto &input : program.inputs)
    printer.print(input.value, "input ");
  for (const auto &param : program.params)
    printer.print(param.value, "param ");
  for (const auto &output : program.outputs)
    printer.print(output.value, "output " + output.name + " = ");
  for (const auto &update : program.updates)
    printer.print(update.value, "update " + program.params[update.param].name + " = ");
  printLoopBodies(printer, out);
  return out.str();
}

std::string printIr(const Graph &graph) {
  std::ostringstream out;
  TreePrinter printer(out);
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    printer.print(graph.outputs()[i], "output " + std::to_string(i) + " = ");
  printLoopBodies(printer, out);
  return out.str();
}

std::string printJson(const Program &program,
                      const std::vector<std::pair<std::string, std::string>> &members) {
  const Graph &graph = program.graph;
  std::ostringstream out;
  auto valueRef = [](const Value *value) {
    return "{\"id\": " + std::to_string(value->id()) + ", \"name\": " + jsonQuote(value->name()) +
           ", \"type\": " + jsonQuote(value->type().str()) + "}";
  };
  out << "{\n  \"inputs\": [";
  for (size_t i = 0; i < program.inputs.size(); ++i)
    out << (i ? ", " : "") << valueRef(program.inputs[i].value);
  out << "],\n  \"params\": [";
  for (size_t i = 0; i < program.params.size(); ++i)
    out << (i ? ", " : "") << valueRef(program.params[i].value);
  out << "],\n  \"outputs\": [";
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const auto &output = program.outputs[i];
    out << (i ? ", " : "") << "{\"id\": " << output.value->id() << ", \"name\": " << jsonQuote(output.name)
        << ", \"type\": " << jsonQuote(output.value->type().str()) << "}";
  }
  out << "],\n  \"updates\": [";
  for (size_t i = 0; i < program.updates.size(); ++i) {
    const auto &update = program.updates[i];
    out << (i ? ", " : "") << "{\"id\": " << update.value->id()
        << ", \"param\": " << jsonQuote(program.params[update.param].name) << "}";
  }
  out << "],\n  \"nodes\": [";
  const auto &order = graph.toposort();
  std::map<int, const Value *> constants; // by id, so the order is deterministic
  for (size_t i = 0; i < order.size(); ++i) {
    const Node &node = *order[i];
    out << (i ? "," : "") << "\n    {\"id\": " << i << ", \"op\": " << jsonQuote(node.op().name())
        << ", \"attrs\": " << jsonQuote(node.op().attrString()) << ", \"place\": \"" << place(node)
        << "\", \"inputs\": [";
    for (size_t j = 0; j < node.inputs().size(); ++j) {
      out << (j ? ", " : "") << node.input(j)->id();
      if (node.input(j)->isConstant()) constants[node.input(j)->id()] = node.input(j);
    }
    out << "]";
    if (node.op().kind() == OpKind::Fused) {
      std::vector<std::string> members = node.op().attrs().body->memberNames();
      out << ", \"members\": [";
      for (size_t j = 0; j < members.size(); ++j)
        out << (j ? ", " : "") << jsonQuote(members[j]);
      out << "]";
    }
    if (node.op().kind() == OpKind::Scan) {
      std::string body = printJson(node.op().attrs().loop->body);
      while (!body.empty() && body.back() == '\n')
        body.pop_back();
      out << ", \"body\": " << body;
    }
    out << ", \"outputs\": [";
    for (size_t j = 0; j < node.outputs().size(); ++j)
      out << (j ? ", " : "") << node.outputs()[j]->id();
    out << "], \"type\": " << jsonQuote(node.output()->type().str())
        << ", \"loc\": " << jsonQuote(node.loc().str()) << "}";
  }
  out << "\n  ],\n  \"constants\": [";
  bool first = true;
  for (const auto &[id, value] : constants) {
    out << (first ? "" : ", ") << "{\"id\": " << value->id()
        << ", \"type\": " << jsonQuote(value->type().str())
        << ", \"value\": " << jsonQuote(constantText(value->constant())) << "}";
    first = false;
  }
  out << "]";
  for (const auto &[name, json] : members)
    out << ",\n  " << jsonQuote(name) << ": " << json;
  out << "\n}\n";
  return out.str();
}

namespace {

/// The DOT statements of `program`'s graph, every id prefixed by `prefix`; each scan's body follows as a
/// cluster of its own, its outputs joined to the scan by dotted edges.
void dotStatements(std::ostringstream &out, const Program &program, const std::string &prefix) {
  const Graph &graph = program.graph;
  std::map<const Value *, std::string> sources;
  for (const auto &input : program.inputs) {
    sources[input.value] = prefix + "v" + std::to_string(input.value->id());
    out << "  " << sources[input.value] << " [shape=ellipse, label=" << jsonQuote(input.name) << "];\n";
  }
  for (const auto &param : program.params) {
    sources[param.value] = prefix + "v" + std::to_string(param.value->id());
    out << "  " << sources[param.value] << " [shape=ellipse, style=bold, label=" << jsonQuote(param.name)
        << "];\n";
  }
  auto nodeId = [&](const Node *node) { return prefix + "n" + std::to_string(node->id()); };
  for (const Node *node : graph.toposort()) {
    std::string id = nodeId(node);
    std::string source = shortSource(*node);
    out << "  " << id << " [shape=box, label="
        << jsonQuote(shortOpName(node->op(), 40) + (source.empty() ? "" : "\n" + source)) << ", tooltip="
        << jsonQuote(node->op().str() + (node->loc().known() ? " at " + node->loc().str() : ""))
        << (place(*node) == "device" ? ", style=filled, fillcolor=lightblue" : "") << "];\n";
    for (const Value *input : node->inputs()) {
      std::string from;
      if (input->owner()) {
        from = nodeId(input->owner());
      } else if (sources.count(input)) {
        from = sources[input];
      } else {
        from = prefix + "c" + std::to_string(input->id());
        sources[input] = from;
        out << "  " << from << " [shape=note, label=" << jsonQuote(constantText(input->constant())) << "];\n";
      }
      out << "  " << from << " -> " << id << " [label=" << jsonQuote(input->type().str()) << "];\n";
    }
    if (node->op().kind() == OpKind::Scan) {
      std::string inner = id + "_";
      out << "  subgraph cluster_" << id << " {\n  label=\"body of scan\";\n  style=dashed;\n";
      dotStatements(out, node->op().attrs().loop->body, inner);
      out << "  }\n";
      for (size_t i = 0; i < node->op().attrs().loop->body.outputs.size(); ++i)
        out << "  " << inner << "out" << i << " -> " << id << " [style=dotted];\n";
    }
  }
  auto sink = [&](const Value *value, const std::string &label, size_t index) {
    std::string id = prefix + "out" + std::to_string(index);
    out << "  " << id << " [shape=ellipse, style=dashed, label=" << jsonQuote(label) << "];\n";
    std::string from = value->owner() ? nodeId(value->owner()) : sources[value];
    out << "  " << from << " -> " << id << ";\n";
  };
  size_t index = 0;
  for (const auto &output : program.outputs)
    sink(output.value, output.name, index++);
  for (const auto &update : program.updates)
    sink(update.value, program.params[update.param].name + " (update)", index++);
}

} // namespace

std::string shortOpName(const Op &op, size_t width) {
  std::string text = op.str();
  if (text.size() <= width) return text;
  if (op.kind() == OpKind::Fused && op.attrs().body) {
    std::vector<std::string> members = op.attrs().body->memberNames();
    std::string count = " ... " + std::to_string(members.size()) + " ops}";
    std::string shown = "fused{";
    for (size_t i = 0; i < members.size(); ++i) {
      std::string next = (i ? ", " : "") + members[i];
      if (shown.size() + next.size() + count.size() > width && i > 0) break;
      shown += next;
    }
    return shown + count;
  }
  return text;
}

std::string shortSource(const Node &node) {
  const SourceLoc &loc = node.loc();
  std::string where;
  if (loc.known()) {
    const std::string &file = *loc.file;
    size_t slash = file.find_last_of('/');
    where = (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" + std::to_string(loc.line);
  }
  const std::string &name = node.output()->name();
  if (!name.empty()) where += (where.empty() ? "" : " ") + name;
  return where;
}

std::string printDot(const Program &program) {
  std::ostringstream out;
  out << "digraph tgc {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n";
  dotStatements(out, program, "");
  out << "}\n";
  return out.str();
}

} // namespace tg::ir
