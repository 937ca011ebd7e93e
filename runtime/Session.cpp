#include "runtime/Session.h"

#include "ir/Assert.h"

#include <algorithm>

namespace tg::runtime {

namespace {

/// A C-contiguous copy of a host tensor in a buffer of its own.
Tensor copyOf(const Tensor &value) {
  Tensor copy = Tensor::empty(value.dtype(), value.shape());
  copy.copyFrom(value);
  return copy;
}

} // namespace

Session::Session(const ir::Program &program, Device *device)
    : program_(program), executor_(program.graph, device) {
  params_ = Executor(program.init).run({});
  // A param the placement keeps in device memory is uploaded once, here, not at every step.
  for (size_t i = 0; i < params_.size(); ++i) {
    if (program.params[i].value->type().place != ir::Place::Device) continue;
    params_[i] = executor_.device().upload(params_[i]);
    ++uploads_.toDevice;
    uploads_.bytes += static_cast<size_t>(params_[i].numElements()) * ir::dtypeSize(params_[i].dtype());
  }
  TG_ASSERT(params_.size() == program.params.size())
      << "init computes " << params_.size() << " values for " << program.params.size() << " params";
}

std::vector<Tensor> Session::step(const std::map<std::string, Tensor> &inputs, bool applyUpdates) {
  for (const auto &[name, tensor] : inputs) {
    if (std::any_of(program_.inputs.begin(), program_.inputs.end(),
                    [&](const ir::Program::Input &input) { return input.name == name; }))
      continue;
    std::string names;
    for (const ir::Program::Input &input : program_.inputs)
      names += (names.empty() ? "" : ", ") + input.name;
    throw InputError("unknown input '" + name + "'; " +
                     (names.empty() ? "the script has no inputs" : "the script's inputs are: " + names));
  }

  // Graph inputs are the script's inputs, then its params.
  const std::vector<ir::Value *> &graphInputs = program_.graph.inputs();
  TG_ASSERT(graphInputs.size() == program_.inputs.size() + params_.size())
      << "graph inputs are not inputs + params";
  std::vector<Tensor> tensors;
  for (const ir::Program::Input &input : program_.inputs) {
    TG_ASSERT(graphInputs[tensors.size()] == input.value) << "input '" << input.name << "' out of order";
    auto found = inputs.find(input.name);
    if (found != inputs.end()) {
      tensors.push_back(found->second);
      continue;
    }
    // Without updates, an input that only the updates read (a learning rate) may be left out.
    if (!applyUpdates && readByOutputs_.empty())
      readByOutputs_ = executor_.readsInputs(program_.outputs.size());
    if (!applyUpdates && !readByOutputs_[tensors.size()]) {
      tensors.emplace_back();
      continue;
    }
    throw InputError("missing input '" + input.name + "', declared " + input.value->type().str(), input.loc);
  }
  tensors.insert(tensors.end(), params_.begin(), params_.end());
  std::vector<ir::SourceLoc> declarations;
  for (const ir::Program::Input &input : program_.inputs)
    declarations.push_back(input.loc);
  checkInputs(graphInputs, tensors, declarations);

  size_t outputCount = program_.outputs.size();
  // Without updates, only what the outputs need runs (inference on a training script skips its gradients).
  std::vector<Tensor> results = executor_.run(tensors, applyUpdates ? SIZE_MAX : outputCount);
  TG_ASSERT(results.size() == outputCount + (applyUpdates ? program_.updates.size() : 0))
      << "graph outputs are not outputs + updates";
  for (size_t i = 0; i < program_.updates.size() && applyUpdates; ++i) {
    Tensor &next = results[outputCount + i];
    // A param owns its memory: an update that is an input's own buffer (update w = X) is copied, so that the
    // caller may reuse the input's memory afterwards.
    for (size_t k = 0; k < program_.inputs.size(); ++k)
      if (next.sharesBuffer(tensors[k])) next = copyOf(next);
    params_[program_.updates[i].param] = std::move(next);
  }
  results.resize(outputCount);
  return results;
}

TransferStats Session::transfers() const {
  TransferStats total = executor_.transfers();
  total.toDevice += uploads_.toDevice;
  total.bytes += uploads_.bytes;
  return total;
}

size_t Session::paramIndex(const std::string &name) const {
  std::string names;
  for (size_t i = 0; i < program_.params.size(); ++i) {
    if (program_.params[i].name == name) return i;
    names += (names.empty() ? "" : ", ") + program_.params[i].name;
  }
  throw ir::UserError("unknown param '" + name + "'; " +
                      (names.empty() ? "the script has no params" : "the script's params are: " + names));
}

Tensor Session::param(const std::string &name) const {
  const Tensor &value = params_[paramIndex(name)];
  return value.memory() == Memory::Host ? value : executor_.device().download(value);
}

void Session::setParam(const std::string &name, const Tensor &value) {
  size_t index = paramIndex(name);
  const Tensor &current = params_[index];
  std::string declared = program_.params[index].value->type().str();
  if (value.dtype() != current.dtype())
    throw InputError("param '" + name + "' has dtype " + ir::dtypeName(current.dtype()) + " (" + declared +
                     "), not " + ir::dtypeName(value.dtype()));
  if (value.shape() != current.shape())
    throw InputError("param '" + name + "' has shape " + shapeTuple(current.shape()) + " (" + declared +
                     "), not " + shapeTuple(value.shape()));
  Tensor copy = copyOf(value);
  if (current.memory() == Memory::Host) {
    params_[index] = copy;
    return;
  }
  params_[index] = executor_.device().upload(copy);
  ++uploads_.toDevice;
  uploads_.bytes += static_cast<size_t>(copy.numElements()) * ir::dtypeSize(copy.dtype());
}

} // namespace tg::runtime
