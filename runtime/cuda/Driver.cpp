#include "runtime/cuda/Driver.h"

#include "ir/SourceLoc.h"

#include <cstdlib>
#include <dlfcn.h>

namespace tg::runtime::cuda {

namespace {

/// The ABI tgc is written against: cuGetProcAddress returns each function as CUDA 12.0 defined it.
constexpr int kDriverAbiVersion = 12000;

using GetProcAddressV2 = CUresult (*)(const char *symbol, void **function, int cudaVersion, uint64_t flags,
                                      int *symbolStatus);
using GetProcAddressV1 = CUresult (*)(const char *symbol, void **function, int cudaVersion, uint64_t flags);

} // namespace

std::string Driver::defaultLibrary() {
  const char *overridden = std::getenv("TGC_CUDA_DRIVER");
  return overridden && *overridden ? overridden : "libcuda.so.1";
}

std::unique_ptr<Driver> Driver::open(const std::string &library) {
  std::unique_ptr<Driver> driver(new Driver());
  driver->library_ = library;
  driver->handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!driver->handle_) {
    const char *reason = dlerror();
    throw ir::UserError("no CUDA driver: cannot open " + library + " (" +
                        (reason ? reason : "unknown reason") + "); is the NVIDIA driver installed?");
  }
  auto lookupV2 = reinterpret_cast<GetProcAddressV2>(dlsym(driver->handle_, "cuGetProcAddress_v2"));
  auto lookupV1 = reinterpret_cast<GetProcAddressV1>(dlsym(driver->handle_, "cuGetProcAddress"));
  if (!lookupV2 && !lookupV1)
    throw ir::UserError("the CUDA driver " + library +
                        " has no cuGetProcAddress: it is older than CUDA 11.3; tgc needs a CUDA 12 driver");
  auto resolve = [&](const char *name, void **function) {
    int status = 0;
    CUresult result = lookupV2 ? lookupV2(name, function, kDriverAbiVersion, 0, &status)
                               : lookupV1(name, function, kDriverAbiVersion, 0);
    if (result != CUDA_SUCCESS || !*function)
      throw ir::UserError("the CUDA driver " + library + " does not provide " + name + " (error " +
                          std::to_string(result) + "); tgc needs a CUDA 12 driver");
  };
#define TG_CUDA_FUNCTION(name, parameters) resolve(#name, reinterpret_cast<void **>(&driver->api_.name));
#include "runtime/cuda/DriverFunctions.def"
  CUresult init = driver->api_.cuInit(0);
  if (init != CUDA_SUCCESS)
    throw ir::UserError("the CUDA driver " + library + " did not initialize: " + driver->describe(init) +
                        (init == CUDA_ERROR_STUB_LIBRARY
                             ? "; this is the toolkit's stub library, not a driver"
                         : init == CUDA_ERROR_NO_DEVICE ? "; no GPU is visible"
                                                        : ""));
  return driver;
}

Driver::~Driver() {
  if (handle_) dlclose(handle_);
}

std::string Driver::version() const {
  int version = 0;
  if (api_.cuDriverGetVersion(&version) != CUDA_SUCCESS) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string Driver::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (api_.cuGetErrorName && api_.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (api_.cuGetErrorString && api_.cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  std::string described = name ? name : "CUDA error " + std::to_string(result);
  if (text) described += std::string(" (") + text + ")";
  return described;
}

void Driver::check(CUresult result, const char *call) const {
  if (result != CUDA_SUCCESS) throw ir::UserError(std::string(call) + " failed: " + describe(result));
}

} // namespace tg::runtime::cuda
