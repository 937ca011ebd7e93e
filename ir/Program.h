// Program: a compiled script. A step graph (inputs, params, outputs, updates) plus the graph that computes
// the params' initial values. Theano's compiled function with shared variables and updates.
#pragma once

#include "ir/Graph.h"

#include <string>
#include <vector>

namespace tg::ir {

struct Program {
  struct Input {
    std::string name;
    Value *value; // a graph input of `graph`
    SourceLoc loc;
  };
  struct Param {
    std::string name;
    Value *value;   // a graph input of `graph`
    Value *initial; // an output of `init`
    SourceLoc loc;
  };
  struct Output {
    std::string name;
    Value *value; // an output of `graph`
  };
  struct Update {
    size_t param; // index into params
    Value *value; // an output of `graph`
  };

  Graph graph; // inputs: `inputs` then `params` (whatever the order of declaration); outputs: `outputs` then
               // `updates`
  Graph init;  // no inputs; outputs: each param's initial value, in order
  std::vector<Input> inputs;
  std::vector<Param> params;
  std::vector<Output> outputs;
  std::vector<Update> updates;

  /// Re-reads inputs, params, outputs and updates from `graph` after passes replaced its values.
  void syncWithGraph() {
    for (size_t i = 0; i < inputs.size(); ++i)
      inputs[i].value = graph.inputs()[i];
    for (size_t i = 0; i < params.size(); ++i)
      params[i].value = graph.inputs()[inputs.size() + i];
    for (size_t i = 0; i < outputs.size(); ++i)
      outputs[i].value = graph.outputs()[i];
    for (size_t i = 0; i < updates.size(); ++i)
      updates[i].value = graph.outputs()[outputs.size() + i];
  }
};

} // namespace tg::ir
