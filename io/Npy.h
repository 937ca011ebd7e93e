// NumPy's .npy file format: `load("x.npy")` constants, `tgc run --in X=FILE.npy` inputs and `--out` results.
//
// Reading accepts format versions 1.0, 2.0 and 3.0, the dtypes '<f4' '<f8' '<i4' '<i8' and '|b1' (big-endian
// '>f4' etc. are byte-swapped; '=' means native), C or Fortran order (converted to C order). A file is read
// as far as its header declares: bytes after the data are neither read nor checked, as NumPy ignores them, so
// reading a stream stops there. Every malformed, truncated, oversized or unsupported file is a UserError that
// names the file; a shape NumPy could not allocate (the element size times its non-zero dimensions above
// 2**63 - 1) is refused as NumPy refuses it.
#pragma once

#include "ir/TensorData.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace tg::io {

using ir::TensorData;

/// Reads a .npy file. Throws UserError("cannot open 'x.npy': ...") when it cannot be read, and UserError
/// ("x.npy: <problem>") when its contents are not a supported .npy array.
TensorData loadNpy(const std::string &path);

/// Reads the rows [begin, end) of a .npy file's first axis, as `rows(n)` gives them for its length n (all of
/// them when `rows` is empty): the
/// rows before are skipped, those after never read (a Fortran-order file is read whole first). The errors of
/// loadNpy, and a UserError for a 0-d array or a range outside [0, n].
TensorData loadNpyRows(const std::string &path,
                       const std::function<std::pair<int64_t, int64_t>(int64_t)> &rows);

/// Parses the bytes of a .npy file; `nameForErrors` starts every error message.
TensorData parseNpy(std::string_view bytes, const std::string &nameForErrors);

/// The bytes np.save writes for `data`: version 1.0 (2.0 when the header needs it), little-endian, C order,
/// the data aligned to 64 bytes.
std::string formatNpy(const TensorData &data);

/// Writes formatNpy(data) to `path`. Throws UserError("cannot write 'x.npy': ...") on failure.
void saveNpy(const std::string &path, const TensorData &data);

} // namespace tg::io
