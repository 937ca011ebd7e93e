#include "ir/Printers.h"

#include "ir/ScalarGraph.h"

#include <charconv>
#include <map>
#include <sstream>

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

class TreePrinter {
public:
  explicit TreePrinter(std::ostringstream &out) : out_(out) {}

  void print(const Value *value, const std::string &label, const std::string &indent) {
    out_ << indent << describe(value, label);
    const Node *node = value->owner();
    if (!node) {
      out_ << "\n";
      return;
    }
    bool seen = printedNodes_.count(node);
    out_ << (seen ? " (shown above)\n" : "\n");
    if (seen) return;
    printedNodes_[node] = true;
    for (const Value *input : node->inputs())
      print(input, "", indent + " |");
  }

private:
  std::string describe(const Value *value, const std::string &label) {
    std::string id = idOf(value);
    std::string name = value->name().empty() ? "" : " '" + value->name() + "'";
    std::string type = " : " + value->type().str();
    if (const Node *node = value->owner()) {
      std::string pin = node->pin() == Pin::Host ? " @host" : node->pin() == Pin::Device ? " @device" : "";
      return label + node->op().str() + " [id " + id + "]" + name + type + pin;
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
  std::map<const Value *, std::string> ids_;
  std::map<const Node *, bool> printedNodes_;
};

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
    printer.print(input.value, "input ", "");
  for (const auto &param : program.params)
    printer.print(param.value, "param ", "");
  for (const auto &output : program.outputs)
    printer.print(output.value, "output " + output.name + " = ", "");
  for (const auto &update : program.updates)
    printer.print(update.value, "update " + program.params[update.param].name + " = ", "");
  return out.str();
}

std::string printIr(const Graph &graph) {
  std::ostringstream out;
  TreePrinter printer(out);
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    printer.print(graph.outputs()[i], "output " + std::to_string(i) + " = ", "");
  return out.str();
}

std::string printJson(const Program &program, const std::string &profile) {
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
    out << ", \"outputs\": [" << node.output()->id()
        << "], \"type\": " << jsonQuote(node.output()->type().str())
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
  if (!profile.empty()) out << ",\n  \"profile\": " << profile;
  out << "\n}\n";
  return out.str();
}

std::string printDot(const Program &program) {
  const Graph &graph = program.graph;
  std::ostringstream out;
  out << "digraph tgc {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n";
  std::map<const Value *, std::string> sources;
  for (const auto &input : program.inputs) {
    sources[input.value] = "v" + std::to_string(input.value->id());
    out << "  " << sources[input.value] << " [shape=ellipse, label=" << jsonQuote(input.name) << "];\n";
  }
  for (const auto &param : program.params) {
    sources[param.value] = "v" + std::to_string(param.value->id());
    out << "  " << sources[param.value] << " [shape=ellipse, style=bold, label=" << jsonQuote(param.name)
        << "];\n";
  }
  for (const Node *node : graph.toposort()) {
    std::string id = "n" + std::to_string(node->id());
    out << "  " << id << " [shape=box, label=" << jsonQuote(node->op().str())
        << (place(*node) == "device" ? ", style=filled, fillcolor=lightblue" : "") << "];\n";
    for (const Value *input : node->inputs()) {
      std::string from;
      if (input->owner()) {
        from = "n" + std::to_string(input->owner()->id());
      } else if (sources.count(input)) {
        from = sources[input];
      } else {
        from = "c" + std::to_string(input->id());
        sources[input] = from;
        out << "  " << from << " [shape=note, label=" << jsonQuote(constantText(input->constant())) << "];\n";
      }
      out << "  " << from << " -> " << id << " [label=" << jsonQuote(input->type().str()) << "];\n";
    }
  }
  auto sink = [&](const Value *value, const std::string &label, size_t index) {
    std::string id = "out" + std::to_string(index);
    out << "  " << id << " [shape=ellipse, style=dashed, label=" << jsonQuote(label) << "];\n";
    std::string from = value->owner() ? "n" + std::to_string(value->owner()->id()) : sources[value];
    out << "  " << from << " -> " << id << ";\n";
  };
  size_t index = 0;
  for (const auto &output : program.outputs)
    sink(output.value, output.name, index++);
  for (const auto &update : program.updates)
    sink(update.value, program.params[update.param].name + " (update)", index++);
  out << "}\n";
  return out.str();
}

} // namespace tg::ir
