#include "runtime/Executor.h"

#include "ir/Assert.h"
#include "ir/Loop.h"
#include "runtime/FusedLaunch.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <unordered_set>

namespace tg::runtime {

void checkInputs(const std::vector<ir::Value *> &inputs, const std::vector<Tensor> &tensors,
                 const std::vector<ir::SourceLoc> &declarations) {
  TG_ASSERT(inputs.size() == tensors.size())
      << tensors.size() << " tensors for " << inputs.size() << " inputs";
  // The symbols bound so far (a script has a few): no map, and no message built unless one is thrown.
  struct Binding {
    const std::string *symbol;
    int64_t size;
    const ir::Value *input;
  };
  std::vector<Binding> symbols;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::TensorType &type = inputs[i]->type();
    const Tensor &tensor = tensors[i];
    if (!tensor.defined()) continue; // an input the run does not read
    auto name = [&] { return "input '" + inputs[i]->name() + "'"; };
    ir::SourceLoc loc = i < declarations.size() ? declarations[i] : ir::SourceLoc{};
    if (tensor.dtype() != type.dtype)
      throw InputError(name() + " has dtype " + ir::dtypeName(tensor.dtype()) + ", but the script declares " +
                           type.str(),
                       loc);
    if (tensor.rank() != type.rank())
      throw InputError(name() + " has shape " + shapeTuple(tensor.shape()) + ", but the script declares " +
                           type.str(),
                       loc);
    for (size_t d = 0; d < type.rank(); ++d) {
      const ir::Dim &dim = type.shape[d];
      int64_t size = tensor.shape()[d];
      auto prefix = [&] { return name() + ": dimension " + std::to_string(d) + " is "; };
      if (dim.isStatic()) {
        if (size != dim.size())
          throw InputError(prefix() + std::to_string(size) + ", but the script declares " + type.str(), loc);
        continue;
      }
      auto bound = std::find_if(symbols.begin(), symbols.end(),
                                [&](const Binding &binding) { return *binding.symbol == dim.symbol(); });
      if (bound == symbols.end()) {
        symbols.push_back({&dim.symbol(), size, inputs[i]});
      } else if (bound->size != size) {
        throw InputError(prefix() + dim.symbol() + "=" + std::to_string(size) + ", but " + dim.symbol() +
                             "=" + std::to_string(bound->size) + " from input '" + bound->input->name() + "'",
                         loc);
      }
    }
  }
}

Executor::Executor(const ir::Graph &graph, Device *device)
    : graph_(graph), ownDevice_(device ? nullptr : makeSimDevice()),
      device_(device ? device : ownDevice_.get()) {
  auto number = [&](const ir::Value *value) {
    if (slotOf_.try_emplace(value, static_cast<uint32_t>(slots_.size())).second) slots_.emplace_back();
  };
  for (const ir::Value *input : graph.inputs())
    number(input);
  auto numberConstant = [&](const ir::Value *value) {
    if (!value->isConstant() || slotOf_.count(value)) return;
    number(value);
    slots_.back() = Tensor::fromData(value->constant());
  };
  for (const ir::Node *node : graph.toposort())
    for (const ir::Value *input : node->inputs())
      numberConstant(input);
  for (const ir::Value *output : graph.outputs())
    numberConstant(output);
  firstComputed_ = slots_.size();
  for (const ir::Node *node : graph.toposort())
    for (const ir::Value *output : node->outputs())
      number(output);
}

std::vector<bool> Executor::readsInputs(size_t count) {
  const Plan &plan = this->plan(count);
  std::vector<bool> reads(graph_.inputs().size(), false);
  auto read = [&](uint32_t slot) {
    if (slot < reads.size()) reads[slot] = true;
  };
  for (const Step &step : plan.steps)
    for (uint32_t slot : step.arguments)
      read(slot);
  for (uint32_t slot : plan.outputs)
    read(slot);
  return reads;
}

