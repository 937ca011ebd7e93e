// The generated reduction kernels (a reduction with its elementwise prologue in one kernel) against
// runtime::evaluateFusedByKernels (the prologue op by op, then the CPU reduction kernel): every reduction
// that takes a prologue, for every dtype the CPU accepts, over the last, first, middle, several and all axes,
// with broadcast inputs and keepdims both ways, through the host kernel (one thread and several, both
// layouts) and the simulated device; PTX through ptxas. Ints, bools, max and min must match exactly; float
// sums, means and products within a relative tolerance of 1e-5 (f32 results) or 1e-9 (f64), relative to the
// larger of the result and the largest program value (the kernels reassociate the double accumulation).
#include "codegen/Kernel.h"
#include "ir/SourceLoc.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"
#include "runtime/WorkerPool.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <memory>
#include <unistd.h>

namespace {

using tg::ir::DType;
using tg::ir::OpKind;
using tg::ir::ScalarGraph;
using tg::runtime::Tensor;
using Shape = std::vector<int64_t>;

const OpKind kReductions[] = {OpKind::Sum,  OpKind::Mean, OpKind::Max, OpKind::Min,
                              OpKind::Prod, OpKind::Any,  OpKind::All};
const DType kDtypes[] = {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64};

/// Values of `dtype` for element i: floats include NaN, infinities and signed zeros near the start (for
/// max/min and any/all); ints their limits (sums wrap in both); bools a pattern.
double valueAt(DType dtype, int64_t i, bool edges) {
  if (dtype == DType::Bool) return (i * 7 + 3) % 5 < 3;
  if (!tg::ir::isFloat(dtype)) {
    if (edges && i == 3) return dtype == DType::I32 ? 2147483647.0 : 9.2e18;
    if (edges && i == 5) return dtype == DType::I32 ? -2147483648.0 : -9.2e18;
    return static_cast<double>((i * 37) % 23 - 11);
  }
  if (edges) {
    const double nan = std::nan(""), inf = INFINITY;
    const double special[] = {nan, inf, -inf, 0.0, -0.0};
    if (i % 41 == 7) return special[(i / 41) % 5];
  }
  return ((i * 37) % 101 - 50) * 0.0625;
}

Tensor makeInput(DType dtype, const Shape &shape, int seed, bool edges) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  tg::ir::TensorData data(dtype, shape);
  for (int64_t i = 0; i < count; ++i)
    data.set(i, valueAt(dtype, i + seed * 13, edges));
  return Tensor::fromData(data);
}

/// The prologue: for floats under sum/mean/prod exp(0.01 * f(x, y)) (positive, products near 1), else
/// f(x, y); f adds (ors bools), or is the identity-like unary for one input.
ScalarGraph makeBody(OpKind reduction, DType dtype, size_t numInputs) {
  ScalarGraph graph;
  graph.inputDtypes.assign(numInputs, dtype);
  auto push = [&](OpKind kind, std::vector<uint32_t> operands, double immediate = 0) {
    graph.body.push_back({kind, dtype, {operands.begin(), operands.end()}, immediate});
    return static_cast<uint32_t>(graph.numValues() - 1);
  };
  uint32_t value = 0;
  if (numInputs == 2)
    value = push(dtype == DType::Bool ? OpKind::Or : OpKind::Add, {0, 1});
  else if (dtype == DType::Bool)
    value = push(OpKind::Not, {0});
  else
    value = push(OpKind::Neg, {0});
  bool sumLike = reduction == OpKind::Sum || reduction == OpKind::Mean || reduction == OpKind::Prod;
  if (tg::ir::isFloat(dtype) && sumLike) {
    uint32_t scale = push(OpKind::Full, {}, 0.01);
    push(OpKind::Exp, {push(OpKind::Mul, {value, scale})});
  }
  graph.reduction = reduction;
  return graph;
}

struct Case {
  std::vector<Shape> inputs;
  std::vector<int64_t> axes;
};

