// A fake CUDA driver: a shared library with the driver's entry points (cuGetProcAddress_v2 hands them out),
// built by the tests so that tgc's driver layer (runtime/cuda) is exercised without a GPU: loading, device
// queries, module loading with its error log, launches, memory and its exhaustion, and every error path.
// Device memory is host memory, so transfers really copy; a launch runs nothing and is only recorded.
//
// Configured by environment variables, read when cuInit runs:
//   TGC_FAKE_CUDA_DEVICES=N        how many devices answer (default 1; 0 makes cuInit fail with NO_DEVICE)
//   TGC_FAKE_CUDA_MEMORY=BYTES     device memory (default 1 GiB); cuMemAlloc beyond it is OUT_OF_MEMORY
//   TGC_FAKE_CUDA_SMS=N            multiprocessors (default 4; the simulated device has 132)
//   TGC_FAKE_CUDA_MISSING=NAME     cuGetProcAddress does not know this function
//   TGC_FAKE_CUDA_FAIL=NAME:CODE   every call of NAME returns CODE
//   TGC_FAKE_CUDA_LOG=FILE         append each call, one line, to FILE
// and, for tests that load it in-process, by the tgcFakeCuda* functions at the end.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

struct Function {
  std::string name;
};
/// A loaded module owns its functions, as the driver's do: a function handle is valid until cuModuleUnload.
struct Module {
  std::string image;
  std::map<std::string, std::unique_ptr<Function>> functions;
};

struct State {
  std::mutex mutex;
  bool initialized = false;
  int devices = 1;
  int multiprocessors = 4;
  size_t memory = size_t(1) << 30, used = 0;
  std::map<CUdeviceptr, size_t> allocations;
  std::string failName;
  CUresult failCode = 0;
  std::string log;
  std::string logFile;
  int contextRetains = 0;
};

State &state() {
  static State instance;
  return instance;
}

void record(const std::string &line) {
  State &s = state();
  s.log += line + "\n";
  if (s.logFile.empty()) return;
  if (FILE *file = std::fopen(s.logFile.c_str(), "a")) {
    std::fprintf(file, "%s\n", line.c_str());
    std::fclose(file);
  }
}

/// Records the call; returns the configured failure for it, or 0.
CUresult enter(const char *name, const std::string &details = "") {
  record(std::string(name) + (details.empty() ? "" : " " + details));
  State &s = state();
  if (s.failName == name) return s.failCode;
  if (!s.initialized && std::strcmp(name, "cuInit") != 0 && std::strcmp(name, "cuDriverGetVersion") != 0 &&
      std::strncmp(name, "cuGetError", 10) != 0)
    return 3; // CUDA_ERROR_NOT_INITIALIZED
  return 0;
}

const char *errorName(CUresult error) {
  switch (error) {
  case 0:
    return "CUDA_SUCCESS";
  case 1:
    return "CUDA_ERROR_INVALID_VALUE";
  case 2:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3:
    return "CUDA_ERROR_NOT_INITIALIZED";
  case 100:
    return "CUDA_ERROR_NO_DEVICE";
  case 218:
    return "CUDA_ERROR_INVALID_PTX";
  case 500:
    return "CUDA_ERROR_NOT_FOUND";
  case 719:
    return "CUDA_ERROR_LAUNCH_FAILED";
  default:
    return nullptr;
  }
}

const char *errorText(CUresult error) {
  switch (error) {
  case 0:
    return "no error";
  case 1:
    return "invalid argument";
  case 2:
    return "out of memory";
  case 3:
    return "initialization error";
  case 100:
    return "no CUDA-capable device is detected";
  case 218:
    return "a PTX JIT compilation failed";
  case 500:
    return "named symbol not found";
  case 719:
    return "unspecified launch failure";
  default:
    return nullptr;
  }
}

CUresult cuInit(unsigned int) {
  State &s = state();
  std::lock_guard lock(s.mutex);
  // Each cuInit starts from the environment as it is now (a test process opens the driver many times).
  auto variable = [](const char *name) -> std::string {
    const char *value = std::getenv(name);
    return value ? value : "";
  };
  s.logFile = variable("TGC_FAKE_CUDA_LOG");
  s.devices =
      variable("TGC_FAKE_CUDA_DEVICES").empty() ? 1 : std::atoi(variable("TGC_FAKE_CUDA_DEVICES").c_str());
  s.memory = variable("TGC_FAKE_CUDA_MEMORY").empty()
                 ? size_t(1) << 30
                 : std::strtoull(variable("TGC_FAKE_CUDA_MEMORY").c_str(), nullptr, 10);
  s.multiprocessors =
      variable("TGC_FAKE_CUDA_SMS").empty() ? 4 : std::atoi(variable("TGC_FAKE_CUDA_SMS").c_str());
  std::string fail = variable("TGC_FAKE_CUDA_FAIL");
  size_t colon = fail.find(':');
  s.failName = colon == std::string::npos ? "" : fail.substr(0, colon);
  s.failCode = colon == std::string::npos ? 0 : std::atoi(fail.c_str() + colon + 1);
  if (CUresult failed = enter("cuInit")) return failed;
  if (s.devices <= 0) return 100;
  s.initialized = true;
  return 0;
}

