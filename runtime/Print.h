// Printing arrays the way NumPy does, so that `tgc run` output reads like the NumPy a user compares it with.
#pragma once

#include "runtime/Tensor.h"

#include <string>

namespace tg::runtime {

/// Exactly NumPy 1.24's str(array) with default print options: precision 8 ('maxprec'), scientific notation
/// when the magnitudes ask for it, summarization with '...' above 1000 elements (3 edge items), lines wrapped
/// at 75 columns. A 0-d tensor prints as its scalar (str(np.float32(1.5)) is "1.5"); f32 values print with
/// the shortest digits that identify the f32.
std::string formatArray(const Tensor &tensor);

} // namespace tg::runtime
