// The CUDA Driver API, opened at run time: no CUDA header or library is needed to build tgc, and a machine
// without a driver runs everything else. The types below are the driver's ABI (cuda.h's, for the 64-bit
// Linux driver); the functions are listed once, in DriverFunctions.def.
//
//   Driver::open()  dlopen("libcuda.so.1") (or $TGC_CUDA_DRIVER)
//                   -> cuGetProcAddress_v2 (or the older cuGetProcAddress) for every listed function
//                   -> cuInit(0)
//
// Every failure is an ir::UserError that names what was missing or which call failed and why, e.g.
// "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tg::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUjit_option = int;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

// The values tgc uses, as cuda.h defines them.
enum : CUresult {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_UNKNOWN = 999,
};
enum : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13, // kHz
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,       // kHz
  CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37, // bits
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};
enum : CUjit_option {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};
enum : unsigned int {
  CU_STREAM_NON_BLOCKING = 1,
  CU_EVENT_DISABLE_TIMING = 2,
};
// cuLaunchKernel's `extra`: the kernel's parameters as one buffer.
inline void *const CU_LAUNCH_PARAM_END = reinterpret_cast<void *>(0x00);
inline void *const CU_LAUNCH_PARAM_BUFFER_POINTER = reinterpret_cast<void *>(0x01);
inline void *const CU_LAUNCH_PARAM_BUFFER_SIZE = reinterpret_cast<void *>(0x02);

/// One pointer per listed function; all set once Driver::open() returns.
struct DriverApi {
#define TG_CUDA_FUNCTION(name, parameters) CUresult(*name) parameters = nullptr;
#include "runtime/cuda/DriverFunctions.def"
};

class Driver {
public:
  /// The library tgc opens: $TGC_CUDA_DRIVER when set (tests point it at a fake driver), else libcuda.so.1.
  static std::string defaultLibrary();
  /// Opens `library`, resolves every function and initializes the driver. Throws ir::UserError saying what
  /// is missing: the library (no NVIDIA driver installed), a function (a driver too old), or cuInit's error.
  static std::unique_ptr<Driver> open(const std::string &library = defaultLibrary());
  ~Driver();
  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;

  const DriverApi &api() const { return api_; }
  const std::string &library() const { return library_; }
  /// The driver's version as "12.4".
  std::string version() const;

  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)": the error's name and description, as the driver gives them.
  std::string describe(CUresult result) const;
  /// Throws ir::UserError "`call` failed: describe(result)" unless result is CUDA_SUCCESS.
  void check(CUresult result, const char *call) const;

private:
  Driver() = default;
  void *handle_ = nullptr;
  std::string library_;
  DriverApi api_;
};

} // namespace tg::runtime::cuda

/// Calls a driver function through `driver` and checks the result, naming the function in the error:
/// TG_CUDA_CHECK(driver, cuMemAlloc, &pointer, bytes).
#define TG_CUDA_CHECK(driver, function, ...) (driver).check((driver).api().function(__VA_ARGS__), #function)
