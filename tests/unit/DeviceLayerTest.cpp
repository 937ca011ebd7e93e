// The device layer (runtime/DeviceLayer.h) on the simulated device: every device op (eye, arange, rand,
// randn, integer, bool and batched matmul, convolutions and max pooling among them) runs as device kernels
// and gives the CPU's numbers exactly (the simulated kernels call the same libm as the CPU kernels); the
// device plan covers every op with a device implementation.
#include "runtime/DeviceLayer.h"

#include "ir/Graph.h"
#include "ir/ScalarGraph.h"
#include "runtime/Device.h"
#include "runtime/Kernels.h"

#include <cmath>
#include <gtest/gtest.h>
#include <optional>
#include <string>

namespace {

using tg::ir::Dim;
using tg::ir::DType;
using tg::ir::Graph;
using tg::ir::Op;
using tg::ir::OpAttrs;
using tg::ir::OpKind;
using tg::ir::Place;
using tg::ir::TensorData;
using tg::ir::TensorType;
using tg::runtime::Device;
using tg::runtime::Tensor;

TensorType typeOf(DType dtype, const std::vector<int64_t> &shape, Place place) {
  TensorType type{dtype, {}, place};
  for (int64_t size : shape)
    type.shape.push_back(Dim::of(size));
  return type;
}

/// Runs `kind` on `inputs` as a device node on the simulated device and as a host node on the CPU; expects
/// the same dtype, shape and elements.
void expectDeviceMatchesCpu(OpKind kind, const OpAttrs &attrs, DType dtype, const std::vector<int64_t> &shape,
                            const std::vector<Tensor> &inputs, const std::string &what) {
  Graph graph;
  std::vector<tg::ir::Value *> values;
  for (const Tensor &input : inputs)
    values.push_back(graph.addInput(typeOf(input.dtype(), input.shape(), Place::Device), "x"));
  OpAttrs withDtype = attrs;
  withDtype.dtype = dtype;
  tg::ir::Node *node = graph.addNode(Op(kind, withDtype, Place::Device), values);
  ASSERT_EQ(node->output()->type().dtype, dtype) << what;
  std::unique_ptr<Device> device = tg::runtime::makeSimDevice();
  std::vector<Tensor> onDevice;
  for (const Tensor &input : inputs)
    onDevice.push_back(device->upload(input));
  TensorData got = device->download(device->run(*node, onDevice)).toData();
  TensorData want =
      tg::runtime::runOp(Op(kind, withDtype), inputs, {typeOf(dtype, shape, Place::Host)}).at(0).toData();
  EXPECT_EQ(got.shape, want.shape) << what;
  EXPECT_EQ(got.dtype, want.dtype) << what;
  EXPECT_EQ(got, want) << what;
}

Tensor range(DType dtype, const std::vector<int64_t> &shape, int64_t start = 0) {
  Tensor tensor = Tensor::empty(dtype, shape);
  TensorData data = tensor.toData();
  for (int64_t i = 0; i < data.numElements(); ++i)
    data.set(i, dtype == DType::Bool ? static_cast<double>((i + start) % 3 == 0)
                                     : static_cast<double>(i + start));
  return Tensor::fromData(data);
}

TEST(DeviceLayerTest, KernelsOfSeveralOutputsWriteEachAsTheCpuDoes) {
  // e = exp(a - b) written beside r = e * a (elementwise), or beside sum(e) over either axis (a reduction
  // writing its prologue's value): contiguous, broadcast (strided) and column (strided) cases.
  auto body = std::make_shared<tg::ir::ScalarGraph>();
  body->inputDtypes = {DType::F32, DType::F32};
  body->body = {
      {OpKind::Sub, DType::F32, {0, 1}}, {OpKind::Exp, DType::F32, {2}}, {OpKind::Mul, DType::F32, {3, 0}}};
  body->extraOutputs = {3, 2};
  struct Case {
    std::vector<int64_t> bShape;
    std::optional<std::pair<OpKind, int64_t>> reduction;
  };
  for (const Case &c : {Case{{37, 300}, std::nullopt}, Case{{300}, std::nullopt},
                        Case{{37, 300}, std::pair{OpKind::Sum, int64_t(1)}},
                        Case{{300}, std::pair{OpKind::Max, int64_t(0)}}}) {
    std::string what = "b " + std::to_string(c.bShape.size()) + "-d" +
                       (c.reduction ? ", reduced over axis " + std::to_string(c.reduction->second) : "");
    OpAttrs attrs;
    auto withReduction = std::make_shared<tg::ir::ScalarGraph>(*body);
    if (c.reduction) {
      withReduction->reduction = c.reduction->first;
      attrs.axes = {c.reduction->second};
    }
    attrs.body = withReduction;
    auto small = [](const std::vector<int64_t> &shape, int64_t start) { // exp stays finite
      TensorData data(DType::F32, shape);
      for (int64_t i = 0; i < data.numElements(); ++i)
        data.set(i, static_cast<double>((i + start) % 17) / 16);
      return Tensor::fromData(data);
    };
    std::vector<Tensor> inputs{small({37, 300}, 0), small(c.bShape, 5)};
    Graph graph;
    auto *a = graph.addInput(typeOf(DType::F32, {37, 300}, Place::Device), "a");
    auto *b = graph.addInput(typeOf(DType::F32, c.bShape, Place::Device), "b");
    tg::ir::Node *node = graph.addNode(Op(OpKind::Fused, attrs, Place::Device), {a, b});
    ASSERT_EQ(node->outputs().size(), 3u) << what;
    std::unique_ptr<Device> device = tg::runtime::makeSimDevice();
    std::vector<Tensor> onDevice{device->upload(inputs[0]), device->upload(inputs[1])};
    std::vector<Tensor> extras(2);
    Tensor first = device->run(*node, onDevice, extras);
    std::vector<Tensor> expected =
        tg::runtime::evaluateFusedByKernels(Op(OpKind::Fused, attrs), inputs, node->output()->type().dtype);
    std::vector<TensorType> types;
    for (const tg::ir::Value *output : node->outputs())
      types.push_back(output->type());
    for (TensorType &type : types)
      type.place = Place::Host;
    std::vector<Tensor> onHost = tg::runtime::runOp(Op(OpKind::Fused, attrs), inputs, types);
    std::vector<Tensor> fromDevice{device->download(first), device->download(extras[0]),
                                   device->download(extras[1])};
    for (size_t k = 0; k < 3; ++k) {
      TensorData want = expected[k].toData();
      for (const Tensor &got : {fromDevice[k], onHost[k]}) {
        TensorData data = got.toData();
        ASSERT_EQ(data.shape, want.shape) << what << ", output " << k;
        for (int64_t i = 0; i < want.numElements(); ++i)
          ASSERT_NEAR(data.get(i), want.get(i), 1e-5 * std::abs(want.get(i)) + 1e-6)
              << what << ", output " << k << ", element " << i;
      }
    }
  }
}

TEST(DeviceLayerTest, ReductionsOfNothingGiveTheCpusIdentities) {
  // A (0, 70) input reduced over its empty axis: one fill kernel of the identity, as the CPU's result.
  for (OpKind kind : {OpKind::Sum, OpKind::Mean, OpKind::Prod}) {
    OpAttrs attrs;
    attrs.axes = {0};
    expectDeviceMatchesCpu(kind, attrs, DType::F32, {70}, {range(DType::F32, {0, 70})}, tg::ir::opName(kind));
  }
  for (OpKind kind : {OpKind::Any, OpKind::All}) {
    OpAttrs attrs;
    attrs.axes = {0};
    expectDeviceMatchesCpu(kind, attrs, DType::Bool, {70}, {range(DType::Bool, {0, 70})},
                           tg::ir::opName(kind));
  }
}

TEST(DeviceLayerTest, EyeIsADeviceKernel) {
  for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
    OpAttrs attrs;
    attrs.shape = {5, 7};
    expectDeviceMatchesCpu(OpKind::Eye, attrs, dtype, {5, 7}, {},
                           std::string("eye ") + tg::ir::dtypeName(dtype));
  }
}