const Case kCases[] = {
    {{{5, 37}}, {1}},           // the last axis (contiguous)
    {{{37, 5}}, {0}},           // the first axis
    {{{3, 19, 4}}, {1}},        // a middle axis
    {{{3, 5, 7}}, {0, 2}},      // several axes
    {{{4, 6, 5}}, {0, 1, 2}},   // every axis (0-d without keepdims)
    {{{2, 3, 40}}, {1, 2}},     // the trailing axes (contiguous)
    {{{4, 1, 9}, {6, 1}}, {2}}, // broadcast inputs
    {{{4, 1, 9}, {6, 1}}, {0}}, // broadcast inputs, reducing a broadcast axis
    {{{300, 700}}, {1}},        // big enough for several host threads
    {{{700, 300}}, {0}},
    {{{5, 3, 130}}, {0}}, // leading axis: outputs accumulated in blocks, split at kept rows and thread ranges
    {{{6, 70}, {70}}, {0}}, // in blocks, with an input broadcast along the reduced axis
    {{{3, 0}}, {1}},        // empty reductions (sum, mean, prod, any, all only)
    {{{6}}, {}},            // nothing reduced
};

bool matches(double expected, double actual, double tolerance) {
  if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) && std::isnan(actual);
  if (expected == actual) return true;
  return std::abs(expected - actual) <= tolerance;
}

void checkCase(const Case &testCase, OpKind reduction, DType dtype, bool keepdims) {
  bool edges = reduction == OpKind::Max || reduction == OpKind::Min || reduction == OpKind::Any ||
               reduction == OpKind::All || !tg::ir::isFloat(dtype);
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < testCase.inputs.size(); ++k)
    inputs.push_back(makeInput(dtype, testCase.inputs[k], static_cast<int>(k), edges));
  tg::ir::OpAttrs attrs;
  attrs.body = std::make_shared<ScalarGraph>(makeBody(reduction, dtype, inputs.size()));
  attrs.axes = testCase.axes;
  attrs.keepdims = keepdims;
  DType outDtype = tg::codegen::kernelOutputDtype(*attrs.body);
  tg::ir::Op hostOp(OpKind::Fused, attrs, tg::ir::Place::Host);
  Tensor expected = tg::runtime::evaluateFusedByKernels(hostOp, inputs, outDtype)[0];

  // The tolerance's scale: the largest program value.
  ScalarGraph prologue = *attrs.body;
  prologue.reduction.reset();
  tg::ir::OpAttrs prologueAttrs;
  prologueAttrs.body = std::make_shared<ScalarGraph>(prologue);
  tg::ir::TensorData values = tg::runtime::evaluateFusedByKernels(tg::ir::Op(OpKind::Fused, prologueAttrs),
                                                                  inputs, prologue.resultDtype())[0]
                                  .toData();
  double scale = 0;
  for (int64_t i = 0; i < values.numElements(); ++i)
    if (std::isfinite(values.get(i))) scale = std::max(scale, std::abs(values.get(i)));
  bool exact = !tg::ir::isFloat(outDtype) || reduction == OpKind::Max || reduction == OpKind::Min;
  double relative = outDtype == DType::F32 ? 1e-5 : 1e-9;

  tg::ir::TensorData want = expected.toData();
  tg::ir::TensorType type{outDtype, {}, tg::ir::Place::Host};
  for (tg::ir::Place place : {tg::ir::Place::Host, tg::ir::Place::Device})
    for (int threads : {1, 3}) {
      if (place == tg::ir::Place::Device && threads > 1) continue;
      tg::runtime::setHostThreads(threads);
      type.place = place;
      Tensor actual = tg::runtime::runOp(tg::ir::Op(OpKind::Fused, attrs, place), inputs, {type})[0];
      std::string what = std::string(tg::ir::opName(reduction)) + " " + tg::ir::dtypeName(dtype) + " axes " +
                         std::to_string(testCase.axes.size()) + " of rank " +
                         std::to_string(testCase.inputs[0].size()) + (keepdims ? " keepdims" : "") +
                         (place == tg::ir::Place::Device ? " sim" : " host x" + std::to_string(threads));
      ASSERT_EQ(actual.shape(), expected.shape()) << what;
      ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
      tg::ir::TensorData got = actual.toData();
      for (int64_t i = 0; i < want.numElements(); ++i) {
        double tolerance = exact ? 0 : relative * std::max(std::abs(want.get(i)), scale);
        ASSERT_TRUE(matches(want.get(i), got.get(i), tolerance))
            << what << ": element " << i << " is " << got.get(i) << ", the CPU kernels give " << want.get(i);
      }
    }
  tg::runtime::setHostThreads(0);
}

