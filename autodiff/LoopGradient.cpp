#include "autodiff/LoopGradient.h"

#include "autodiff/Gradient.h"
#include "ir/Assert.h"
#include "ir/Loop.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace tg::autodiff {

using namespace ir;

namespace {

/// Builds the backward loop's nodes in the forward scan's graph, at its location.
class LoopGradientBuilder {
public:
  LoopGradientBuilder(Graph &graph, const Node &scan)
      : graph_(graph), scan_(scan), loop_(*scan.op().attrs().loop), loc_(scan.loc()) {}

  std::vector<Value *> build(const std::vector<Value *> &outputGrads, const std::vector<bool> &wanted);

private:
  Value *apply(Graph &graph, OpKind kind, std::vector<Value *> inputs, OpAttrs attrs = {}) {
    return graph.addNode(Op(kind, std::move(attrs)), std::move(inputs), loc_)->output();
  }
  /// Zeros of `like`'s type (static sizes: a zeros node; else zeros_like).
  Value *zerosLike(Graph &graph, Value *like);
  /// Each carry's stack of values (a copy of the scan stacking them all when it stacks only some).
  std::vector<Value *> stackedCarries();
  /// The carry each step read, stacked in the sequences' order: the initial carry and the carries after
  /// each step, shifted one step back (or forward, for a reverse loop).
  Value *carriesBefore(Value *init, Value *stack);
  /// A per-step gradient transpose(p) @ q (or its transpose), p and q matrices with a static number of
  /// columns: its sum over the steps is P^T Q, one product of their stacks' rows, made after the loop (a
  /// weight's gradient: one large product instead of one of the batch's rows per step).
  struct OuterProduct {
    Value *p, *q;
    bool transposed;
  };
  static std::optional<OuterProduct> outerProduct(Value *term) {
    auto made = [](const Value *value, OpKind kind) {
      return value->owner() && value->owner()->op().kind() == kind;
    };
    bool transposed = made(term, OpKind::Transpose);
    if (transposed) term = term->owner()->input(0);
    if (!made(term, OpKind::Matmul)) return std::nullopt;
    Value *left = term->owner()->input(0), *q = term->owner()->input(1);
    if (!made(left, OpKind::Transpose) || left->type().rank() != 2 || q->type().rank() != 2)
      return std::nullopt;
    Value *p = left->owner()->input(0);
    if (!p->type().shape[1].isStatic() || !q->type().shape[1].isStatic()) return std::nullopt;
    return OuterProduct{p, q, transposed};
  }
  /// An invariant's gradient made after the loop: which one, its product, and where each factor's stack is
  /// (an operand of the backward scan, or one of its outputs).
  struct Pushed {
    size_t invariant;
    OuterProduct product;
    std::vector<std::pair<bool, size_t>> stacks;
  };

  /// The scan again (Loop::extends), also stacking `saved`, values of its body, as per-step results; it takes
  /// the scan's place for every reader.
  Node *savingTwin(const std::vector<const Value *> &saved);