TEST(DeviceLayerTest, ArangeIsExactOnTheDevice) {
  struct Case {
    tg::ir::Number start, stop, step;
    DType dtype;
  };
  using tg::ir::Number;
  for (const Case &c : std::vector<Case>{
           {Number::ofInt(9007199254740993), Number::ofInt(9007199254741003), Number::ofInt(1), DType::I64},
           {Number::ofInt(-9223372036854775807), Number::ofInt(9223372036854775807),
            Number::ofInt(3074457345618258602), DType::I64},
           {Number::ofInt(5), Number::ofInt(-20), Number::ofInt(-3), DType::I32},
           {Number::ofFloat(0.5), Number::ofFloat(3.0), Number::ofFloat(0.1), DType::F32},
           {Number::ofFloat(1.0), Number::ofFloat(2.0), Number::ofFloat(0.1), DType::F64},
           {Number::ofFloat(0.5), Number::ofFloat(9.0), Number::ofFloat(1.5), DType::I64},
           {Number::ofInt(0), Number::ofInt(2), Number::ofInt(1), DType::Bool},
           {Number::ofInt(4), Number::ofInt(1), Number::ofInt(-1), DType::Bool},
           {Number::ofFloat(-1.0), Number::ofFloat(2.0), Number::ofFloat(1.0), DType::Bool},
       }) {
    OpAttrs attrs;
    attrs.scalars = {c.start, c.stop, c.step};
    int64_t length = tg::ir::arangeLength(c.start, c.stop, c.step, c.dtype);
    attrs.shape = {length};
    expectDeviceMatchesCpu(OpKind::Arange, attrs, c.dtype, {length}, {},
                           "arange(" + c.start.str() + ", " + c.stop.str() + ", " + c.step.str() + ") " +
                               tg::ir::dtypeName(c.dtype));
  }
}