const Executor::Plan &Executor::plan(size_t count) {
  count = std::min(count, graph_.outputs().size());
  if (plans_.size() <= count) plans_.resize(count + 1);
  if (plans_[count]) return *plans_[count];

  // The nodes the outputs need, in the graph's topological order.
  std::vector<const ir::Value *> wanted(graph_.outputs().begin(), graph_.outputs().begin() + count);
  std::unordered_set<const ir::Node *> needed;
  for (size_t i = 0; i < wanted.size(); ++i)
    if (const ir::Node *producer = wanted[i]->owner(); producer && needed.insert(producer).second)
      wanted.insert(wanted.end(), producer->inputs().begin(), producer->inputs().end());
  auto plan = std::make_unique<Plan>();
  for (const ir::Node *node : graph_.toposort())
    if (needed.count(node)) {
      Step step{node, {}, {}, {}, slotOf_.at(node->output()), {}, nullptr, nullptr};
      for (const ir::Value *extra : node->outputs().subspan(1))
        step.extraResults.push_back(slotOf_.at(extra));
      if (node->op().kind() == ir::OpKind::Fused && node->op().place() == ir::Place::Host)
        step.launch = std::make_shared<HostLaunchMemo>();
      if (node->op().kind() == ir::OpKind::Scan)
        step.loopBody = std::make_shared<Executor>(node->op().attrs().loop->body.graph, device_);
      for (const ir::Value *input : node->inputs())
        step.arguments.push_back(slotOf_.at(input));
      plan->steps.push_back(std::move(step));
    }
  for (size_t i = 0; i < count; ++i)
    plan->outputs.push_back(slotOf_.at(graph_.outputs()[i]));

  // Each value dies after its last reader, unless it is an output, an input (the caller's) or a constant.
  std::vector<bool> kept(slots_.size(), false);
  for (uint32_t output : plan->outputs)
    kept[output] = true;
  std::vector<bool> seen(slots_.size(), false);
  for (size_t s = plan->steps.size(); s-- > 0;) {
    Step &step = plan->steps[s];
    // An output no later step reads and the run does not return is not kept at all.
    for (uint32_t &extra : step.extraResults)
      if (!seen[extra] && !kept[extra]) extra = kNoSlot;
    if (!seen[step.result] && !kept[step.result]) step.result = kNoSlot;
    step.takes.assign(step.arguments.size(), false);
    for (size_t a = step.arguments.size(); a-- > 0;) {
      uint32_t slot = step.arguments[a];
      if (slot < firstComputed_ || kept[slot] || seen[slot]) continue;
      seen[slot] = true; // read by no later step: this is its last reader
      bool once = std::count(step.arguments.begin(), step.arguments.end(), slot) == 1;
      if (once)
        step.takes[a] = true;
      else
        step.drops.push_back(slot);
    }
  }
  plans_[count] = std::move(plan);
  return *plans_[count];
}

Tensor Executor::transfer(const ir::Node &node, const Tensor &source) {
  // A constant is placed in device memory once, on the first run.
  bool constant = node.op().kind() == ir::OpKind::ToDevice && node.input(0)->isConstant();
  if (constant)
    if (auto cached = deviceConstants_.find(node.output()); cached != deviceConstants_.end())
      return cached->second;
  bool toDevice = node.op().kind() == ir::OpKind::ToDevice;
  Tensor copy = toDevice ? device_->upload(source) : device_->download(source);
  ++(toDevice ? transfers_.toDevice : transfers_.toHost);
  transfers_.bytes += static_cast<size_t>(copy.numElements()) * ir::dtypeSize(copy.dtype());
  if (constant) deviceConstants_[node.output()] = copy;
  return copy;
}

