// run_model: runs a library made by `tgc compile --emit=lib` as `tgc run` runs its script, and prints what
// `tgc run` prints:
//
//   run_model [--in NAME=FILE.npy]... [--steps N] [--print-every K] [--device cpu|cuda|auto]
//
// It uses the library's C API (tgc_aot.h, in the generated header), which is the same for every script: the
// inputs, params and outputs are read from the model (tgc_model_ports). CMakeLists.txt says which library.
#include TGC_MODEL_HEADER

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "run_model: error: %s\n", message.c_str());
  return 1;
}

/// Prints `name = value`, continuation lines aligned under the first, as tgc run does.
void printNamed(const std::string &name, const tgc_array &value) {
  std::string text(tgc_array_format(&value, nullptr, 0) + 1, '\0');
  tgc_array_format(&value, text.data(), text.size());
  text.pop_back();
  std::string prefix = name + " = ";
  std::string out = prefix;
  for (char c : text) {
    out += c;
    if (c == '\n') out += std::string(prefix.size(), ' ');
  }
  std::printf("%s\n", out.c_str());
}

} // namespace

int main(int argc, char **argv) {
  std::map<std::string, std::string> files;
  long steps = 1, printEvery = 0;
  const char *device = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) return fail("'" + arg + "' needs a value");
    std::string value = argv[++i];
    if (arg == "--in" && value.find('=') != std::string::npos)
      files[value.substr(0, value.find('='))] = value.substr(value.find('=') + 1);
    else if (arg == "--steps")
      steps = std::atol(value.c_str());
    else if (arg == "--print-every")
      printEvery = std::atol(value.c_str());
    else if (arg == "--device")
      device = argv[i];
    else
      return fail("unknown option '" + arg + "'");
  }

  tgc_model *model = nullptr;
  if (tgc_model_open(&TGC_MODEL_LIBRARY, device, &model) != TGC_OK) return fail(tgc_last_error());
  const tgc_port *inputPorts, *paramPorts, *outputPorts;
  size_t inputCount = tgc_model_ports(model, TGC_INPUTS, &inputPorts);
  size_t paramCount = tgc_model_ports(model, TGC_PARAMS, &paramPorts);
  size_t outputCount = tgc_model_ports(model, TGC_OUTPUTS, &outputPorts);

  std::vector<tgc_array> inputs(inputCount);
  for (size_t i = 0; i < inputCount; ++i) {
    auto file = files.find(inputPorts[i].name);
    if (file == files.end())
      return fail(std::string("missing input '") + inputPorts[i].name + "': pass it with --in " +
                  inputPorts[i].name + "=FILE.npy");
    if (tgc_array_load_npy(file->second.c_str(), &inputs[i]) != TGC_OK) return fail(tgc_last_error());
    files.erase(file);
  }
  if (!files.empty()) return fail("the script has no input named '" + files.begin()->first + "'");

  auto isParam = [&](const char *name) {
    for (size_t p = 0; p < paramCount; ++p)
      if (std::string(paramPorts[p].name) == name) return true;
    return false;
  };
  std::vector<tgc_array> outputs(outputCount);
  for (long step = 1; step <= steps; ++step) {
    if (tgc_model_step(model, inputs.data(), outputs.data()) != TGC_OK) return fail(tgc_last_error());
    if (printEvery > 0 && step % printEvery == 0)
      for (size_t o = 0; o < outputCount; ++o)
        printNamed("step " + std::to_string(step) + ": " + outputPorts[o].name +
                       (isParam(outputPorts[o].name) ? " (before the step's update)" : ""),
                   outputs[o]);
  }
  for (size_t o = 0; o < outputCount && steps > 0; ++o)
    printNamed(outputPorts[o].name, outputs[o]);
  for (tgc_array &input : inputs)
    tgc_array_free(&input);
  tgc_model_close(model);
  return 0;
}
