// LibraryImage: what a library made ahead of time holds besides machine code (tgc_aot.h's
// tgc_library::image): the program placed for the CPU and, when asked for, placed for a device; the names of
// the host kernels, in the order of the library's kernel table; the device kernels as PTX, by entry name.
//
//   image = magic "TGCLIB\0\0" | format version (u32) | device asked for | GPU architecture
//           | host program (ir/ProgramArchive.h) | device program (empty: none)
//           | kernel names | PTX modules (entry name, text)
//   strings and archives: length (u64) | bytes; lists: count (u64) | items
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tg::runtime::aot {

struct LibraryImage {
  std::string device;                   // what `tgc compile --device` asked for: cpu, cuda or auto
  std::string gpuArch;                  // the PTX's architecture (sm_90)
  std::string hostProgram;              // the program placed for the CPU (an ir::writeProgram archive)
  std::string deviceProgram;            // placed for a device; empty when the library has no device code
  std::vector<std::string> hostKernels; // kernelName of each host kernel, in the kernel table's order
  std::vector<std::pair<std::string, std::string>> ptx; // entry name, the PTX module holding it

  std::string write() const;
  /// Throws ir::UserError when `bytes` are not an image of this tgc's format.
  static LibraryImage read(std::string_view bytes);
};

} // namespace tg::runtime::aot
