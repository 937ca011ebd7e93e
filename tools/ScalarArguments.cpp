#include "tools/ScalarArguments.h"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <fstream>

namespace tg::tools {

bool looksLikeScalar(const std::string &text) {
  if (text == "true" || text == "false") return true;
  if (std::ifstream(text).good()) return false;
  char *end = nullptr;
  std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size();
}

ir::TensorData commandLineScalar(const api::Port &input, const std::string &text, const std::string &given) {
  if (!input.type.shape.empty())
    throw ir::UserError(given + ": input '" + input.name + "' is " + input.type.str() +
                            "; a number gives only a scalar input (pass an array as a .npy file)",
                        input.loc);
  ir::DType dtype = input.type.dtype;
  bool truth = text == "true" || text == "false";
  if ((dtype == ir::DType::Bool) != truth)
    throw ir::UserError(given + ": input '" + input.name + "' is " + ir::dtypeName(dtype) +
                            (truth ? "; give a number" : "; give true or false"),
                        input.loc);
  if (truth) return ir::TensorData::scalar(dtype, text == "true");
  if (ir::isFloat(dtype)) return ir::TensorData::scalar(dtype, std::strtod(text.c_str(), nullptr));
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  bool fits = error == std::errc() && end == text.data() + text.size() &&
              (dtype != ir::DType::I32 || (value >= INT32_MIN && value <= INT32_MAX));
  if (!fits)
    throw ir::UserError(given + ": input '" + input.name + "' is " + ir::dtypeName(dtype) + "; '" + text +
                            "' is not an integer it can hold",
                        input.loc);
  ir::TensorData data(dtype, {});
  ir::visitDType(dtype,
                 [&](auto zero) { *data.data<decltype(zero)>() = static_cast<decltype(zero)>(value); });
  return data;
}

} // namespace tg::tools
