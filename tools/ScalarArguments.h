// Numbers given for scalar inputs where a file would be (tgc run --in lr=0.5, the REPL's :bind lr=0.5).
#pragma once

#include "api/Api.h"
#include "ir/TensorData.h"

#include <string>

namespace tg::tools {

/// Whether TEXT in NAME=TEXT gives a number or a truth value rather than a file: TEXT is not a file, and
/// reads as one (0.5, -3, 1e-3, true, false).
bool looksLikeScalar(const std::string &text);

/// The 0-d value of `input` that `text` gives, of the input's dtype: a weak scalar, as a Python number is to
/// NumPy 2 (an integer fits a float input; a fraction does not fit an integer input). A UserError at the
/// input's declaration, starting with `given` (how it was given: "--in k=3.5"), when it does not fit.
ir::TensorData commandLineScalar(const api::Port &input, const std::string &text, const std::string &given);

} // namespace tg::tools
