#include "runtime/Executor.h"

#include "ir/Assert.h"
#include "runtime/Kernels.h"

#include <map>

namespace tg::runtime {

void checkInputs(const std::vector<ir::Value *> &inputs, const std::vector<Tensor> &tensors,
                 const std::vector<ir::SourceLoc> &declarations) {
  TG_ASSERT(inputs.size() == tensors.size())
      << tensors.size() << " tensors for " << inputs.size() << " inputs";
  struct Binding {
    int64_t size;
    const ir::Value *input;
  };
  std::map<std::string, Binding> symbols;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::TensorType &type = inputs[i]->type();
    const Tensor &tensor = tensors[i];
    std::string name = "input '" + inputs[i]->name() + "'";
    ir::SourceLoc loc = i < declarations.size() ? declarations[i] : ir::SourceLoc{};
    if (tensor.dtype() != type.dtype)
      throw InputError(name + " has dtype " + ir::dtypeName(tensor.dtype()) + ", but the script declares " +
                           type.str(),
                       loc);
    if (tensor.rank() != type.rank())
      throw InputError(
          name + " has shape " + shapeTuple(tensor.shape()) + ", but the script declares " + type.str(), loc);
    for (size_t d = 0; d < type.rank(); ++d) {
      const ir::Dim &dim = type.shape[d];
      int64_t size = tensor.shape()[d];
      std::string prefix = name + ": dimension " + std::to_string(d) + " is ";
      if (dim.isStatic()) {
        if (size != dim.size())
          throw InputError(prefix + std::to_string(size) + ", but the script declares " + type.str(), loc);
        continue;
      }
      auto [bound, inserted] = symbols.try_emplace(dim.symbol(), Binding{size, inputs[i]});
      if (!inserted && bound->second.size != size)
        throw InputError(prefix + dim.symbol() + "=" + std::to_string(size) + ", but " + dim.symbol() + "=" +
                             std::to_string(bound->second.size) + " from input '" +
                             bound->second.input->name() + "'",
                         loc);
    }
  }
}

Executor::Executor(const ir::Graph &graph, Device *device)
    : graph_(graph), ownDevice_(device ? nullptr : makeSimDevice()),
      device_(device ? device : ownDevice_.get()) {
  for (const ir::Node *node : graph.toposort())
    for (const ir::Value *input : node->inputs())
      ++uses_[input];
  for (const ir::Value *output : graph.outputs())
    ++uses_[output];
}

const Tensor &Executor::constant(const ir::Value *value) {
  auto [cached, inserted] = constants_.try_emplace(value);
  if (inserted) cached->second = Tensor::fromData(value->constant());
  return cached->second;
}

Tensor Executor::transfer(const ir::Node &node, const Tensor &source) {
  // A constant is placed in device memory once, on the first run.
  bool constant = node.op().kind() == ir::OpKind::ToDevice && node.input(0)->isConstant();
  if (constant)
    if (auto cached = constants_.find(node.output()); cached != constants_.end()) return cached->second;
  bool toDevice = node.op().kind() == ir::OpKind::ToDevice;
  Tensor copy = toDevice ? device_->upload(source) : device_->download(source);
  ++(toDevice ? transfers_.toDevice : transfers_.toHost);
  transfers_.bytes += static_cast<size_t>(copy.numElements()) * ir::dtypeSize(copy.dtype());
  if (constant) constants_[node.output()] = copy;
  return copy;
}

std::vector<Tensor> Executor::run(const std::vector<Tensor> &inputs) {
  TG_ASSERT(inputs.size() == graph_.inputs().size())
      << inputs.size() << " tensors for " << graph_.inputs().size() << " graph inputs";
  std::unordered_map<const ir::Value *, Tensor> live;
  std::unordered_map<const ir::Value *, int> remaining = uses_;
  for (size_t i = 0; i < inputs.size(); ++i)
    live[graph_.inputs()[i]] = inputs[i];
  auto valueOf = [&](const ir::Value *value) -> const Tensor & {
    if (value->isConstant()) return constant(value);
    auto found = live.find(value);
    TG_ASSERT(found != live.end()) << "value " << value->id() << " is used before it is computed";
    return found->second;
  };

  for (const ir::Node *node : graph_.toposort()) {
    std::vector<Tensor> arguments;
    for (const ir::Value *input : node->inputs())
      arguments.push_back(valueOf(input));
    const ir::Value *output = node->output();
    std::vector<ir::TensorType> types{output->type()};
    std::vector<Tensor> results;
    try {
      ir::OpKind kind = node->op().kind();
      if (kind == ir::OpKind::ToDevice || kind == ir::OpKind::ToHost) {
        results.push_back(transfer(*node, arguments[0]));
      } else if (node->op().place() == ir::Place::Device) {
        results.push_back(device_->run(*node, arguments));
      } else {
        results = runOp(node->op(), arguments, types);
      }
    } catch (ir::UserError &error) {
      if (!error.loc.known()) error.loc = node->loc();
      throw;
    }
    arguments.clear();
    // Drop each input after its last use; the buffer goes when no view of it is left.
    for (const ir::Value *input : node->inputs())
      if (--remaining[input] == 0) live.erase(input);
    TG_ASSERT(results.size() == 1 && results[0].rank() == output->type().rank())
        << node->op().str() << " computed " << results.size() << " results, the first of shape "
        << (results.empty() ? "()" : shapeTuple(results[0].shape())) << ", but its type is "
        << output->type().str();
    if (remaining[output] > 0) live[output] = std::move(results[0]);
  }

  std::vector<Tensor> outputs;
  for (const ir::Value *output : graph_.outputs())
    outputs.push_back(valueOf(output));
  device_->synchronize(); // a failure of queued device work is this run's
  return outputs;
}

} // namespace tg::runtime