Tensor Executor::runStep(const Step &step, std::vector<Tensor> &arguments, std::span<Tensor> extraOutputs) {
  const ir::Node &node = *step.node;
  ir::OpKind kind = node.op().kind();
  if (kind == ir::OpKind::ToDevice || kind == ir::OpKind::ToHost) return transfer(node, arguments[0]);
  if (kind == ir::OpKind::Scan) return runLoop(step, arguments, extraOutputs);
  if (node.op().place() == ir::Place::Device) return device_->run(node, arguments, extraOutputs);
  ir::DType dtype = node.output()->type().dtype;
  Tensor result = step.launch ? fusedKernel(node.op(), arguments, dtype, /*reuseInputs=*/true,
                                            step.launch.get(), extraOutputs)
                              : runKernel(node.op(), arguments, dtype, /*reuseInputs=*/true);
  TG_ASSERT(result.dtype() == dtype) << node.op().str() << " computed " << ir::dtypeName(result.dtype())
                                     << ", but its type says " << node.output()->type().str();
  return result;
}

Tensor Executor::runLoop(const Step &step, std::vector<Tensor> &arguments, std::span<Tensor> extraOutputs) {
  const ir::Node &node = *step.node;
  const ir::Loop &loop = *node.op().attrs().loop;
  size_t carries = loop.carries, sequences = loop.sequences;
  int64_t steps = loop.length;
  if (sequences) {
    steps = arguments[carries].shape().at(0);
    for (size_t s = 1; s < sequences; ++s)
      if (arguments[carries + s].shape().at(0) != steps)
        throw ir::UserError("scan: the sequences differ in length: " + std::to_string(steps) + " and " +
                            std::to_string(arguments[carries + s].shape()[0]) + " steps (sequence " +
                            std::to_string(s + 1) + ")");
  }
  // The body reads the carries, a slice of each sequence (a view) and the invariants, as they are.
  std::vector<Tensor> bodyInputs(arguments.begin(), arguments.end());
  auto slice = [&](const Tensor &sequence, int64_t t) {
    std::vector<int64_t> shape(sequence.shape().begin() + 1, sequence.shape().end());
    std::vector<int64_t> strides(sequence.strides().begin() + 1, sequence.strides().end());
    return sequence.view(std::move(shape), std::move(strides), sequence.offset() + t * sequence.strides()[0]);
  };
  // The node's outputs: a stack per stacked carry and per result, allocated when the first step gives their
  // shape (or, without steps, from the types; the carries' own shapes are the initial values').
  size_t outputs = node.outputs().size();
  std::vector<Tensor> stacks(outputs);
  auto place = [&](size_t k) -> bool { return k >= carries || loop.stacked[k]; };
  bool onDevice = node.op().place() == ir::Place::Device;
  auto allocate = [&](size_t k, ir::DType dtype, const std::vector<int64_t> &shape) {
    std::vector<int64_t> stacked{steps};
    stacked.insert(stacked.end(), shape.begin(), shape.end());
    stacks[k] =
        onDevice ? device_->allocate(dtype, std::move(stacked)) : Tensor::empty(dtype, std::move(stacked));
  };
  auto store = [&](size_t k, int64_t t, const Tensor &value) {
    if (onDevice)
      device_->copy(value, slice(stacks[k], t));
    else
      slice(stacks[k], t).copyFrom(value);
  };
  for (int64_t i = 0; i < steps; ++i) {
    int64_t t = loop.reverse ? steps - 1 - i : i;
    for (size_t s = 0; s < sequences; ++s)
      bodyInputs[carries + s] = slice(arguments[carries + s], t);
    std::vector<Tensor> results = step.loopBody->run(bodyInputs, SIZE_MAX, /*synchronize=*/false);
    for (size_t k = 0; k < outputs; ++k) {
      if (!place(k)) continue;
      if (!stacks[k].defined()) allocate(k, results[k].dtype(), results[k].shape());
      store(k, t, results[k]);
    }
    for (size_t k = 0; k < carries; ++k)
      bodyInputs[k] = std::move(results[k]);
  }
  if (steps == 0) { // no step gave the shapes: the types do, their symbols bound by the body's inputs
    std::vector<std::pair<ir::Dim, int64_t>> symbols;
    for (size_t i = 0; i < arguments.size(); ++i) {
      const ir::Shape &declared = loop.body.graph.inputs()[i]->type().shape;
      size_t skip = i >= carries && i < carries + sequences ? 1 : 0;
      for (size_t d = 0; d < declared.size(); ++d)
        symbols.push_back({declared[d], arguments[i].shape()[d + skip]});
    }
    for (size_t k = 0; k < outputs; ++k) {
      if (!place(k)) continue;
      std::vector<int64_t> shape;
      for (const ir::Dim &dim : loop.body.graph.outputs()[k]->type().shape) {
        auto bound =
            std::find_if(symbols.begin(), symbols.end(), [&](const auto &s) { return s.first == dim; });
        TG_ASSERT(dim.isStatic() || bound != symbols.end())
            << "scan: the size " << dim.str() << " of result " << k << " is unknown without a step";
        shape.push_back(dim.isStatic() ? dim.size() : bound->second);
      }
      allocate(k, loop.body.graph.outputs()[k]->type().dtype, shape);
    }
  }
  for (size_t k = 0; k < outputs; ++k)
    if (!place(k)) stacks[k] = bodyInputs[k]; // the last carry
  for (size_t k = 1; k < outputs; ++k)
    extraOutputs[k - 1] = std::move(stacks[k]);
  return std::move(stacks[0]);
}

