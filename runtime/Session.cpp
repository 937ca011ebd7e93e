#include "runtime/Session.h"

#include "ir/Assert.h"

namespace tg::runtime {

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

std::vector<Tensor> Session::step(const std::map<std::string, Tensor> &inputs) {
  for (const auto &[name, tensor] : inputs) {
    bool declared = false;
    std::string names;
    for (const ir::Program::Input &input : program_.inputs) {
      declared = declared || input.name == name;
      names += (names.empty() ? "" : ", ") + input.name;
    }
    if (!declared)
      throw ir::UserError("unknown input '" + name + "'; " +
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
    if (found == inputs.end())
      throw ir::UserError("missing input '" + input.name + "': pass it with --in " + input.name + "=FILE.npy",
                          input.loc);
    tensors.push_back(found->second);
  }
  tensors.insert(tensors.end(), params_.begin(), params_.end());
  std::vector<ir::SourceLoc> declarations;
  for (const ir::Program::Input &input : program_.inputs)
    declarations.push_back(input.loc);
  checkInputs(graphInputs, tensors, declarations);

  std::vector<Tensor> results = executor_.run(tensors);
  size_t outputCount = program_.outputs.size();
  TG_ASSERT(results.size() == outputCount + program_.updates.size())
      << "graph outputs are not outputs + updates";
  for (size_t i = 0; i < program_.updates.size(); ++i)
    params_[program_.updates[i].param] = std::move(results[outputCount + i]);
  results.resize(outputCount);
  return results;
}

TransferStats Session::transfers() const {
  TransferStats total = executor_.transfers();
  total.toDevice += uploads_.toDevice;
  total.bytes += uploads_.bytes;
  return total;
}

Tensor Session::param(const std::string &name) const {
  for (size_t i = 0; i < program_.params.size(); ++i)
    if (program_.params[i].name == name)
      return params_[i].memory() == Memory::Host ? params_[i] : executor_.device().download(params_[i]);
  throw ir::UserError("unknown param '" + name + "'");
}

} // namespace tg::runtime
