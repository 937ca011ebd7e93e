// `tgc compile --emit=lib`: a script compiled ahead of time into a library that a C or C++ program links,
// with no compiler at run time (docs/aot.md). Writes, for `-o DIR/NAME`:
//
//   DIR/NAME.h       the C API (runtime/aot/tgc_aot.h) and typed functions for this script: NAME_open,
//                    NAME_run and NAME_step over structs of its inputs and outputs, NAME_get_P/NAME_set_P per
//                    param
//   DIR/libNAME.a    the library: NAME_library (the optimized program, its host kernels compiled for
//                    --host-cpu) and tgc's AOT runtime (libtgc_aot_runtime.a's members: no LLVM, no ANTLR)
//   DIR/NAME.cmake   an imported target tgc::NAME with what it links (BLAS, oneDNN, libgomp, libmvec, ...)
//   DIR/libNAME.so   with --shared, the same as a shared library (linked by the C++ compiler, `c++` or $CXX)
//
// The host kernels are those a run asks for: the program is run once on zeros (symbolic dimensions 2), its
// kernel requests recorded, and every fused node's general kernels (Contiguous, and Strided for any strides)
// added, so that a run on any shapes finds a kernel. With a device (--device=cuda or auto), the program is
// also placed for one and run so on the simulated device, whose requests are the kernels CUDA would load:
// their PTX, every device node's kernels in both layouts and the device layer's own (runtime/DevicePlan.h) go
// in too.
#pragma once

#include "api/Api.h"

#include <string>
#include <vector>

namespace tg::api {

struct LibraryOptions {
  std::string output;             // DIR/NAME: NAME (made a C identifier) prefixes every symbol
  bool shared = false;            // also libNAME.so
  std::string hostCpu = "native"; // the CPU the kernels are compiled for (any x86-64 CPU LLVM knows)
  std::string device =
      "cpu"; // cpu; cuda or auto: also the program placed for a device, its kernels as PTX
             // for Options::gpuArch, opened on cuda (auto: where a GPU answers, else the CPU)
};

/// Compiles `source` for the CPU, and for a device where `library.device` asks (options.device must be null:
/// this places the program itself), and writes the library's files; returns their paths. Error(Compile) for
/// the script, Error(Usage) for a bad name or CPU, Error(Run) when a file cannot be written or the AOT
/// runtime is missing.
std::vector<std::string> writeLibrary(const Source &source, const Options &options,
                                      const LibraryOptions &library);

/// NAME as a C identifier: other characters become '_', and a leading digit gets a '_' before it.
std::string libraryName(const std::string &output);

} // namespace tg::api
