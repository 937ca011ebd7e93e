// Session: a compiled program with its state. It initializes the params once, then runs steps: each binds the
// inputs and the params, evaluates the step graph, and applies the updates (all at once, after the step), as
// a Theano function with shared variables and updates.
#pragma once

#include "ir/Program.h"
#include "runtime/Executor.h"

#include <map>
#include <string>
#include <vector>

namespace tg::runtime {

class Session {
public:
  /// Evaluates program.init to give every param its initial value. The program must outlive the session;
  /// `device` (null: a simulated one) runs the device nodes and must outlive it too.
  explicit Session(const ir::Program &program, Device *device = nullptr);

  /// Runs one step on the named inputs and returns the outputs in program.outputs order; then applies the
  /// updates unless `applyUpdates` is false. Throws InputError for a missing or unknown input name and for an
  /// input that does not fit its declared type; without updates, an input that no output reads may be left
  /// out (a learning rate only the updates read).
  std::vector<Tensor> step(const std::map<std::string, Tensor> &inputs, bool applyUpdates = true);

  /// The transfers between host and device made by the steps so far.
  TransferStats transfers() const;

  /// A param's current value, in host memory. Throws UserError for an unknown name.
  Tensor param(const std::string &name) const;
  /// Gives a param a copy of `value` (in device memory when the param lives there). Throws UserError for an
  /// unknown name, InputError when its dtype or shape differs from the param's.
  void setParam(const std::string &name, const Tensor &value);

private:
  /// The index of param `name` in program.params; UserError when there is none.
  size_t paramIndex(const std::string &name) const;

  const ir::Program &program_;
  Executor executor_;
  std::vector<Tensor> params_;      // in program.params order
  std::vector<bool> readByOutputs_; // per graph input, whether the outputs read it (made when first asked)
  TransferStats uploads_;           // params moved to device memory once, at the start
};

} // namespace tg::runtime
