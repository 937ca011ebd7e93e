// The C API of libraries made ahead of time (tgc_aot.h): a model is the library's program, read back from its
// image, run by the runtime's Session on the CPU or a CUDA device, with the library's kernels as the
// process's kernel supply. Every C++ exception stops here and becomes a status and tgc_last_error().
#include "io/Npy.h"
#include "ir/ProgramArchive.h"
#include "runtime/Print.h"
#include "runtime/Session.h"
#include "runtime/aot/AotKernelSupply.h"
#include "runtime/aot/LibraryImage.h"
#include "runtime/aot/tgc_aot.h"
#include "runtime/cuda/CudaDevice.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

using namespace tg;

namespace {

thread_local std::string lastError;

/// A tgc_port and the storage its pointers point into.
struct Port {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<std::string> symbolNames;
  std::vector<const char *> symbols;
  tgc_port port{};
};

/// A status for a call that failed with `message`.
tgc_status fail(tgc_status status, const std::string &message) {
  lastError = message;
  return status;
}

/// "FILE:LINE:COL: message", as tgc reports an error (without the source line, which the library lacks).
std::string located(const ir::UserError &error) {
  return error.loc.known() ? error.loc.str() + ": " + error.message : error.message;
}

/// An error whose status is its own (a device that cannot open, a call out of place), not the one its kind
/// gives.
struct StatusError : ir::UserError {
  StatusError(tgc_status status, std::string message) : UserError(std::move(message)), status(status) {}
  tgc_status status;
};

/// Runs `body`, turning what it throws into a status.
template <typename Body>
tgc_status guarded(Body &&body) {
  try {
    body();
    lastError.clear();
    return TGC_OK;
  } catch (const StatusError &error) {
    return fail(error.status, located(error));
  } catch (const runtime::InputError &error) {
    return fail(TGC_ERROR_INPUT, located(error));
  } catch (const ir::UserError &error) {
    return fail(TGC_ERROR_RUN, located(error));
  } catch (const std::bad_alloc &) {
    return fail(TGC_ERROR_RUN, "out of memory");
  } catch (const std::exception &error) {
    return fail(TGC_ERROR_INTERNAL, std::string("internal error: ") + error.what());
  }
}

tgc_dtype cDtype(ir::DType dtype) {
  switch (dtype) {
  case ir::DType::F32:
    return TGC_F32;
  case ir::DType::F64:
    return TGC_F64;
  case ir::DType::I32:
    return TGC_I32;
  case ir::DType::I64:
    return TGC_I64;
  case ir::DType::Bool:
    return TGC_BOOL;
  }
  return TGC_F32;
}

ir::DType irDtype(tgc_dtype dtype) {
  switch (dtype) {
  case TGC_F32:
    return ir::DType::F32;
  case TGC_F64:
    return ir::DType::F64;
  case TGC_I32:
    return ir::DType::I32;
  case TGC_I64:
    return ir::DType::I64;
  case TGC_BOOL:
    return ir::DType::Bool;
  }
  throw runtime::InputError("unknown dtype " + std::to_string(static_cast<int>(dtype)) +
                            " (expected a tgc_dtype: TGC_F32 ... TGC_BOOL)");
}

std::vector<int64_t> shapeOf(const tgc_array &array, const std::string &what) {
  if (array.rank < 0 || (array.rank > 0 && !array.shape))
    throw runtime::InputError(what + ": rank " + std::to_string(array.rank) +
                              (array.rank < 0 ? " is negative" : " but no shape (NULL)"));
  return std::vector<int64_t>(array.shape, array.shape + array.rank);
}

/// Whether `array` holds no element (then its data may be NULL).
bool holdsNothing(const std::vector<int64_t> &shape) {
  return std::any_of(shape.begin(), shape.end(), [](int64_t size) { return size == 0; });
}

/// A host tensor over the caller's memory (which it does not own), checked for what can be checked.
runtime::Tensor tensorOver(const tgc_array &array, const std::string &what) {
  std::vector<int64_t> shape = shapeOf(array, what);
  for (int64_t size : shape)
    if (size < 0) throw runtime::InputError(what + ": a negative size in its shape");
  if (!array.data && !holdsNothing(shape)) throw runtime::InputError(what + ": no data (NULL)");
  std::shared_ptr<std::byte> buffer(static_cast<std::byte *>(array.data), [](std::byte *) {});
  auto strides = runtime::Tensor::contiguousStrides(shape);
  return runtime::Tensor::onHost(std::move(buffer), irDtype(array.dtype), std::move(shape),
                                 std::move(strides));
}

/// `tensor` as an array pointing into it (host memory, C order: the caller keeps `tensor`).
tgc_array arrayOf(const runtime::Tensor &tensor) {
  return tgc_array{cDtype(tensor.dtype()), static_cast<int32_t>(tensor.rank()), tensor.shape().data(),
                   tensor.rawData()};
}

} // namespace