std::vector<Tensor> Executor::run(const std::vector<Tensor> &inputs, size_t count, bool synchronize) {
  TG_ASSERT(inputs.size() == graph_.inputs().size())
      << inputs.size() << " tensors for " << graph_.inputs().size() << " graph inputs";
  const Plan &plan = this->plan(count);
  HostBufferPool::Scope pooled(buffers_);
  for (size_t i = 0; i < inputs.size(); ++i)
    slots_[i] = inputs[i];
  // Whatever happens, no value of this run outlives it in the slots (an input, an intermediate).
  struct Clear {
    std::vector<Tensor> &slots;
    size_t inputs, firstComputed;
    ~Clear() {
      std::fill(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(inputs), Tensor());
      std::fill(slots.begin() + static_cast<std::ptrdiff_t>(firstComputed), slots.end(), Tensor());
    }
  } clear{slots_, inputs.size(), firstComputed_};

  std::vector<Tensor> arguments, extraOutputs;
  for (const Step &step : plan.steps) {
    arguments.clear();
    for (size_t a = 0; a < step.arguments.size(); ++a) {
      Tensor &value = slots_[step.arguments[a]];
      TG_ASSERT(value.defined()) << "value " << step.node->input(a)->id() << " is used before it is computed";
      arguments.push_back(step.takes[a] ? std::move(value) : value);
    }
    Tensor result;
    extraOutputs.resize(step.extraResults.size());
    try {
      result = runStep(step, arguments, extraOutputs);
    } catch (ir::UserError &error) {
      if (!error.loc.known()) error.loc = step.node->loc();
      throw;
    }
    arguments.clear(); // what this node took over goes now (unless its result is a view of it)
    const ir::TensorType &type = step.node->output()->type();
    TG_ASSERT(result.rank() == type.rank())
        << step.node->op().str() << " computed shape " << shapeTuple(result.shape()) << ", but its type is "
        << type.str();
    for (uint32_t slot : step.drops)
      slots_[slot] = Tensor();
    if (step.result != kNoSlot) slots_[step.result] = std::move(result);
    for (size_t k = 0; k < extraOutputs.size(); ++k) {
      Tensor extra = std::move(extraOutputs[k]); // (an unread one is dropped here)
      if (step.extraResults[k] != kNoSlot) slots_[step.extraResults[k]] = std::move(extra);
    }
  }

  std::vector<Tensor> outputs;
  for (uint32_t output : plan.outputs)
    outputs.push_back(slots_[output]);
  if (synchronize) device_->synchronize(); // a failure of queued device work is this run's
  buffers_.trim();
  return outputs;
}

} // namespace tg::runtime