TEST(DeviceLayerTest, RandAndRandnGiveTheCpusNumbers) {
  for (OpKind kind : {OpKind::Rand, OpKind::Randn})
    for (DType dtype : {DType::F32, DType::F64}) {
      OpAttrs attrs;
      attrs.shape = {3, 1000};
      attrs.seed = 0x123456789abcdefULL;
      expectDeviceMatchesCpu(kind, attrs, dtype, {3, 1000}, {},
                             std::string(tg::ir::opName(kind)) + " " + tg::ir::dtypeName(dtype));
    }
}

TEST(DeviceLayerTest, IntegerBoolAndBatchedMatmulRunOnTheDevice) {
  struct Case {
    DType dtype;
    std::vector<int64_t> a, b, out;
  };
  for (const Case &c : std::vector<Case>{
           {DType::I32, {70, 5}, {5, 66}, {70, 66}},
           {DType::I64, {2, 3, 4}, {4, 2}, {2, 3, 2}},
           {DType::I64, {3, 1, 2, 5}, {4, 5, 3}, {3, 4, 2, 3}},
           {DType::Bool, {4, 3}, {3, 5}, {4, 5}},
           {DType::F32, {2, 3, 4}, {2, 4, 5}, {2, 3, 5}},
           {DType::F64, {4}, {3, 4, 2}, {3, 2}},
           {DType::I32, {6}, {6}, {}},
       }) {
    std::string what = std::string("matmul ") + tg::ir::dtypeName(c.dtype) + " " +
                       tg::runtime::shapeTuple(c.a) + " @ " + tg::runtime::shapeTuple(c.b);
    expectDeviceMatchesCpu(OpKind::Matmul, {}, c.dtype, c.out, {range(c.dtype, c.a), range(c.dtype, c.b, 1)},
                           what);
  }
}

/// A gemm operand that is neither row- nor column-major (a broadcast view) is copied first, and the copy must
/// live until the gemm has read it: the simulated device runs the gemm at once, after any free (a
/// use-after-free here once gave wrong first elements).
TEST(DeviceLayerTest, AGemmOperandCopiedToRowMajorLivesUntilTheGemm) {
  Graph graph;
  tg::ir::Value *a = graph.addInput(typeOf(DType::F64, {3, 4}, Place::Device), "a");
  tg::ir::Value *b = graph.addInput(typeOf(DType::F64, {4, 5}, Place::Device), "b");
  tg::ir::Node *product = graph.addNode(Op(OpKind::Matmul, {}, Place::Device), {a, b});
  std::unique_ptr<Device> device = tg::runtime::makeSimDevice();
  Tensor column = range(DType::F64, {3, 1}, 1), right = range(DType::F64, {4, 5}, 2);
  Tensor broadcast = column.view({3, 4}, {1, 0}, 0); // rows of one repeated value: strides (1, 0)
  Tensor onDevice = device->upload(column);
  TensorData got =
      device->download(device->run(*product, {onDevice.view({3, 4}, {1, 0}, 0), device->upload(right)}))
          .toData();
  TensorData want =
      tg::runtime::runOp(Op(OpKind::Matmul), {broadcast, right}, {typeOf(DType::F64, {3, 5}, Place::Host)})
          .at(0)
          .toData();
  EXPECT_EQ(got, want);
}