struct tgc_model {
  std::unique_ptr<ir::Program> program;
  std::shared_ptr<runtime::Device> device; // null: the CPU
  std::string deviceName = "cpu";
  std::unique_ptr<runtime::Session> session;
  std::vector<Port> ports[3]; // by tgc_port_kind
  std::vector<tgc_port> portViews[3];
  std::vector<runtime::Tensor> held;   // what the last run or step gave
  std::vector<runtime::Tensor> params; // what tgc_model_param gave last, by param

  void describePorts() {
    auto add = [&](tgc_port_kind kind, const std::string &name, const ir::TensorType &type) {
      Port port;
      port.name = name;
      for (const ir::Dim &dim : type.shape) {
        port.shape.push_back(dim.isStatic() ? dim.size() : -1);
        port.symbolNames.push_back(dim.symbol());
      }
      ports[kind].push_back(std::move(port));
    };
    for (const ir::Program::Input &input : program->inputs)
      add(TGC_INPUTS, input.name, input.value->type());
    for (const ir::Program::Param &param : program->params)
      add(TGC_PARAMS, param.name, param.value->type());
    for (const ir::Program::Output &output : program->outputs)
      add(TGC_OUTPUTS, output.name, output.value->type());
    auto types = [&](tgc_port_kind kind, size_t i) -> const ir::TensorType & {
      if (kind == TGC_INPUTS) return program->inputs[i].value->type();
      if (kind == TGC_PARAMS) return program->params[i].value->type();
      return program->outputs[i].value->type();
    };
    for (int kind = 0; kind < 3; ++kind)
      for (size_t i = 0; i < ports[kind].size(); ++i) {
        Port &port = ports[kind][i];
        for (const std::string &symbol : port.symbolNames)
          port.symbols.push_back(symbol.empty() ? nullptr : symbol.c_str());
        const ir::TensorType &type = types(static_cast<tgc_port_kind>(kind), i);
        port.port = tgc_port{port.name.c_str(), cDtype(type.dtype), static_cast<int32_t>(port.shape.size()),
                             port.shape.data(), port.symbols.data()};
        portViews[kind].push_back(port.port);
      }
  }

  void call(const tgc_array *inputs, tgc_array *outputs, bool applyUpdates) {
    if (!inputs && !program->inputs.empty()) throw ir::UserError("no inputs given (inputs is NULL)");
    if (!outputs && !program->outputs.empty())
      throw ir::UserError("nowhere to put the outputs (outputs is NULL)");
    std::map<std::string, runtime::Tensor> named;
    // An input without data is left out: the session says it is missing, unless only the updates read it and
    // this is a run (a learning rate).
    for (size_t i = 0; i < program->inputs.size(); ++i) {
      const std::string what = "input '" + program->inputs[i].name + "'";
      if (inputs[i].data || holdsNothing(shapeOf(inputs[i], what)))
        named[program->inputs[i].name] = tensorOver(inputs[i], what);
    }
    held = session->step(named, applyUpdates);
    for (size_t i = 0; i < held.size(); ++i) {
      held[i] = held[i].contiguous();
      outputs[i] = arrayOf(held[i]);
    }
  }
};

