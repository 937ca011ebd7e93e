// Loops: scan(step, init or [inits], xs..., length=, reverse=). The step function is inlined once, into a
// body graph of its own (ir/Loop.h) whose inputs are the carries and one slice of each sequence; every value
// of an enclosing graph it reads becomes one more input of the body, an invariant of the loop, through each
// loop between (visible()). The scan node then reads the initial carries, the sequences and those invariants.
#include "frontend/GraphBuilderInternal.h"
#include "ir/Loop.h"

namespace tg::frontend::detail {

using ir::Op;
using ir::OpAttrs;
using ir::OpKind;

namespace {

std::string plural(size_t count, const std::string &word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

} // namespace

ir::Value *GraphBuilder::visible(ir::Value *value, const ir::Graph *owner) {
  if (owner == graph_) return value;
  if (loops_.empty()) return nullptr;
  // Levels: 0 is the graph the outermost loop is in, level i + 1 the body of loops_[i].
  size_t level = 0;
  while (level <= loops_.size() && (level == 0 ? loops_.front().outer : loops_[level - 1].graph) != owner)
    ++level;
  if (level > loops_.size()) return nullptr;
  for (size_t inner = level; inner < loops_.size(); ++inner) {
    LoopFrame &frame = loops_[inner];
    if (value->isConstant()) { // a constant is copied in, where passes can still fold it
      value = frame.graph->addConstant(value->constant(), value->name());
      continue;
    }
    auto [slot, added] = frame.inside.try_emplace(value, nullptr);
    if (added) {
      slot->second = frame.graph->addInput(value->type(), value->name());
      frame.invariants.push_back(value);
    }
    value = slot->second;
  }
  return value;
}

std::vector<TypedValue> GraphBuilder::scan(const CallExpr &call, const Scope &scope) {
  const SourceLoc &loc = call.loc;
  if (call.args.size() < 2)
    fail(loc, "scan() needs a step function and the initial carry, e.g. scan(step, h0, xs)");
  const Binding *function = functionNamed(*call.args[0], scope);
  if (!function) fail(call.args[0]->loc, "scan's first argument must name a function defined with 'def'");
  const DefStmt &def = *function->function;
  std::string name = "'" + def.name.name + "'";

  // The initial carries: one value, or a list of them.
  std::vector<const Expr *> initExprs;
  if (const auto *list = call.args[1]->as<ListExpr>()) {
    if (list->elements.empty()) fail(list->loc, "scan needs at least one carry");
    for (const ExprPtr &element : list->elements)
      initExprs.push_back(element.get());
  } else {
    initExprs.push_back(call.args[1].get());
  }
  std::vector<ir::Value *> inits;
  for (const Expr *init : initExprs)
    inits.push_back(materialize(evaluateTensor(*init, scope, "a scan's initial carry"), init->loc));
  std::vector<ir::Value *> sequences;
  std::vector<SourceLoc> sequenceLocs;
  for (size_t i = 2; i < call.args.size(); ++i) {
    ir::Value *sequence =
        materialize(evaluateTensor(*call.args[i], scope, "a scan's sequence"), call.args[i]->loc);
    if (sequence->type().isScalar())
      fail(call.args[i]->loc, "scan: a sequence is sliced on its first axis, but this one is a scalar (" +
                                  sequence->type().str() + ")");
    sequences.push_back(sequence);
    sequenceLocs.push_back(call.args[i]->loc);
  }

  auto loop = std::make_shared<ir::Loop>();
  loop->carries = inits.size();
  loop->stacked.assign(inits.size(), true);
  const Expr *lengthExpr = nullptr;
  for (const KeywordArg &keyword : call.keywords) {
    if (keyword.name == "reverse") {
      const auto *flag = keyword.value->as<BoolExpr>();
      if (!flag) fail(keyword.value->loc, "expected true or false");
      loop->reverse = flag->value;
    } else if (keyword.name == "length") {
      lengthExpr = keyword.value.get();
    } else {
      fail(keyword.loc,
           "scan() has no parameter named '" + keyword.name + "'; it takes length= and reverse=");
    }
  }
  size_t userSequences = sequences.size();
  if (!lengthExpr && sequences.empty())
    fail(loc, "scan needs a sequence to slice or a number of steps, e.g. scan(step, h0, length=100)");
  if (lengthExpr) {
    if (auto dimension = dimensionName(*lengthExpr, scope)) {
      // A symbolic length: a value whose first axis has it, read as one more sequence the step never sees.
      ir::Value *carrier = dimensionCarrier(*dimension, lengthExpr->loc);
      for (size_t s = 0; s < sequences.size(); ++s) {
        const ir::Dim &leading = sequences[s]->type().shape[0];
        if (leading.isStatic())
          fail(lengthExpr->loc, "scan: length=" + *dimension + ", but the sequence has " +
                                    std::to_string(leading.size()) + " steps (" + sequences[s]->type().str() +
                                    ")");
      }
      sequences.push_back(carrier);
    } else {
      int64_t length = staticInt(*lengthExpr, scope, "scan's length");
      if (length < 0)
        fail(lengthExpr->loc, "scan: length must not be negative, but it is " + std::to_string(length));
      for (size_t s = 0; s < sequences.size(); ++s) {
        const ir::Dim &leading = sequences[s]->type().shape[0];
        if (leading.isStatic() && leading.size() != length)
          fail(sequenceLocs[s], "scan: length=" + std::to_string(length) + ", but this sequence has " +
                                    std::to_string(leading.size()) + " steps (" + sequences[s]->type().str() +
                                    ")");
      }
      loop->length = length;
    }
  }
  loop->sequences = sequences.size();
  size_t expected = inits.size() + userSequences;
  if (def.params.size() != expected)
    fail(loc, "scan: " + name + " takes " + plural(def.params.size(), "parameter") + ", but scan passes " +
                  std::to_string(expected) + ": " + plural(inits.size(), "carry") + " and " +
                  plural(userSequences, "slice") + " (one of each sequence)");
  for (size_t s = 0; s + 1 < sequences.size(); ++s) {
    const ir::Dim &a = sequences[s]->type().shape[0], &b = sequences[s + 1]->type().shape[0];
    if (a.isStatic() && b.isStatic() && a != b)
      fail(sequenceLocs[s + 1], "scan: the sequences differ in length: " + a.str() + " and " + b.str() +
                                    " steps (" + sequences[s]->type().str() + " and " +
                                    sequences[s + 1]->type().str() + ")");
  }

  // The body: the step function inlined into a graph of its own.
  ir::Graph &body = loop->body.graph;
  std::vector<Binding> params;
  std::vector<ir::TensorType> carryTypes;
  for (size_t i = 0; i < sequences.size() + inits.size(); ++i) {
    bool isCarry = i < inits.size();
    ir::TensorType type = isCarry ? inits[i]->type() : sequences[i - inits.size()]->type();
    if (!isCarry) type.shape.erase(type.shape.begin());
    if (isCarry) carryTypes.push_back(type);
    std::string paramName = i < def.params.size() ? def.params[i].name : "length";
    Binding binding;
    binding.kind = Binding::Kind::Tensor;
    binding.tensor = {body.addInput(type, paramName), false};
    binding.graph = &body;
    binding.loc = i < def.params.size() ? def.params[i].loc : loc;
    if (i < def.params.size()) params.push_back(std::move(binding));
  }
  loops_.push_back({&body, graph_, {}, {}});
  ir::Graph *outer = graph_;
  graph_ = &body;
  struct Restore {
    GraphBuilder &builder;
    ir::Graph *outer;
    ~Restore() {
      builder.graph_ = outer;
      builder.loops_.pop_back();
    }
  } restore{*this, outer};
  std::vector<TypedValue> results = inlineFunction(*function, std::move(params), loc);
  if (results.size() != inits.size())
    fail(loc, "scan: " + name + " returns " + plural(results.size(), "value") + ", but there " +
                  (inits.size() == 1 ? "is 1 carry" : "are " + std::to_string(inits.size()) + " carries") +
                  ": the step returns the new carries");
  for (size_t k = 0; k < results.size(); ++k) {
    const ir::TensorType &carry = carryTypes[k];
    std::string which = inits.size() == 1 ? "the carry" : "carry " + std::to_string(k + 1);
    const ir::TensorType &actual = results[k].value->type();
    const SourceLoc &resultLoc = def.results[k]->loc;
    if ((!results[k].weak && actual.dtype != carry.dtype) || actual.shape != carry.shape)
      fail(resultLoc, "scan: " + name + " returns " + actual.str() + " for " + which + ", which is " +
                          carry.str() + " (a step must keep each carry's dtype and shape)");
    ir::Value *value = convert(results[k], carry.dtype, resultLoc);
    body.addOutput(value);
    loop->body.outputs.push_back({def.params[k].name, value});
  }
  for (ir::Value *input : body.inputs())
    loop->body.inputs.push_back({input->name(), input, loc});
  std::vector<ir::Value *> operands = inits;
  operands.insert(operands.end(), sequences.begin(), sequences.end());
  const std::vector<ir::Value *> &invariants = loops_.back().invariants;
  operands.insert(operands.end(), invariants.begin(), invariants.end());

  graph_ = outer; // the node goes where the scan is written
  OpAttrs attrs;
  attrs.loop = std::move(loop);
  ir::Node *node = graph_->addNode(Op(OpKind::Scan, std::move(attrs)), std::move(operands), loc);
  std::vector<TypedValue> stacks;
  for (ir::Value *output : node->outputs())
    stacks.push_back({output, false});
  return stacks;
}

} // namespace tg::frontend::detail
