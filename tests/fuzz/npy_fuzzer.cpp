// Fuzzes the .npy reader: any bytes are an array or a UserError naming the problem, never a crash, a read
// out of bounds or an allocation the header's size does not justify.
#include "io/Npy.h"
#include "ir/SourceLoc.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    tg::ir::TensorData array =
        tg::io::parseNpy(std::string_view(reinterpret_cast<const char *>(data), size), "x.npy");
    // What was read is what the header declared: one element size per element, bools 0 or 1.
    if (array.bytes.size() != static_cast<size_t>(array.numElements()) * tg::ir::dtypeSize(array.dtype))
      std::abort();
    if (array.dtype == tg::ir::DType::Bool)
      for (uint8_t byte : array.bytes)
        if (byte > 1) std::abort();
    // And it reads back from what tgc writes.
    if (!(tg::io::parseNpy(tg::io::formatNpy(array), "y.npy") == array)) std::abort();
  } catch (const tg::ir::UserError &) {
  }
  return 0;
}