extern "C" {

const char *tgc_last_error(void) {
  return lastError.c_str();
}

tgc_status tgc_model_open(const tgc_library *library, const char *device, tgc_model **model) {
  if (!library || !model) return fail(TGC_ERROR_USAGE, "tgc_model_open: library and model must not be NULL");
  *model = nullptr;
  auto opened = std::make_unique<tgc_model>();
  std::string asked = device ? device : "";
  tgc_status status = guarded([&] {
    std::string_view bytes(reinterpret_cast<const char *>(library->image), library->image_size);
    runtime::aot::LibraryImage image = runtime::aot::LibraryImage::read(bytes);
    if (image.hostKernels.size() != library->kernel_count)
      throw ir::UserError("the library's kernel table does not fit its image");
    runtime::aot::aotKernelSupply().add(image, library->kernels);
    std::string choice = asked.empty() ? image.device : asked;
    if (choice != "cpu" && choice != "cuda" && choice != "auto")
      throw StatusError(TGC_ERROR_USAGE, "unknown device '" + choice + "'; expected cpu, cuda or auto");
    if (choice != "cpu" && !image.deviceProgram.empty()) {
      try {
        opened->device = runtime::cuda::openCudaDevice();
        opened->deviceName = opened->device->describe();
      } catch (const ir::UserError &error) {
        if (choice == "cuda") throw StatusError(TGC_ERROR_DEVICE, "device cuda: " + error.message);
      }
    } else if (choice == "cuda") {
      throw StatusError(TGC_ERROR_DEVICE, "device cuda: the library has no device code: make it with tgc "
                                          "compile --emit=lib --device=cuda (or auto)");
    }
    opened->program = ir::readProgram(opened->device ? image.deviceProgram : image.hostProgram);
    opened->describePorts();
    opened->session = std::make_unique<runtime::Session>(*opened->program, opened->device.get());
  });
  if (status != TGC_OK) return status;
  *model = opened.release();
  return TGC_OK;
}

void tgc_model_close(tgc_model *model) {
  delete model;
}

const char *tgc_model_device(const tgc_model *model) {
  return model ? model->deviceName.c_str() : "";
}

size_t tgc_model_ports(const tgc_model *model, tgc_port_kind kind, const tgc_port **ports) {
  if (!model || kind < TGC_INPUTS || kind > TGC_OUTPUTS) {
    if (ports) *ports = nullptr;
    return 0;
  }
  if (ports) *ports = model->portViews[kind].data();
  return model->portViews[kind].size();
}

tgc_status tgc_model_run(tgc_model *model, const tgc_array *inputs, tgc_array *outputs) {
  if (!model) return fail(TGC_ERROR_USAGE, "tgc_model_run: model is NULL");
  return guarded([&] { model->call(inputs, outputs, false); });
}

tgc_status tgc_model_step(tgc_model *model, const tgc_array *inputs, tgc_array *outputs) {
  if (!model) return fail(TGC_ERROR_USAGE, "tgc_model_step: model is NULL");
  return guarded([&] { model->call(inputs, outputs, true); });
}

tgc_status tgc_model_param(tgc_model *model, size_t index, tgc_array *value) {
  if (!model || !value) return fail(TGC_ERROR_USAGE, "tgc_model_param: model and value must not be NULL");
  if (index >= model->program->params.size())
    return fail(TGC_ERROR_USAGE, "tgc_model_param: the script has " +
                                     std::to_string(model->program->params.size()) + " params, not " +
                                     std::to_string(index + 1));
  return guarded([&] {
    model->params.resize(model->program->params.size());
    model->params[index] = model->session->param(model->program->params[index].name).contiguous();
    *value = arrayOf(model->params[index]);
  });
}

tgc_status tgc_model_set_param(tgc_model *model, size_t index, const tgc_array *value) {
  if (!model || !value) return fail(TGC_ERROR_USAGE, "tgc_model_set_param: model and value must not be NULL");
  if (index >= model->program->params.size())
    return fail(TGC_ERROR_USAGE, "tgc_model_set_param: the script has " +
                                     std::to_string(model->program->params.size()) + " params, not " +
                                     std::to_string(index + 1));
  const std::string &name = model->program->params[index].name;
  return guarded([&] { model->session->setParam(name, tensorOver(*value, "param '" + name + "'")); });
}

tgc_status tgc_array_load_npy(const char *path, tgc_array *array) {
  if (!path || !array) return fail(TGC_ERROR_USAGE, "tgc_array_load_npy: path and array must not be NULL");
  tgc_status status = guarded([&] {
    ir::TensorData data = io::loadNpy(path);
    auto *shape = new int64_t[std::max<size_t>(data.shape.size(), 1)];
    std::copy(data.shape.begin(), data.shape.end(), shape);
    auto *bytes = new unsigned char[std::max<size_t>(data.bytes.size(), 1)];
    std::memcpy(bytes, data.bytes.data(), data.bytes.size());
    *array = tgc_array{cDtype(data.dtype), static_cast<int32_t>(data.shape.size()), shape, bytes};
  });
  return status == TGC_OK ? status : fail(TGC_ERROR_USAGE, lastError);
}

tgc_status tgc_array_save_npy(const char *path, const tgc_array *array) {
  if (!path || !array) return fail(TGC_ERROR_USAGE, "tgc_array_save_npy: path and array must not be NULL");
  tgc_status status = guarded([&] { io::saveNpy(path, tensorOver(*array, path).toData()); });
  return status == TGC_OK ? status : fail(TGC_ERROR_USAGE, lastError);
}

void tgc_array_free(tgc_array *array) {
  if (!array || !array->data) return;
  delete[] static_cast<unsigned char *>(array->data);
  delete[] array->shape;
  array->data = nullptr;
  array->shape = nullptr;
}

size_t tgc_array_format(const tgc_array *array, char *buffer, size_t size) {
  std::string text;
  if (!array || guarded([&] { text = runtime::formatArray(tensorOver(*array, "array")); }) != TGC_OK)
    text = "<" + lastError + ">";
  if (buffer && size > 0) {
    size_t copied = std::min(text.size(), size - 1);
    std::memcpy(buffer, text.data(), copied);
    buffer[copied] = '\0';
  }
  return text.size();
}

} // extern "C"