/// Small integers (from -5 to 5) as `dtype`, in a pattern that repeats rarely: every product and sum of a
/// small convolution is exact in f32 and f64, so that the device's gemms match the CPU's loops bit for bit.
Tensor smallIntegers(DType dtype, const std::vector<int64_t> &shape, int64_t seed, double scale = 1) {
  Tensor tensor = Tensor::empty(dtype, shape);
  TensorData data = tensor.toData();
  for (int64_t i = 0; i < data.numElements(); ++i)
    data.set(i, scale * static_cast<double>((i * 7 + seed * 3) % 11 - 5));
  return Tensor::fromData(data);
}

/// A window over `spatial` axes of `kernel` sizes, the same stride, dilation and padding on each.
OpAttrs windowAttrs(std::vector<int64_t> kernel, int64_t stride, int64_t dilation, int64_t padBefore,
                    int64_t padAfter, int64_t groups = 1, int64_t outputPadding = 0) {
  OpAttrs attrs;
  size_t axes = kernel.size();
  attrs.window = {std::move(kernel),
                  std::vector<int64_t>(axes, stride),
                  std::vector<int64_t>(axes, dilation),
                  std::vector<int64_t>(axes, padBefore),
                  std::vector<int64_t>(axes, padAfter),
                  std::vector<int64_t>(axes, outputPadding),
                  groups};
  return attrs;
}

TEST(DeviceLayerTest, ConvolutionsAreColumnMatricesAndGemmsWithTheCpusResults) {
  // conv (x, w) -> y, conv_transpose (gy, w) -> x and conv_filter_grad (x, gy) -> w of one geometry each:
  // strides, dilation, uneven padding, groups, one spatial axis, an output padding, a batch of none.
  struct Case {
    std::vector<int64_t> x, w, y;
    OpAttrs attrs;
  };
  const Case cases[] = {
      {{2, 3, 7, 6}, {4, 3, 3, 2}, {2, 4, 5, 6}, windowAttrs({3, 2}, 1, 1, 0, 1)},
      {{2, 4, 9, 8}, {6, 2, 3, 3}, {2, 6, 4, 4}, windowAttrs({3, 3}, 2, 1, 1, 0, 2)},
      {{1, 2, 9, 9}, {3, 2, 2, 3}, {1, 3, 9, 7}, windowAttrs({2, 3}, 1, 2, 1, 1)},
      {{3, 4, 11}, {4, 2, 2}, {3, 4, 6}, windowAttrs({2}, 2, 3, 1, 1, 2)},
      {{2, 4, 5, 4}, {4, 2, 3, 2}, {2, 4, 3, 2}, windowAttrs({3, 2}, 2, 1, 1, 0, 2, 1)},
      {{0, 3, 5, 5}, {2, 3, 3, 3}, {0, 2, 3, 3}, windowAttrs({3, 3}, 1, 1, 0, 0)},
  };
  for (DType dtype : {DType::F32, DType::F64}) {
    for (const Case &c : cases) {
      std::string what = std::string(tg::ir::dtypeName(dtype)) + " x " + std::to_string(c.x.size()) + "-d " +
                         std::to_string(c.x[0]) + "x" + std::to_string(c.x[1]) + " groups " +
                         std::to_string(c.attrs.window.groups);
      Tensor x = smallIntegers(dtype, c.x, 1), w = smallIntegers(dtype, c.w, 2),
             gy = smallIntegers(dtype, c.y, 3);
      expectDeviceMatchesCpu(OpKind::Conv, c.attrs, dtype, c.y, {x, w}, "conv " + what);
      expectDeviceMatchesCpu(OpKind::ConvTranspose, c.attrs, dtype, c.x, {gy, w}, "conv_transpose " + what);
      expectDeviceMatchesCpu(OpKind::ConvFilterGrad, c.attrs, dtype, c.w, {x, gy},
                             "conv_filter_grad " + what);
    }
  }
}

