// embed: compiles a .tg script with tgc's library and runs it as `tgc run --device=cpu` does, printing what
// it prints:
//
//   embed SCRIPT [--in NAME=FILE.npy]... [--steps N] [--print-every K]
//
// The script is compiled when the program runs (tgc's JIT); a library made ahead of time needs no compiler
// (examples/aot/).
#include <cstdlib>
#include <iostream>
#include <string>
#include <tgc/tgc.h>

namespace {

/// Prints `name = value`, continuation lines aligned under the first, as tgc run does.
void printNamed(const std::string &name, const tg::runtime::Tensor &value) {
  std::string prefix = name + " = ";
  std::cout << prefix;
  for (char c : tg::runtime::formatArray(value)) {
    std::cout << c;
    if (c == '\n') std::cout << std::string(prefix.size(), ' ');
  }
  std::cout << "\n";
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: embed SCRIPT [--in NAME=FILE.npy]... [--steps N] [--print-every K]\n";
    return 2;
  }
  try {
    tg::api::Program::Values inputs;
    long steps = 1, printEvery = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
      std::string option = argv[i], value = argv[i + 1];
      if (option == "--in" && value.find('=') != std::string::npos)
        inputs[value.substr(0, value.find('='))] =
            tg::runtime::Tensor::fromData(tg::io::loadNpy(value.substr(value.find('=') + 1)));
      else if (option == "--steps")
        steps = std::atol(value.c_str());
      else if (option == "--print-every")
        printEvery = std::atol(value.c_str());
      else
        throw std::invalid_argument("unknown option " + option);
    }
    tg::api::Program program = tg::api::Program::compile(tg::api::Source::file(argv[1]));
    std::vector<tg::runtime::Tensor> outputs;
    for (long step = 1; step <= steps; ++step) {
      outputs = program.step(inputs);
      if (printEvery > 0 && step % printEvery == 0)
        for (size_t i = 0; i < outputs.size(); ++i)
          printNamed("step " + std::to_string(step) + ": " + program.outputs()[i].name, outputs[i]);
    }
    for (size_t i = 0; i < outputs.size(); ++i)
      printNamed(program.outputs()[i].name, outputs[i]);
  } catch (const tg::api::Error &error) {
    std::cerr << error.text; // FILE:LINE:COL: error: ..., the line and a caret, as tgc prints them
    return 1;
  } catch (const std::exception &error) {
    std::cerr << "embed: error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
