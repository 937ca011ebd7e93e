// The CUDA driver layer and device against the fake driver the tests build (tests/fake_cuda): loading and
// its failures, device queries, transfers (direct and through pinned staging), module loading, launches,
// the caching allocator and out-of-memory, matmul through a fake cuBLAS.
// The fake's device memory is host memory and its launches run nothing: numbers are checked only where no
// generated kernel computes them (transfers, gemm).
#include "runtime/cuda/CudaDevice.h"

#include "ir/Graph.h"
#include "runtime/Kernels.h"
#include "runtime/cuda/Driver.h"

#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <string>

namespace {

using tg::ir::DType;
using tg::ir::Graph;
using tg::ir::Op;
using tg::ir::OpKind;
using tg::ir::Place;
using tg::ir::TensorData;
using tg::ir::TensorType;
using tg::ir::UserError;
using tg::runtime::Device;
using tg::runtime::Memory;
using tg::runtime::Tensor;
using tg::runtime::cuda::Driver;

/// Points tgc at the fake driver (and no cuBLAS) and clears the fake's switches; keeps the fake loaded so its
/// call log can be read.
class CudaDeviceTest : public testing::Test {
protected:
  void SetUp() override {
    setenv("TGC_CUDA_DRIVER", TGC_FAKE_CUDA, 1);
    setenv("TGC_CUBLAS", "/nonexistent/libcublas.so", 1);
    for (const char *variable : {"TGC_FAKE_CUDA_DEVICES", "TGC_FAKE_CUDA_MEMORY", "TGC_FAKE_CUDA_MISSING",
                                 "TGC_FAKE_CUDA_FAIL", "TGC_FAKE_CUDA_LOG"})
      unsetenv(variable);
    fake_ = dlopen(TGC_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(fake_, nullptr);
    reset_ = reinterpret_cast<void (*)(const char *, int)>(dlsym(fake_, "tgcFakeCudaReset"));
    log_ = reinterpret_cast<const char *(*)()>(dlsym(fake_, "tgcFakeCudaLog"));
    inUse_ = reinterpret_cast<size_t (*)()>(dlsym(fake_, "tgcFakeCudaMemoryInUse"));
    reset_(nullptr, 0);
  }
  void TearDown() override {
    unsetenv("TGC_CUDA_DRIVER");
    unsetenv("TGC_CUBLAS");
    dlclose(fake_);
  }

  std::string log() const { return log_(); }
  size_t count(const std::string &call) const {
    size_t found = 0;
    std::string text = log();
    for (size_t at = text.find(call); at != std::string::npos; at = text.find(call, at + 1))
      ++found;
    return found;
  }

  void *fake_ = nullptr;
  void (*reset_)(const char *, int) = nullptr;
  const char *(*log_)() = nullptr;
  size_t (*inUse_)() = nullptr;
};

Tensor range(DType dtype, std::vector<int64_t> shape) {
  TensorData data(dtype, std::move(shape));
  for (int64_t i = 0; i < data.numElements(); ++i)
    data.set(i, static_cast<double>(i % 97) - 13);
  return Tensor::fromData(data);
}

std::string messageOf(const std::function<void()> &action) {
  try {
    action();
  } catch (const UserError &error) {
    return error.message;
  }
  return "(no error)";
}

TEST_F(CudaDeviceTest, AMissingDriverSaysWhatIsMissing) {
  std::string message = messageOf([] { Driver::open("/nonexistent/libcuda.so.1"); });
  EXPECT_NE(message.find("no CUDA driver: cannot open /nonexistent/libcuda.so.1"), std::string::npos)
      << message;
  EXPECT_NE(message.find("is the NVIDIA driver installed?"), std::string::npos) << message;
}

TEST_F(CudaDeviceTest, OpensTheDriverAndResolvesEveryFunction) {
  std::unique_ptr<Driver> driver = Driver::open();
  EXPECT_EQ(driver->version(), "12.4");
  EXPECT_EQ(driver->describe(2), "CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  EXPECT_EQ(messageOf([&] { TG_CUDA_CHECK(*driver, cuMemFree, 12345); }),
            "cuMemFree failed: CUDA_ERROR_INVALID_VALUE (invalid argument)");
}

TEST_F(CudaDeviceTest, ADriverWithoutAFunctionIsTooOld) {
  setenv("TGC_FAKE_CUDA_MISSING", "cuLaunchKernel", 1);
  std::string message = messageOf([] { Driver::open(); });
  EXPECT_NE(message.find("does not provide cuLaunchKernel"), std::string::npos) << message;
}

TEST_F(CudaDeviceTest, NoGpuIsAClearError) {
  setenv("TGC_FAKE_CUDA_DEVICES", "0", 1);
  std::string message = messageOf([] { tg::runtime::cuda::openCudaDevice(); });
  EXPECT_NE(message.find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << message;
  EXPECT_NE(message.find("no GPU is visible"), std::string::npos) << message;
}

TEST_F(CudaDeviceTest, DescribesTheGpu) {
  std::unique_ptr<Device> device = tg::runtime::cuda::openCudaDevice();
  EXPECT_NE(device->describe().find("cuda: Fake GPU 0 (sm_90, 4 SMs, 1 GiB, driver 12.4"), std::string::npos)
      << device->describe();
  EXPECT_EQ(count("cuDevicePrimaryCtxRetain"), 1u);
  EXPECT_EQ(count("cuStreamCreate flags=1"), 1u);
  // What the cost model of placement is told (the fake driver's clocks and bus are an H200's).
  std::optional<tg::runtime::GpuAttributes> gpu = device->gpuAttributes();
  ASSERT_TRUE(gpu.has_value());
  EXPECT_EQ(gpu->multiprocessors, 4);
  EXPECT_EQ(gpu->computeMajor, 9);
  EXPECT_DOUBLE_EQ(gpu->clockHz, 1.98e9);
  EXPECT_DOUBLE_EQ(gpu->memoryClockHz, 2.619e9);
  EXPECT_EQ(gpu->memoryBusBits, 5120);
  device.reset();
  EXPECT_EQ(count("cuDevicePrimaryCtxRelease"), 1u);
  EXPECT_EQ(count("cuStreamDestroy"), 1u);
}

TEST_F(CudaDeviceTest, TransfersRoundTripDirectlyAndThroughStaging) {
  std::unique_ptr<Device> device = tg::runtime::cuda::openCudaDevice();
  // 12 bytes go directly; 10 MiB in three chunks through the two pinned buffers.
  for (std::vector<int64_t> shape : {std::vector<int64_t>{3}, std::vector<int64_t>{1024, 2560}}) {
    Tensor host = range(DType::F32, shape);
    Tensor onDevice = device->upload(host);
    EXPECT_EQ(onDevice.memory(), Memory::Device);
    EXPECT_EQ(device->download(onDevice).toData(), host.toData());
  }
  EXPECT_EQ(count("cuMemHostAlloc"), 2u);
  EXPECT_EQ(count("cuMemcpyHtoDAsync 4194304"), 2u);
  EXPECT_EQ(count("cuMemcpyHtoDAsync 2097152"), 1u);
  // A transposed view goes up as a contiguous copy of what it shows.
  Tensor matrix = range(DType::I64, {3, 5}), transposed = matrix.permuted({1, 0});
  EXPECT_EQ(device->download(device->upload(transposed)).toData(), transposed.contiguous().toData());
}

TEST_F(CudaDeviceTest, TheAllocatorReusesBlocksAndFreesThemAtTheEnd) {
  std::unique_ptr<Device> device = tg::runtime::cuda::openCudaDevice();
  for (int i = 0; i < 5; ++i)
    device->upload(range(DType::F64, {1000}));
  EXPECT_EQ(count("cuMemAlloc 8192"), 1u) << log(); // 8000 bytes, in 512-byte granules
  device.reset();
  EXPECT_EQ(inUse_(), 0u);
}

TEST_F(CudaDeviceTest, OutOfDeviceMemoryIsAClearError) {
  setenv("TGC_FAKE_CUDA_MEMORY", "1048576", 1);
  std::unique_ptr<Device> device = tg::runtime::cuda::openCudaDevice();
  std::string message = messageOf([&] { device->upload(range(DType::F32, {1024, 1024})); });
  EXPECT_NE(message.find("out of device memory: cannot allocate 4 MiB (1 MiB free of 1 MiB"),
            std::string::npos)
      << message;
}

TEST_F(CudaDeviceTest, LaunchesAGeneratedKernel) {
  Graph graph;
  tg::ir::Value *x = graph.addInput(TensorType{DType::F32, {tg::ir::Dim::of(1000)}, Place::Device}, "x");
  tg::ir::Node *add = graph.addNode(Op(OpKind::Add, {}, Place::Device), {x, x});
  std::unique_ptr<Device> device = tg::runtime::cuda::openCudaDevice();
  Tensor result = device->run(*add, {device->upload(range(DType::F32, {1000}))});
  EXPECT_EQ(result.memory(), Memory::Device);
  EXPECT_EQ(result.shape(), std::vector<int64_t>{1000});
  EXPECT_EQ(count("cuModuleLoadDataEx"), 1u);
  EXPECT_EQ(count("cuModuleGetFunction tgc_fused_"), 1u);
  EXPECT_EQ(count("grid=4x1x1 block=256x1x1"), 1u) << log(); // 1000 elements, 256 a block
  device->run(*add, {device->upload(range(DType::F32, {1000}))});
  EXPECT_EQ(count("cuModuleLoadDataEx"), 1u); // loaded once
  EXPECT_EQ(count("cuLaunchKernel"), 2u);
}

TEST_F(CudaDeviceTest, AFailedModuleLoadNamesTheKernelAndTheError) {
  setenv("TGC_FAKE_CUDA_FAIL", "cuModuleLoadDataEx:218", 1);
  Graph graph;
  tg::ir::Value *x = graph.addInput(TensorType{DType::F32, {tg::ir::Dim::of(4)}, Place::Device}, "x");
  tg::ir::Node *neg = graph.addNode(Op(OpKind::Neg, {}, Place::Device), {x});
  std::unique_ptr<Device> device = tg::runtime::cuda::openCudaDevice();
  Tensor input = device->upload(range(DType::F32, {4}));
  std::string message = messageOf([&] { device->run(*neg, {input}); });
  EXPECT_NE(message.find("cuModuleLoadDataEx failed for kernel tgc_fused_"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDA_ERROR_INVALID_PTX"), std::string::npos) << message;
}

TEST_F(CudaDeviceTest, MatmulGoesThroughCublasWithRowMajorOperands) {
  setenv("TGC_CUBLAS", TGC_FAKE_CUBLAS, 1);
  Graph graph;
  auto matrix = [&](int64_t rows, int64_t cols, const char *name) {
    return graph.addInput(
        TensorType{DType::F64, {tg::ir::Dim::of(rows), tg::ir::Dim::of(cols)}, Place::Device}, name);
  };
  tg::ir::Node *product =
      graph.addNode(Op(OpKind::Matmul, {}, Place::Device), {matrix(2, 3, "a"), matrix(3, 4, "b")});
  std::unique_ptr<Device> device = tg::runtime::cuda::openCudaDevice();
  Tensor a = range(DType::F64, {2, 3}), b = range(DType::F64, {3, 4});
  Tensor expected = tg::runtime::runOp(product->op().on(Place::Host), {a, b}, {product->output()->type()})[0];
  Tensor result = device->run(*product, {device->upload(a), device->upload(b)});
  EXPECT_EQ(device->download(result).toData(), expected.toData());
  // Transposed views are read in place (cuBLAS's T), not copied.
  Tensor at = range(DType::F64, {3, 2}), bt = range(DType::F64, {4, 3});
  Tensor viewA = device->upload(at).permuted({1, 0}), viewB = device->upload(bt).permuted({1, 0});
  size_t launches = count("cuLaunchKernel");
  result = device->run(*product, {viewA, viewB});
  EXPECT_EQ(count("cuLaunchKernel"), launches);
  expected = tg::runtime::runOp(product->op().on(Place::Host), {at.permuted({1, 0}), bt.permuted({1, 0})},
                                {product->output()->type()})[0];
  EXPECT_EQ(device->download(result).toData(), expected.toData());
  EXPECT_NE(device->report().find("2 gemms"), std::string::npos) << device->report();
}

TEST_F(CudaDeviceTest, WithoutCublasMatmulLaunchesTheGeneratedKernel) {
  Graph graph;
  auto matrix = [&](int64_t rows, int64_t cols, const char *name) {
    return graph.addInput(
        TensorType{DType::F32, {tg::ir::Dim::of(rows), tg::ir::Dim::of(cols)}, Place::Device}, name);
  };
  tg::ir::Node *product =
      graph.addNode(Op(OpKind::Matmul, {}, Place::Device), {matrix(100, 3, "a"), matrix(3, 70, "b")});
  std::unique_ptr<Device> device = tg::runtime::cuda::openCudaDevice();
  Tensor result = device->run(
      *product, {device->upload(range(DType::F32, {100, 3})), device->upload(range(DType::F32, {3, 70}))});
  EXPECT_EQ(result.shape(), (std::vector<int64_t>{100, 70}));
  // 64 x 64 outputs a block: 2 x 2 blocks of 16 x 16 threads.
  EXPECT_EQ(count("cuLaunchKernel tgc_matmul_f32 grid=2x2x1 block=16x16x1"), 1u) << log();
  EXPECT_NE(device->report().find("1 generated matmuls"), std::string::npos) << device->report();
}

TEST_F(CudaDeviceTest, IntegerMatmulRunsTheGeneratedKernel) {
  Graph graph;
  auto matrix = [&](int64_t rows, int64_t cols, const char *name) {
    return graph.addInput(
        TensorType{DType::I32, {tg::ir::Dim::of(rows), tg::ir::Dim::of(cols)}, Place::Device}, name);
  };
  tg::ir::Node *product =
      graph.addNode(Op(OpKind::Matmul, {}, Place::Device), {matrix(2, 3, "a"), matrix(3, 4, "b")});
  std::unique_ptr<Device> device = tg::runtime::cuda::openCudaDevice();
  Tensor result = device->run(
      *product, {device->upload(range(DType::I32, {2, 3})), device->upload(range(DType::I32, {3, 4}))});
  EXPECT_EQ(result.shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(count("cuLaunchKernel tgc_matmul_i32 grid=1x1x1 block=16x16x1"), 1u) << log();
  EXPECT_NE(device->report().find("1 generated matmuls"), std::string::npos) << device->report();
}

TEST_F(CudaDeviceTest, ConcatAndStackCopyDeviceMemory) {
  // Along axis 0 of contiguous inputs, the parts are copied as they are (cuMemcpyDtoDAsync): exact numbers
  // even on the fake driver. Along another axis, each part is first made contiguous by a kernel.
  Graph graph;
  TensorType type{DType::F32, {tg::ir::Dim::of(2), tg::ir::Dim::of(5)}, Place::Device};
  tg::ir::Value *a = graph.addInput(type, "a"), *b = graph.addInput(type, "b");
  auto join = [&](OpKind kind, int64_t axis) {
    tg::ir::OpAttrs attrs;
    attrs.axes = {axis};
    return graph.addNode(Op(kind, attrs, Place::Device), {a, b});
  };
  std::unique_ptr<Device> device = tg::runtime::cuda::openCudaDevice();
  Tensor hostA = range(DType::F32, {2, 5}), hostB = range(DType::F32, {3, 5}).view({2, 5}, {5, 1}, 5);
  std::vector<Tensor> onDevice{device->upload(hostA), device->upload(hostB)};
  for (tg::ir::Node *node : {join(OpKind::Concat, 0), join(OpKind::Stack, 0), join(OpKind::Stack, -3)}) {
    Tensor expected =
        tg::runtime::runOp(node->op().on(Place::Host), {hostA, hostB}, {node->output()->type()})[0];
    EXPECT_EQ(device->download(device->run(*node, onDevice)).toData(), expected.toData()) << node->op().str();
  }
  EXPECT_EQ(count("cuMemcpyDtoDAsync 40"), 6u) << log();
  EXPECT_EQ(count("cuLaunchKernel"), 0u);
  Tensor sideBySide = device->run(*join(OpKind::Concat, 1), onDevice);
  EXPECT_EQ(sideBySide.shape(), (std::vector<int64_t>{2, 10}));
  EXPECT_EQ(count("cuLaunchKernel"), 2u); // a and b, axis 1 moved first, made contiguous
}

TEST_F(CudaDeviceTest, ArgmaxIsTwoGeneratedReductions) {
  Graph graph;
  tg::ir::Value *x =
      graph.addInput(TensorType{DType::F32, {tg::ir::Dim::of(3), tg::ir::Dim::of(50)}, Place::Device}, "x");
  tg::ir::OpAttrs attrs;
  attrs.axes = {1};
  tg::ir::Node *argmax = graph.addNode(Op(OpKind::Argmax, attrs, Place::Device), {x});
  std::unique_ptr<Device> device = tg::runtime::cuda::openCudaDevice();
  Tensor result = device->run(*argmax, {device->upload(range(DType::F32, {3, 50}))});
  EXPECT_EQ(result.shape(), std::vector<int64_t>{3});
  EXPECT_EQ(result.dtype(), DType::I64);
  // One block per row, 64 threads for 50 elements: the max, then the first index of it.
  EXPECT_EQ(count("grid=3x1x1 block=64x1x1"), 2u) << log();
}

} // namespace

namespace {

/// On a machine with a GPU (the real driver, not the fake): a fused elementwise kernel and a reduction give
/// the CPU's numbers. Elsewhere the test skips and says why.
TEST(RealGpuTest, KernelsGiveTheCpusNumbers) {
  unsetenv("TGC_CUDA_DRIVER");
  std::unique_ptr<Device> device;
  try {
    device = tg::runtime::cuda::openCudaDevice();
  } catch (const UserError &error) {
    GTEST_SKIP() << "no GPU: " << error.message;
  }
  Graph graph;
  tg::ir::Value *x =
      graph.addInput(TensorType{DType::F32, {tg::ir::Dim::of(3), tg::ir::Dim::of(1000)}, Place::Device}, "x");
  tg::ir::Node *product = graph.addNode(Op(OpKind::Mul, {}, Place::Device), {x, x});
  tg::ir::OpAttrs attrs;
  attrs.axes = {1};
  tg::ir::Node *total = graph.addNode(Op(OpKind::Sum, attrs, Place::Device), {product->output()});
  Tensor host = range(DType::F32, {3, 1000});
  Tensor squares = device->run(*product, {device->upload(host)});
  Tensor sums = device->run(*total, {squares});
  auto onHost = [](const tg::ir::Node *node, std::vector<Tensor> inputs) {
    return tg::runtime::runOp(node->op().on(Place::Host), inputs, {node->output()->type()})[0];
  };
  Tensor expectedSquares = onHost(product, {host});
  EXPECT_EQ(device->download(squares).toData(), expectedSquares.toData());
  TensorData got = device->download(sums).toData(), expected = onHost(total, {expectedSquares}).toData();
  for (int64_t i = 0; i < expected.numElements(); ++i)
    EXPECT_NEAR(got.get(i), expected.get(i), 1e-5 * std::abs(expected.get(i)));
}

} // namespace