TEST(DeviceLayerTest, MaxPoolingIsTheCpusBitForBit) {
  // Overlapping, padded windows over floats with ties and NaNs (a NaN wins its window) and over integers;
  // the gradient sums each window's share in the CPU's order (tenths, whose sums depend on it); its adjoint
  // max_pool_gather picks another array's elements at the same first maxima.
  OpAttrs overlapping = windowAttrs({3, 2}, 1, 1, 1, 1), strided = windowAttrs({2, 2}, 2, 1, 0, 0);
  overlapping.window.stride = {2, 1};
  for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    Tensor x = smallIntegers(dtype, {2, 3, 7, 6}, 4);
    if (dtype == DType::F32 || dtype == DType::F64) {
      TensorData data = x.toData();
      data.set(5, std::nan(""));
      data.set(40, std::nan(""));
      x = Tensor::fromData(data);
    }
    std::string name = tg::ir::dtypeName(dtype);
    expectDeviceMatchesCpu(OpKind::MaxPool, overlapping, dtype, {2, 3, 4, 7}, {x},
                           "max_pool overlapping " + name);
    expectDeviceMatchesCpu(OpKind::MaxPool, strided, dtype, {2, 3, 3, 3}, {x}, "max_pool strided " + name);
    if (dtype == DType::I32 || dtype == DType::I64) continue;
    expectDeviceMatchesCpu(OpKind::MaxPoolGrad, overlapping, dtype, {2, 3, 7, 6},
                           {x, smallIntegers(dtype, {2, 3, 4, 7}, 5, 0.1)},
                           "max_pool_grad overlapping " + name);
    expectDeviceMatchesCpu(OpKind::MaxPoolGrad, strided, dtype, {2, 3, 7, 6},
                           {x, smallIntegers(dtype, {2, 3, 3, 3}, 6, 0.1)}, "max_pool_grad strided " + name);
    expectDeviceMatchesCpu(OpKind::MaxPoolGather, overlapping, dtype, {2, 3, 4, 7},
                           {x, smallIntegers(dtype, {2, 3, 7, 6}, 7, 0.1)},
                           "max_pool_gather overlapping " + name);
  }
}

/// Ops.def's device column is what the device plan covers: every op with a device implementation has a step
/// of its family (transfers are the executor's; host-only ops have none, placement never puts them on a
/// device).
TEST(DeviceLayerTest, EveryOpWithADeviceImplementationHasAStep) {
  using Kind = tg::runtime::DeviceStep::Kind;
  const OpKind kinds[] = {
#define OP(Enum, ...) OpKind::Enum,
#include "ir/Ops.def"
  };
  for (OpKind kind : kinds) {
    const tg::ir::OpInfo &info = tg::ir::opInfo(kind);
    if (!info.hasDevice || kind == OpKind::ToDevice || kind == OpKind::ToHost) continue;
    Kind step = tg::runtime::deviceStepKind(kind);
    switch (info.fusion) {
    case tg::ir::FusionKind::Elementwise:
      EXPECT_EQ(step, Kind::Kernel) << info.name;
      break;
    case tg::ir::FusionKind::Reduce:
      EXPECT_TRUE(step == Kind::Reduction || step == Kind::PositionalReduction) << info.name;
      break;
    case tg::ir::FusionKind::Creation:
      EXPECT_TRUE(step == Kind::Creation || step == Kind::Fill || step == Kind::Broadcast) << info.name;
      break;
    default:
      if (tg::ir::isView(kind)) {
        EXPECT_TRUE(step == Kind::View || step == Kind::Reshape) << info.name;
      }
      if (tg::ir::isWindowOp(kind)) {
        EXPECT_EQ(step, Kind::Window) << info.name;
      }
    }
  }
}

} // namespace