  Graph &graph_;
  const Node &scan_;
  const Loop &loop_;
  SourceLoc loc_;
};

Value *LoopGradientBuilder::zerosLike(Graph &graph, Value *like) {
  const TensorType &type = like->type();
  OpAttrs attrs;
  for (const Dim &dim : type.shape) {
    if (!dim.isStatic()) return apply(graph, OpKind::ZerosLike, {like});
    attrs.shape.push_back(dim.size());
  }
  attrs.dtype = type.dtype;
  return apply(graph, OpKind::Zeros, {}, attrs);
}

std::vector<Value *> LoopGradientBuilder::stackedCarries() {
  std::span<Value *const> outputs = scan_.outputs();
  std::vector<Value *> stacks(outputs.begin(), outputs.begin() + static_cast<std::ptrdiff_t>(loop_.carries));
  if (std::find(loop_.stacked.begin(), loop_.stacked.end(), false) == loop_.stacked.end()) return stacks;
  std::shared_ptr<Loop> all = copyLoop(loop_);
  all->stacked.assign(loop_.carries, true);
  Node *twin = rebuildScan(graph_, scan_, std::move(all), {scan_.inputs().begin(), scan_.inputs().end()});
  return {twin->outputs().begin(), twin->outputs().begin() + static_cast<std::ptrdiff_t>(loop_.carries)};
}

Value *LoopGradientBuilder::carriesBefore(Value *init, Value *stack) {
  // [init, stack...] without its last row (or [stack..., init] without its first): T rows, none for T = 0.
  OpAttrs first;
  first.axes = {0};
  Value *initRow = apply(graph_, OpKind::ExpandDims, {init}, first);
  Value *joined = loop_.reverse ? apply(graph_, OpKind::Concat, {stack, initRow}, first)
                                : apply(graph_, OpKind::Concat, {initRow, stack}, first);
  SliceSpec range;
  range.hasStart = loop_.reverse;
  range.start = loop_.reverse ? 1 : 0;
  range.hasStop = !loop_.reverse;
  range.stop = loop_.reverse ? 0 : -1;
  OpAttrs sliced;
  sliced.slices = {range};
  return apply(graph_, OpKind::Slice, {joined}, sliced);
}

Node *LoopGradientBuilder::savingTwin(const std::vector<const Value *> &saved) {
  std::unordered_map<const Value *, Value *> copies;
  std::shared_ptr<Loop> twin = copyLoop(loop_, &copies);
  twin->extends = scan_.op().attrs().loop;
  for (const Value *value : saved) {
    twin->body.graph.addOutput(copies.at(value));
    twin->body.outputs.push_back({"saved", copies.at(value)});
  }
  Node *node = rebuildScan(graph_, scan_, std::move(twin), {scan_.inputs().begin(), scan_.inputs().end()});
  for (size_t k = 0; k < scan_.outputs().size(); ++k)
    graph_.substitute(scan_.outputs()[k], node->outputs()[k]);
  return node;
}

std::vector<Value *> LoopGradientBuilder::build(const std::vector<Value *> &outputGrads,
                                                const std::vector<bool> &wanted) {
  size_t carries = loop_.carries, sequences = loop_.sequences, invariants = loop_.invariants();
  const std::vector<Value *> &bodyInputs = loop_.body.graph.inputs();
  auto isFloatInput = [&](size_t i) { return isFloat(scan_.input(i)->type().dtype); };
  // Which forward inputs get a gradient: float ones, wanted, that the body reads.
  auto differentiated = [&](size_t i) {
    return wanted[i] && isFloatInput(i) && !bodyInputs[i]->clients().empty();
  };
  std::vector<size_t> floatCarries, gradSequences, gradInvariants;
  for (size_t k = 0; k < carries; ++k)
    if (isFloatInput(k)) floatCarries.push_back(k);
  for (size_t s = 0; s < sequences; ++s)
    if (differentiated(carries + s)) gradSequences.push_back(s);
  for (size_t j = 0; j < invariants; ++j)
    if (differentiated(carries + sequences + j)) gradInvariants.push_back(j);
  std::vector<Value *> stacks = stackedCarries();

  // The forward body's values that depend on a carry or a slice (the others the backward body can compute
  // once, before the loop).
  std::unordered_set<const Value *> varying;
  for (size_t i = 0; i < carries + sequences; ++i)
    varying.insert(bodyInputs[i]);
  for (const Node *node : loop_.body.graph.toposort())
    for (const Value *input : node->inputs())
      if (varying.count(input)) varying.insert(node->outputs().begin(), node->outputs().end());

  // The backward loop, reading the stacks of `saved` (values of the forward body) instead of computing them
  // again; `read` gets the forward body's varying values that its gradient reads and it computes again.
  std::vector<Value *> operands;
  std::vector<Pushed> pushed;
  auto makeBackward = [&](const std::vector<const Value *> &saved, const std::vector<Value *> &savedStacks,
                          std::vector<const Value *> &read) {
    // Its operands: the adjoint carries' initial values, its sequences, its invariants.
    operands.clear();
    for (size_t k : floatCarries) // a carry's last value's gradient enters as its adjoint's initial value
      operands.push_back(!loop_.stacked[k] && outputGrads[k] ? outputGrads[k]
                                                             : zerosLike(graph_, scan_.input(k)));
    for (size_t j : gradInvariants)
      operands.push_back(zerosLike(graph_, scan_.input(carries + sequences + j)));
    std::vector<size_t> stackGrads, resultGrads; // the outputs whose gradients are sequences
    for (size_t k : floatCarries)
      if (loop_.stacked[k] && outputGrads[k]) stackGrads.push_back(k);
    for (size_t r = 0; r < loop_.results(); ++r)
      if (outputGrads[carries + r]) resultGrads.push_back(r);
    for (size_t k : stackGrads)
      operands.push_back(outputGrads[k]);
    for (size_t r : resultGrads)
      operands.push_back(outputGrads[carries + r]);
    for (size_t k = 0; k < carries; ++k)
      operands.push_back(carriesBefore(scan_.input(k), stacks[k]));
    for (size_t s = 0; s < sequences; ++s)
      operands.push_back(scan_.input(carries + s));
    for (size_t k : floatCarries)
      operands.push_back(stacks[k]);
    operands.insert(operands.end(), savedStacks.begin(), savedStacks.end());
    for (size_t j = 0; j < invariants; ++j)
      operands.push_back(scan_.input(carries + sequences + j));

    // Its body: the forward step again, then its vector-Jacobian product.
    auto back = std::make_shared<Loop>();
    Graph &body = back->body.graph;
    auto input = [&](Value *like, const std::string &name, bool slice) {
      TensorType type = like->type();
      if (slice) type.shape.erase(type.shape.begin());
      Value *value = body.addInput(type, name);
      back->body.inputs.push_back({name, value, loc_});
      return value;
    };
    auto nameOf = [&](size_t i) { return loop_.body.inputs[i].name; };
    std::vector<Value *> adjoints, sums, stackSlices, resultSlices, after, savedSlices, forwardInputs;
    for (size_t k : floatCarries)
      adjoints.push_back(input(scan_.input(k), "d" + nameOf(k), false));
    for (size_t j : gradInvariants)
      sums.push_back(
          input(scan_.input(carries + sequences + j), "d" + nameOf(carries + sequences + j), false));
    for (size_t k : stackGrads)
      stackSlices.push_back(input(outputGrads[k], "g" + nameOf(k), true));
    for (size_t r : resultGrads)
      resultSlices.push_back(
          input(outputGrads[carries + r], "g" + loop_.body.outputs[carries + r].name, true));
    for (size_t k = 0; k < carries; ++k)
      forwardInputs.push_back(input(stacks[k], nameOf(k), true));
    for (size_t s = 0; s < sequences; ++s)
      forwardInputs.push_back(input(scan_.input(carries + s), nameOf(carries + s), true));
    for (size_t k : floatCarries) // the carry each step made, which the forward pass kept
      after.push_back(input(stacks[k], nameOf(k) + "_after", true));
    for (Value *stack : savedStacks)
      savedSlices.push_back(input(stack, "saved", true));
    for (size_t j = 0; j < invariants; ++j)
      forwardInputs.push_back(
          input(scan_.input(carries + sequences + j), nameOf(carries + sequences + j), false));
    std::unordered_map<const Value *, Value *> copies;
    size_t forwardStart = body.nodeIdBound();
    std::vector<Value *> step = inlineGraph(body, loop_.body.graph, forwardInputs, &copies);
    size_t forwardEnd = body.nodeIdBound();

    // cost = sum(adjoint * new carry) + sum(gradient * result): its gradient in the step's inputs is the
    // vector-Jacobian product of the step (each term's factor does not depend on them).
    Value *cost = nullptr;
    auto addTerm = [&](Value *factor, Value *value) {
      OpAttrs all;
      for (size_t d = 0; d < value->type().rank(); ++d)
        all.axes.push_back(static_cast<int64_t>(d));
      Value *term = apply(body, OpKind::Sum, {apply(body, OpKind::Mul, {factor, value})}, all);
      if (term->type().dtype != DType::F64) {
        OpAttrs cast;
        cast.dtype = DType::F64;
        term = apply(body, OpKind::Cast, {term}, cast);
      }
      cost = cost ? apply(body, OpKind::Add, {cost, term}) : term;
    };
    for (size_t i = 0; i < floatCarries.size(); ++i) {
      size_t k = floatCarries[i];
      auto found = std::find(stackGrads.begin(), stackGrads.end(), k);
      Value *adjoint = found == stackGrads.end()
                           ? adjoints[i]
                           : apply(body, OpKind::Add, {adjoints[i], stackSlices[found - stackGrads.begin()]});
      addTerm(adjoint, step[k]);
    }
    for (size_t i = 0; i < resultGrads.size(); ++i)
      if (isFloat(step[carries + resultGrads[i]]->type().dtype))
        addTerm(resultSlices[i], step[carries + resultGrads[i]]);
    if (!cost) cost = body.addConstant(TensorData::scalar(DType::F64, 0));

    std::vector<Value *> wrt;
    for (size_t k : floatCarries)
      wrt.push_back(forwardInputs[k]);
    for (size_t s : gradSequences)
      wrt.push_back(forwardInputs[carries + s]);
    for (size_t j : gradInvariants)
      wrt.push_back(forwardInputs[carries + sequences + j]);
    std::vector<Value *> grads = grad(body, cost, wrt, loc_);
    // What the gradient reads of a new carry it reads from the forward pass's stack instead of recomputing it
    // (a tanh's gradient reads its result: the step's own work then goes dead).
    for (size_t i = 0; i < floatCarries.size(); ++i)
      if (Value *made = step[floatCarries[i]]; made->owner()) body.substitute(made, after[i]);
    for (size_t i = 0; i < saved.size(); ++i)
      if (Value *made = copies.at(saved[i]); made->owner()) body.substitute(made, savedSlices[i]);
    size_t at = 0;
    auto output = [&](Value *value, const std::string &name) {
      body.addOutput(value);
      back->body.outputs.push_back({name, value});
    };
    for (size_t i = 0; i < floatCarries.size(); ++i)
      output(grads[at++], adjoints[i]->name());
    std::vector<Value *> sequenceGrads(grads.begin() + static_cast<std::ptrdiff_t>(at),
                                       grads.begin() +
                                           static_cast<std::ptrdiff_t>(at + gradSequences.size()));
    at += gradSequences.size();
    pushed.clear();
    for (size_t i = 0; i < gradInvariants.size(); ++i) {
      Value *term = grads[at++];
      if (std::optional<OuterProduct> product = outerProduct(term)) {
        output(sums[i], sums[i]->name()); // the carry stays as it starts: the sum is made after the loop
        pushed.push_back({i, *product, {}});
        continue;
      }
      output(apply(body, OpKind::Add, {sums[i], term}), sums[i]->name());
    }
    for (size_t i = 0; i < gradSequences.size(); ++i)
      output(sequenceGrads[i], "d" + nameOf(carries + gradSequences[i]));
    // The factors of the pushed products: a slice's stack is an operand already, another value a per-step
    // result of its own.
    size_t firstSequence = floatCarries.size() + gradInvariants.size(), results = gradSequences.size();
    for (Pushed &push : pushed)
      for (Value *factor : {push.product.p, push.product.q}) {
        auto found = std::find(body.inputs().begin(), body.inputs().end(), factor);
        size_t index = static_cast<size_t>(found - body.inputs().begin());
        if (found != body.inputs().end() && index >= firstSequence && index < operands.size() - invariants) {
          push.stacks.push_back({true, index});
          continue;
        }
        output(factor, "factor");
        push.stacks.push_back({false, firstSequence + results++});
      }

    back->carries = floatCarries.size() + gradInvariants.size();
    back->stacked.assign(back->carries, false);
    back->sequences = stackGrads.size() + resultGrads.size() + carries + sequences + floatCarries.size();
    back->reverse = !loop_.reverse;
    back->length = loop_.length;
    back->sequences += saved.size();

    // What the gradient's nodes read of the step computed again.
    body.removeDeadNodes();
    std::unordered_map<const Value *, const Value *> original;
    for (const auto &[value, copy] : copies)
      original[copy] = value;
    for (const Node *node : body.toposort()) {
      if (static_cast<size_t>(node->id()) < forwardEnd) continue;
      for (const Value *value : node->inputs()) {
        const Node *owner = value->owner();
        if (!owner || static_cast<size_t>(owner->id()) < forwardStart ||
            static_cast<size_t>(owner->id()) >= forwardEnd)
          continue;
        const Value *made = original.at(value);
        if (varying.count(made) && std::find(read.begin(), read.end(), made) == read.end())
          read.push_back(made);
      }
    }
    return back;
  };
  std::vector<const Value *> read;
  std::shared_ptr<Loop> back = makeBackward({}, {}, read);
  if (!read.empty() && std::find(loop_.stacked.begin(), loop_.stacked.end(), false) == loop_.stacked.end()) {
    // The forward scan again, also stacking what the backward steps read, in place of the scan: the backward
    // steps then compute only the gradient (for an LSTM, no gate computed twice).
    Node *twin = savingTwin(read);
    stacks.assign(twin->outputs().begin(), twin->outputs().begin() + static_cast<std::ptrdiff_t>(carries));
    std::vector<Value *> savedStacks(
        twin->outputs().begin() + static_cast<std::ptrdiff_t>(scan_.outputs().size()), twin->outputs().end());
    std::vector<const Value *> again;
    back = makeBackward(read, savedStacks, again);
  }
  OpAttrs attrs;
  attrs.loop = std::move(back);
  Node *backward =
      graph_.addNode(Op(OpKind::Scan, std::move(attrs), scan_.op().place()), std::move(operands), loc_);

  std::vector<Value *> result(scan_.inputs().size(), nullptr);
  size_t at = 0;
  for (size_t k : floatCarries) {
    Value *adjoint = backward->outputs()[at++];
    if (wanted[k]) result[k] = adjoint;
  }
  for (size_t j : gradInvariants)
    result[carries + sequences + j] = backward->outputs()[at++];
  for (const Pushed &push : pushed) { // the sum over the steps of p^T q: one product of the stacks
    auto stack = [&](size_t which, Value *factor) {
      auto [isOperand, index] = push.stacks[which];
      Value *stacked = isOperand ? backward->input(index) : backward->outputs()[index];
      OpAttrs rows;
      rows.shape = {-1, factor->type().shape[1].size()};
      return apply(graph_, OpKind::Reshape, {stacked}, rows);
    };
    OpAttrs swap;
    swap.axes = {1, 0};
    Value *total =
        apply(graph_, OpKind::Matmul,
              {apply(graph_, OpKind::Transpose, {stack(0, push.product.p)}, swap), stack(1, push.product.q)});
    if (push.product.transposed) total = apply(graph_, OpKind::Transpose, {total}, swap);
    result[carries + sequences + gradInvariants[push.invariant]] = total;
  }
  for (size_t s : gradSequences)
    result[carries + s] = backward->outputs()[at++];
  return result;
}

} // namespace

std::vector<Value *> loopGradients(Graph &graph, const Node &scan, const std::vector<Value *> &outputGrads,
                                   const std::vector<bool> &wanted) {
  return LoopGradientBuilder(graph, scan).build(outputGrads, wanted);
}

} // namespace tg::autodiff