CUresult cuDriverGetVersion(int *version) {
  std::lock_guard lock(state().mutex);
  *version = 12040;
  return enter("cuDriverGetVersion");
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  *name = errorName(error);
  return *name ? 0 : 1;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  *text = errorText(error);
  return *text ? 0 : 1;
}

CUresult cuDeviceGetCount(int *count) {
  std::lock_guard lock(state().mutex);
  *count = state().devices;
  return enter("cuDeviceGetCount");
}

CUresult cuDeviceGet(int *device, int ordinal) {
  std::lock_guard lock(state().mutex);
  if (CUresult failed = enter("cuDeviceGet", std::to_string(ordinal))) return failed;
  if (ordinal < 0 || ordinal >= state().devices) return 1;
  *device = ordinal;
  return 0;
}

CUresult cuDeviceGetName(char *name, int length, int device) {
  std::lock_guard lock(state().mutex);
  std::snprintf(name, static_cast<size_t>(length), "Fake GPU %d", device);
  return enter("cuDeviceGetName");
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int) {
  std::lock_guard lock(state().mutex);
  switch (attribute) {
  case 1:
    *value = 1024;
    break; // max threads per block
  case 13:
    *value = 1980000;
    break; // SM clock, kHz
  case 16:
    *value = state().multiprocessors;
    break;
  case 36:
    *value = 2619000;
    break; // memory clock, kHz
  case 37:
    *value = 5120;
    break; // bus width, bits
  case 39:
    *value = 2048;
    break; // threads per multiprocessor
  case 75:
    *value = 9;
    break; // compute capability 9.0
  case 76:
    *value = 0;
    break;
  default:
    *value = 0;
    break;
  }
  return enter("cuDeviceGetAttribute", std::to_string(attribute));
}

CUresult cuDeviceTotalMem(size_t *bytes, int) {
  std::lock_guard lock(state().mutex);
  *bytes = state().memory;
  return enter("cuDeviceTotalMem");
}

CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  std::lock_guard lock(state().mutex);
  static int contexts[8];
  *context = &contexts[device & 7];
  ++state().contextRetains;
  return enter("cuDevicePrimaryCtxRetain");
}

CUresult cuDevicePrimaryCtxRelease(int) {
  std::lock_guard lock(state().mutex);
  --state().contextRetains;
  return enter("cuDevicePrimaryCtxRelease");
}

CUresult cuCtxSetCurrent(void *) {
  std::lock_guard lock(state().mutex);
  return enter("cuCtxSetCurrent");
}

CUresult cuStreamCreate(void **stream, unsigned int flags) {
  std::lock_guard lock(state().mutex);
  static int streams;
  *stream = &streams;
  return enter("cuStreamCreate", "flags=" + std::to_string(flags));
}

CUresult cuStreamDestroy(void *) {
  std::lock_guard lock(state().mutex);
  return enter("cuStreamDestroy");
}

CUresult cuStreamSynchronize(void *) {
  std::lock_guard lock(state().mutex);
  return enter("cuStreamSynchronize");
}

CUresult cuEventCreate(void **event, unsigned int) {
  std::lock_guard lock(state().mutex);
  *event = new int(0);
  return enter("cuEventCreate");
}

CUresult cuEventDestroy(void *event) {
  std::lock_guard lock(state().mutex);
  delete static_cast<int *>(event);
  return enter("cuEventDestroy");
}

CUresult cuEventRecord(void *, void *) {
  std::lock_guard lock(state().mutex);
  return enter("cuEventRecord");
}

CUresult cuEventSynchronize(void *) {
  std::lock_guard lock(state().mutex);
  return enter("cuEventSynchronize");
}