TEST(ReductionCodegen, EveryReductionDtypeAndShapeMatchesCpuKernels) {
  for (const Case &testCase : kCases)
    for (OpKind reduction : kReductions)
      for (DType dtype : kDtypes)
        for (bool keepdims : {false, true}) {
          bool empty = testCase.inputs[0].size() == 2 && testCase.inputs[0][1] == 0;
          if (empty && (reduction == OpKind::Max || reduction == OpKind::Min)) continue;
          checkCase(testCase, reduction, dtype, keepdims);
        }
}

TEST(ReductionCodegen, MaxOfAnEmptyAxisIsAnError) {
  tg::ir::OpAttrs attrs;
  attrs.body = std::make_shared<ScalarGraph>(makeBody(OpKind::Max, DType::F32, 1));
  attrs.axes = {1};
  std::vector<Tensor> inputs{makeInput(DType::F32, {3, 0}, 0, false)};
  tg::ir::TensorType type{DType::F32, {}, tg::ir::Place::Host};
  EXPECT_THROW(tg::runtime::runOp(tg::ir::Op(OpKind::Fused, attrs), inputs, {type}), tg::ir::UserError);
}

TEST(ReductionCodegen, NegativeIntegerPowerFailsInReductions) {
  ScalarGraph graph;
  graph.inputDtypes = {DType::I64, DType::I64};
  graph.body.push_back({OpKind::Pow, DType::I64, {0, 1}});
  graph.reduction = OpKind::Sum;
  tg::ir::OpAttrs attrs;
  attrs.body = std::make_shared<ScalarGraph>(graph);
  tg::ir::TensorData exponents(DType::I64, {2, 3});
  for (int64_t i = 0; i < 6; ++i)
    exponents.set(i, i == 4 ? -1 : 2);
  std::vector<Tensor> inputs{makeInput(DType::I64, {2, 3}, 0, false), Tensor::fromData(exponents)};
  for (int64_t axis : {1, 0}) // one output at a time, and outputs in blocks
    for (tg::ir::Place place : {tg::ir::Place::Host, tg::ir::Place::Device}) {
      attrs.axes = {axis};
      tg::ir::TensorType type{DType::I64, {}, place};
      EXPECT_THROW(tg::runtime::runOp(tg::ir::Op(OpKind::Fused, attrs, place), inputs, {type}),
                   tg::ir::UserError);
    }
}

TEST(ReductionCodegen, PtxassAcceptsReductionKernels) {
  const char *ptxas = "/usr/local/cuda/bin/ptxas";
  if (access(ptxas, X_OK) != 0) GTEST_SKIP() << "no ptxas at " << ptxas << " to check the PTX";
  const char *configured = std::getenv("TGC_LIBDEVICE");
  std::string libdevice = configured ? configured : "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  if (access(libdevice.c_str(), R_OK) != 0) GTEST_SKIP() << "no libdevice at " << libdevice;
  std::filesystem::path directory = std::filesystem::temp_directory_path() /
                                    ("tgc_reduction_test_" + std::to_string(static_cast<long>(getpid())));
  std::filesystem::create_directories(directory);
  for (OpKind reduction : kReductions)
    for (DType dtype : kDtypes)
      for (tg::codegen::Layout layout : {tg::codegen::Layout::Contiguous, tg::codegen::Layout::Strided}) {
        ScalarGraph graph = makeBody(reduction, dtype, 2);
        for (const char *arch : {"sm_90", "sm_80"}) {
          std::string ptx = tg::codegen::emitPtx({&graph, layout}, arch);
          std::string what =
              std::string(tg::ir::opName(reduction)) + " " + tg::ir::dtypeName(dtype) + " " + arch;
          EXPECT_NE(ptx.find("shfl.sync.down"), std::string::npos) << what;
          EXPECT_NE(ptx.find("bar.sync"), std::string::npos) << what;
          std::filesystem::path file = directory / (what + ".ptx");
          std::ofstream(file) << ptx;
          std::string command =
              std::string(ptxas) + " -arch=" + arch + " '" + file.string() + "' -o /dev/null";
          EXPECT_EQ(std::system(command.c_str()), 0) << what << ": ptxas rejected " << file;
        }
      }
  std::filesystem::remove_all(directory);
}

} // namespace