/// Accepts text with a ".entry"; anything else fails as the PTX JIT would, with a message in the error log.
CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned int count, int *options,
                            void **values) {
  std::lock_guard lock(state().mutex);
  std::string text = static_cast<const char *>(image);
  if (CUresult failed = enter("cuModuleLoadDataEx", std::to_string(text.size()) + " bytes")) return failed;
  if (text.find(".entry") != std::string::npos) {
    *module = new Module{text};
    return 0;
  }
  char *log = nullptr;
  size_t logSize = 0;
  for (unsigned int i = 0; i < count; ++i) {
    if (options[i] == 5) log = static_cast<char *>(values[i]);
    if (options[i] == 6) logSize = reinterpret_cast<size_t>(values[i]);
  }
  if (log && logSize) std::snprintf(log, logSize, "ptxas fatal   : fake driver: no .entry in the module");
  return 218;
}

CUresult cuModuleUnload(void *module) {
  std::lock_guard lock(state().mutex);
  delete static_cast<Module *>(module);
  return enter("cuModuleUnload");
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  std::lock_guard lock(state().mutex);
  if (CUresult failed = enter("cuModuleGetFunction", name)) return failed;
  const std::string &image = static_cast<Module *>(module)->image;
  if (image.find(".entry " + std::string(name) + "(") == std::string::npos) return 500;
  std::unique_ptr<Function> &found = static_cast<Module *>(module)->functions[name];
  if (!found) found = std::make_unique<Function>(Function{name});
  *function = found.get();
  return 0;
}

CUresult cuLaunchKernel(void *function, unsigned int gridX, unsigned int gridY, unsigned int gridZ,
                        unsigned int blockX, unsigned int blockY, unsigned int blockZ, unsigned int shared,
                        void *, void **parameters, void **extra) {
  std::lock_guard lock(state().mutex);
  char details[256];
  std::snprintf(details, sizeof details, "%s grid=%ux%ux%u block=%ux%ux%u shared=%u",
                static_cast<Function *>(function)->name.c_str(), gridX, gridY, gridZ, blockX, blockY, blockZ,
                shared);
  if (CUresult failed = enter("cuLaunchKernel", details)) return failed;
  // The parameters as the driver takes them: a pointer per parameter, or (exclusively) one buffer in `extra`:
  // {CU_LAUNCH_PARAM_BUFFER_POINTER (1), buffer, CU_LAUNCH_PARAM_BUFFER_SIZE (2), &size, CU_LAUNCH_PARAM_END
  // (0)}, its size a whole number of the 8-byte parameters of tgc's kernels.
  if (parameters) return extra ? 1 : 0;
  bool packed = extra && extra[0] == reinterpret_cast<void *>(1) && extra[1] &&
                extra[2] == reinterpret_cast<void *>(2) && extra[3] && extra[4] == nullptr;
  return packed && *static_cast<size_t *>(extra[3]) % 8 == 0 && *static_cast<size_t *>(extra[3]) > 0 ? 0 : 1;
}

CUresult cuMemGetInfo(size_t *free, size_t *total) {
  std::lock_guard lock(state().mutex);
  *free = state().memory - state().used;
  *total = state().memory;
  return enter("cuMemGetInfo");
}

CUresult cuMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  State &s = state();
  std::lock_guard lock(s.mutex);
  if (CUresult failed = enter("cuMemAlloc", std::to_string(bytes))) return failed;
  if (bytes == 0) return 1;
  if (bytes > s.memory - s.used) return 2;
  void *memory = std::calloc(1, bytes);
  if (!memory) return 2;
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  s.allocations[*pointer] = bytes;
  s.used += bytes;
  return 0;
}

CUresult cuMemFree(CUdeviceptr pointer) {
  State &s = state();
  std::lock_guard lock(s.mutex);
  if (CUresult failed = enter("cuMemFree")) return failed;
  auto found = s.allocations.find(pointer);
  if (found == s.allocations.end()) return 1;
  s.used -= found->second;
  s.allocations.erase(found);
  std::free(reinterpret_cast<void *>(pointer));
  return 0;
}

CUresult cuMemHostAlloc(void **pointer, size_t bytes, unsigned int) {
  std::lock_guard lock(state().mutex);
  if (CUresult failed = enter("cuMemHostAlloc", std::to_string(bytes))) return failed;
  *pointer = std::malloc(bytes);
  return *pointer ? 0 : 2;
}

CUresult cuMemFreeHost(void *pointer) {
  std::lock_guard lock(state().mutex);
  std::free(pointer);
  return enter("cuMemFreeHost");
}

/// Whether [pointer, pointer + bytes) lies inside one allocation.
bool isDeviceRange(CUdeviceptr pointer, size_t bytes) {
  const auto &allocations = state().allocations;
  auto after = allocations.upper_bound(pointer);
  if (after == allocations.begin()) return false;
  --after;
  return pointer + bytes <= after->first + after->second;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr target, const void *source, size_t bytes, void *) {
  std::lock_guard lock(state().mutex);
  if (CUresult failed = enter("cuMemcpyHtoDAsync", std::to_string(bytes))) return failed;
  if (!isDeviceRange(target, bytes)) return 1;
  std::memcpy(reinterpret_cast<void *>(target), source, bytes);
  return 0;
}

CUresult cuMemcpyDtoHAsync(void *target, CUdeviceptr source, size_t bytes, void *) {
  std::lock_guard lock(state().mutex);
  if (CUresult failed = enter("cuMemcpyDtoHAsync", std::to_string(bytes))) return failed;
  if (!isDeviceRange(source, bytes)) return 1;
  std::memcpy(target, reinterpret_cast<void *>(source), bytes);
  return 0;
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr target, CUdeviceptr source, size_t bytes, void *) {
  std::lock_guard lock(state().mutex);
  if (CUresult failed = enter("cuMemcpyDtoDAsync", std::to_string(bytes))) return failed;
  if (!isDeviceRange(target, bytes) || !isDeviceRange(source, bytes)) return 1;
  std::memmove(reinterpret_cast<void *>(target), reinterpret_cast<void *>(source), bytes);
  return 0;
}

CUresult cuMemsetD8Async(CUdeviceptr target, unsigned char value, size_t bytes, void *) {
  std::lock_guard lock(state().mutex);
  if (CUresult failed = enter("cuMemsetD8Async", std::to_string(bytes))) return failed;
  if (!isDeviceRange(target, bytes)) return 1;
  std::memset(reinterpret_cast<void *>(target), value, bytes);
  return 0;
}

struct Entry {
  const char *name;
  void *function;
};

#define ENTRY(name)                                                                                          \
  { #name, reinterpret_cast < void *>(&name) }
const Entry kEntries[] = {
    ENTRY(cuInit),
    ENTRY(cuDriverGetVersion),
    ENTRY(cuGetErrorName),
    ENTRY(cuGetErrorString),
    ENTRY(cuDeviceGetCount),
    ENTRY(cuDeviceGet),
    ENTRY(cuDeviceGetName),
    ENTRY(cuDeviceGetAttribute),
    ENTRY(cuDeviceTotalMem),
    ENTRY(cuDevicePrimaryCtxRetain),
    ENTRY(cuDevicePrimaryCtxRelease),
    ENTRY(cuCtxSetCurrent),
    ENTRY(cuStreamCreate),
    ENTRY(cuStreamDestroy),
    ENTRY(cuStreamSynchronize),
    ENTRY(cuEventCreate),
    ENTRY(cuEventDestroy),
    ENTRY(cuEventRecord),
    ENTRY(cuEventSynchronize),
    ENTRY(cuModuleLoadDataEx),
    ENTRY(cuModuleUnload),
    ENTRY(cuModuleGetFunction),
    ENTRY(cuLaunchKernel),
    ENTRY(cuMemGetInfo),
    ENTRY(cuMemAlloc),
    ENTRY(cuMemFree),
    ENTRY(cuMemHostAlloc),
    ENTRY(cuMemFreeHost),
    ENTRY(cuMemcpyHtoDAsync),
    ENTRY(cuMemcpyDtoHAsync),
    ENTRY(cuMemcpyDtoDAsync),
    ENTRY(cuMemsetD8Async),
};
#undef ENTRY

} // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char *symbol, void **function, int,
                                                                    uint64_t, int *status) {
  const char *missing = std::getenv("TGC_FAKE_CUDA_MISSING");
  for (const Entry &entry : kEntries)
    if (std::strcmp(entry.name, symbol) == 0 && !(missing && std::strcmp(missing, symbol) == 0)) {
      *function = entry.function;
      if (status) *status = 0;
      return 0;
    }
  *function = nullptr;
  if (status) *status = 1; // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
  return 500;
}

/// The calls made since the last reset, one per line ("cuMemAlloc 4096").
__attribute__((visibility("default"))) const char *tgcFakeCudaLog() {
  return state().log.c_str();
}

/// Forgets the log and makes every call of `function` (nullptr: none) return `code`.
__attribute__((visibility("default"))) void tgcFakeCudaReset(const char *function, int code) {
  std::lock_guard lock(state().mutex);
  state().log.clear();
  state().failName = function ? function : "";
  state().failCode = code;
}

/// Device memory in use (bytes allocated and not freed).
__attribute__((visibility("default"))) size_t tgcFakeCudaMemoryInUse() {
  return state().used;
}

} // extern "C"
