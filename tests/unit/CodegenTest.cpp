// The generated kernels against the CPU kernels (runtime::runOp), which are written independently: every
// elementwise op for every dtype the CPU accepts, through the host kernel (both layouts) and the simulated
// device kernel, on inputs with edge values; multi-instruction bodies; error codes; PTX checked by ptxas.
#include "codegen/Kernel.h"
#include "ir/SourceLoc.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <thread>
#include <unistd.h>

namespace {

/// Device math comes from libdevice, part of the CUDA toolkit: where it is missing, the device tests say so.
std::string missingLibdevice() {
  const char *configured = std::getenv("TGC_LIBDEVICE");
  std::string path = configured ? configured : "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  return access(path.c_str(), R_OK) == 0 ? "" : "no libdevice at " + path + " (the CUDA toolkit's)";
}

using tg::codegen::KernelArgs;
using tg::codegen::Layout;
using tg::ir::DType;
using tg::ir::OpKind;
using tg::ir::ScalarGraph;
using tg::ir::ScalarInstr;
using tg::runtime::Tensor;
using Shape = std::vector<int64_t>;

const std::vector<DType> kNumeric = {DType::I32, DType::I64, DType::F32, DType::F64};
const std::vector<DType> kFloats = {DType::F32, DType::F64};
const std::vector<DType> kAll(std::begin(tg::ir::kAllDTypes), std::end(tg::ir::kAllDTypes));

// Every elementwise op of one or two operands with the dtypes it takes (Ops.def's operands column); runOp
// aborts on the others.
struct OpDtypes {
  OpKind kind;
  std::vector<DType> dtypes;
};
std::vector<OpDtypes> elementwiseOps(int arity) {
  std::vector<OpDtypes> ops;
  const OpKind kinds[] = {
#define OP(Enum, ...) OpKind::Enum,
#include "ir/Ops.def"
  };
  for (OpKind kind : kinds) {
    const tg::ir::OpInfo &info = tg::ir::opInfo(kind);
    if (info.fusion != tg::ir::FusionKind::Elementwise || info.arity != arity || kind == OpKind::Cast)
      continue;
    OpDtypes entry{kind, {}};
    for (DType dtype : kAll)
      if (tg::ir::takes(kind, dtype)) entry.dtypes.push_back(dtype);
    ops.push_back(entry);
  }
  return ops;
}
const std::vector<OpDtypes> kUnaryOps = elementwiseOps(1);
const std::vector<OpDtypes> kBinaryOps = elementwiseOps(2);

/// Ops computed by libm (or composed of libm calls): the host may call libmvec's vector variants instead.
bool isTranscendental(OpKind kind) {
  return tg::ir::opInfo(kind).cost == tg::ir::Cost::Transcendental;
}

// ---- Tensors with edge values ----

template <typename T>
Tensor vectorTensor(DType dtype, const std::vector<T> &values) {
  tg::ir::TensorData data(dtype, {static_cast<int64_t>(values.size())});
  std::memcpy(data.bytes.data(), values.data(), data.bytes.size());
  return Tensor::fromData(data);
}

template <typename T>
std::vector<T> integerEdges() {
  using Limits = std::numeric_limits<T>;
  return {0,
          1,
          -1,
          2,
          -2,
          3,
          -3,
          5,
          -7,
          13,
          31,
          64,
          -64,
          1000,
          -1000,
          65536,
          Limits::min(),
          Limits::max(),
          Limits::min() + 1,
          46341};
}

template <typename T>
std::vector<T> floatEdges() {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> values = {0,    -0.0, 1,   -1,   0.5,  -0.5,  1.5,  -2.5,  2.5,  7.25,
                                -7.5, 100,  -90, 1e-3, 3e9,  -3e9,  1e19, -1e19, 30,   nan,
                                inf,  -inf, 0.1, 2,    1e30, 88.72, -103, 1e-40, -710, 2147483647.5};
  std::vector<T> result;
  for (double value : values)
    result.push_back(static_cast<T>(value));
  return result;
}

/// A few dozen values of `dtype`, edges first (NaN, infinities, signed zeros, integer limits).
Tensor edgeValues(DType dtype, bool nonNegative = false) {
  auto filter = [&](auto values) {
    decltype(values) kept;
    for (auto value : values)
      if (!nonNegative || value >= 0) kept.push_back(value);
    return kept;
  };
  switch (dtype) {
  case DType::Bool:
    return vectorTensor(dtype, std::vector<uint8_t>{0, 1, 1, 0, 0, 0, 1, 1, 0, 1, 1});
  case DType::I32:
    return vectorTensor(dtype, filter(integerEdges<int32_t>()));
  case DType::I64:
    return vectorTensor(dtype, filter(integerEdges<int64_t>()));
  case DType::F32:
    return vectorTensor(dtype, floatEdges<float>());
  case DType::F64:
    break;
  }
  return vectorTensor(dtype, floatEdges<double>());
}

/// Edge values followed by a ramp, `count` in all (long enough for vectorized loops and their remainders).
Tensor longValues(DType dtype, int64_t count) {
  Tensor edges = edgeValues(dtype);
  tg::ir::TensorData data(dtype, {count});
  tg::ir::TensorData edgeData = edges.toData();
  size_t size = tg::ir::dtypeSize(dtype);
  for (int64_t i = 0; i < count; ++i) {
    if (i < edgeData.numElements())
      std::memcpy(data.bytes.data() + i * size, edgeData.bytes.data() + i * size, size);
    else
      data.set(i, dtype == DType::Bool ? i % 3 == 0 : (i % 2 ? 1 : -1) * (0.37 * i - 3));
  }
  return Tensor::fromData(data);
}

/// `tensor` broadcast to `shape` as a C-contiguous copy.
Tensor materialize(const Tensor &tensor, const Shape &shape) {
  Tensor copy = Tensor::empty(tensor.dtype(), shape);
  copy.copyFrom(tensor.view(shape, tg::runtime::broadcastStrides(tensor, shape), tensor.offset()));
  return copy;
}

// ---- Running kernels ----

struct KernelRun {
  Tensor output;
  int32_t code = tg::codegen::kKernelOk;
};

/// The arguments of one launch: the output of the inputs' broadcast shape, and each input's strides.
struct Launch {
  Shape shape;
  std::vector<const void *> inputs;
  std::vector<int64_t> strides;
  Tensor output;
  KernelArgs args{};
  int64_t count = 1;

  Launch(const ScalarGraph &graph, const std::vector<Tensor> &tensors) {
    for (const Tensor &tensor : tensors)
      shape = tg::runtime::broadcastShapes(shape, tensor.shape());
    for (const Tensor &tensor : tensors) {
      inputs.push_back(tensor.rawData());
      for (int64_t stride : tg::runtime::broadcastStrides(tensor, shape))
        strides.push_back(stride);
    }
    output = Tensor::empty(graph.resultDtype(), shape);
    for (int64_t size : shape)
      count *= size;
    args = {static_cast<int64_t>(shape.size()), shape.data(), inputs.data(), strides.data(),
            output.rawData()};
  }
};

/// For Contiguous, inputs are materialized at the output's shape first.
std::vector<Tensor> inputsFor(Layout layout, const std::vector<Tensor> &inputs) {
  if (layout == Layout::Strided) return inputs;
  Shape shape;
  for (const Tensor &input : inputs)
    shape = tg::runtime::broadcastShapes(shape, input.shape());
  std::vector<Tensor> materialized;
  for (const Tensor &input : inputs)
    materialized.push_back(materialize(input, shape));
  return materialized;
}

/// The host kernel over [0, count) in three uneven ranges, as threads would split it.
KernelRun runHost(const ScalarGraph &graph, Layout layout, const std::vector<Tensor> &inputs) {
  tg::codegen::KernelSpec spec{&graph, layout};
  tg::codegen::HostKernel kernel = tg::codegen::compileHostKernel(spec);
  std::vector<Tensor> actual = inputsFor(layout, inputs);
  Launch launch(graph, actual);
  int64_t cuts[] = {0, launch.count / 3, std::min(launch.count, 2 * launch.count / 3 + 1), launch.count};
  KernelRun run{launch.output};
  for (int i = 0; i < 3 && run.code == tg::codegen::kKernelOk; ++i)
    run.code = tg::codegen::runHostKernel(spec, kernel, launch.args, cuts[i], cuts[i + 1]);
  return run;
}

/// The simulated device kernel on a grid of 3 blocks of 128 threads (so larger outputs wrap around the grid
/// stride), the blocks run last to first.
KernelRun runSimDevice(const ScalarGraph &graph, Layout layout, const std::vector<Tensor> &inputs) {
  tg::codegen::SimDeviceKernel kernel = tg::codegen::compileSimDeviceKernel({&graph, layout});
  std::vector<Tensor> actual = inputsFor(layout, inputs);
  Launch launch(graph, actual);
  const int64_t blockSize = 128, gridSize = 3;
  KernelRun run{launch.output};
  for (int64_t block = gridSize - 1; block >= 0; --block) {
    int32_t code = kernel(&launch.args, launch.count, block, blockSize, gridSize);
    if (run.code == tg::codegen::kKernelOk) run.code = code;
  }
  return run;
}

// ---- Comparing ----

/// Distance in units in the last place between two finite or infinite floats of the same sign convention.
template <typename T>
int64_t ulpDistance(T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  auto ordered = [](T value) {
    Bits bits;
    std::memcpy(&bits, &value, sizeof bits);
    // Negative floats order backwards in their bit patterns; -0.0 and 0.0 both map to 0.
    return bits < 0 ? static_cast<int64_t>(std::numeric_limits<Bits>::min()) - static_cast<int64_t>(bits)
                    : static_cast<int64_t>(bits);
  };
  int64_t x = ordered(a), y = ordered(b);
  return x > y ? x - y : y - x;
}

/// Elementwise comparison: bitwise (NaN equals any NaN) when `ulps` is 0, else within `ulps` units in the
/// last place or a relative `relative`. Reports the first few mismatches with their inputs' positions.
template <typename T>
void expectClose(const tg::ir::TensorData &actual, const tg::ir::TensorData &expected, int64_t ulps,
                 double relative, const std::string &what) {
  const T *a = actual.data<T>(), *e = expected.data<T>();
  int reported = 0;
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    bool same;
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a[i]) || std::isnan(e[i]))
        same = std::isnan(a[i]) && std::isnan(e[i]);
      else if (ulps == 0)
        same = std::memcmp(&a[i], &e[i], sizeof(T)) == 0;
      else
        same = a[i] == e[i] || (std::isfinite(a[i]) && std::isfinite(e[i]) &&
                                (ulpDistance(a[i], e[i]) <= ulps ||
                                 std::abs(double(a[i]) - double(e[i])) <= relative * std::abs(double(e[i]))));
    } else {
      same = a[i] == e[i];
    }
    if (!same && reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << +a[i] << ", the CPU kernel gives " << +e[i];
    }
  }
}

void expectMatches(const Tensor &actual, const Tensor &expected, int64_t ulps, double relative,
                   const std::string &what) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  tg::ir::TensorData a = actual.toData(), e = expected.toData();
  tg::runtime::visitDType(expected.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>)
      expectClose<uint8_t>(a, e, 0, 0, what);
    else
      expectClose<T>(a, e, ulps, relative, what);
  });
}

std::string layoutName(Layout layout) {
  return layout == Layout::Contiguous ? "contiguous" : "strided";
}

/// Runs `graph` on `inputs` through the host kernel (both layouts) and the simulated device (both layouts),
/// and compares each result with `expected`.
void expectKernelsMatch(const ScalarGraph &graph, const std::vector<Tensor> &inputs, const Tensor &expected,
                        int64_t ulps, double relative, const std::string &what) {
  for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
    KernelRun host = runHost(graph, layout, inputs);
    EXPECT_EQ(host.code, tg::codegen::kKernelOk) << what;
    expectMatches(host.output, expected, ulps, relative, what + " (host, " + layoutName(layout) + ")");
    KernelRun sim = runSimDevice(graph, layout, inputs);
    EXPECT_EQ(sim.code, tg::codegen::kKernelOk) << what;
    expectMatches(sim.output, expected, ulps, relative, what + " (sim, " + layoutName(layout) + ")");
  }
}

/// The result dtype of a one-op body, as type inference gives it.
DType resultDtype(OpKind kind, const std::vector<DType> &operands, DType castTo) {
  return tg::ir::resultDType(kind, kind == OpKind::Where ? operands[1] : operands[0], castTo);
}

/// A body of one instruction reading every input, and the CPU kernel's result for it.
ScalarGraph singleOp(OpKind kind, const std::vector<DType> &operands, DType castTo = DType::F32) {
  ScalarGraph graph;
  graph.inputDtypes.assign(operands.begin(), operands.end());
  tg::ir::SmallVector<uint32_t, 3> indices;
  for (uint32_t i = 0; i < operands.size(); ++i)
    indices.push_back(i);
  graph.body.push_back({kind, resultDtype(kind, operands, castTo), indices});
  return graph;
}

Tensor cpuResult(const ScalarGraph &graph, const std::vector<Tensor> &inputs) {
  const ScalarInstr &instr = graph.body.at(0);
  tg::ir::OpAttrs attrs;
  attrs.dtype = instr.dtype;
  return tg::runtime::runOp(tg::ir::Op(instr.kind, attrs), inputs, {{instr.dtype, {}}})[0];
}

/// A body run instruction by instruction with the CPU kernels over whole tensors, then broadcast to the shape
/// of all inputs (a kernel's output shape, even where the last value reads fewer of them).
Tensor reference(const ScalarGraph &graph, const std::vector<Tensor> &inputs) {
  std::vector<Tensor> values = inputs;
  for (const ScalarInstr &instr : graph.body) {
    if (instr.kind == OpKind::Full) {
      values.push_back(Tensor::fromData(tg::ir::TensorData::scalar(instr.dtype, instr.immediate)));
      continue;
    }
    ScalarGraph single;
    std::vector<Tensor> operands;
    for (uint32_t operand : instr.operands) {
      single.inputDtypes.push_back(graph.dtypeOf(operand));
      operands.push_back(values[operand]);
    }
    single.body.push_back(instr);
    values.push_back(cpuResult(single, operands));
  }
  Shape shape;
  for (const Tensor &input : inputs)
    shape = tg::runtime::broadcastShapes(shape, input.shape());
  return materialize(values.back(), shape);
}

/// The one-op body against the CPU kernel on a broadcast of the inputs (every combination of their edge
/// values), and on 0-d inputs (the first edge values).
void expectOpMatches(OpKind kind, const std::vector<DType> &operands, const std::vector<Tensor> &values,
                     DType castTo = DType::F32) {
  ScalarGraph graph = singleOp(kind, operands, castTo);
  std::string what = std::string(tg::ir::opName(kind));
  for (DType dtype : operands)
    what += std::string(" ") + tg::ir::dtypeName(dtype);
  if (kind == OpKind::Cast) what += std::string(" to ") + tg::ir::dtypeName(castTo);
  int64_t ulps = isTranscendental(kind) && tg::ir::isFloat(operands[0]) ? 2 : 0;

  // Input k varies along axis k: shapes [n,1,1], [1,m,1], [1,1,p], so the output holds every combination.
  std::vector<Tensor> broadcast;
  for (size_t k = 0; k < values.size(); ++k) {
    Shape shape(values.size(), 1);
    shape[k] = values[k].numElements();
    broadcast.push_back(values[k].reshaped(shape));
  }
  expectKernelsMatch(graph, broadcast, cpuResult(graph, broadcast), ulps, 0, what);

  std::vector<Tensor> scalars;
  for (const Tensor &tensor : values)
    scalars.push_back(tensor.view({}, {}, tensor.offset() + 1));
  expectKernelsMatch(graph, scalars, cpuResult(graph, scalars), ulps, 0, what + " 0-d");
}

// ---- Building bodies ----

class GraphBuilder {
public:
  explicit GraphBuilder(const std::vector<DType> &inputs) {
    graph.inputDtypes.assign(inputs.begin(), inputs.end());
  }
  uint32_t op(OpKind kind, DType dtype, std::vector<uint32_t> operands) {
    graph.body.push_back({kind, dtype, {operands.begin(), operands.end()}});
    return static_cast<uint32_t>(graph.numValues() - 1);
  }
  uint32_t constant(DType dtype, double value) {
    graph.body.push_back({OpKind::Full, dtype, {}, value});
    return static_cast<uint32_t>(graph.numValues() - 1);
  }
  ScalarGraph graph;
};

// ---- Tests ----

// First in the file, so that its first compile is the process's first (it includes creating the JIT).
TEST(CodegenLatency, ReportsColdCompileTime) {
  using Clock = std::chrono::steady_clock;
  auto milliseconds = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::vector<double> times;
  for (double immediate : {1.25, 2.25, 3.25}) { // a new constant each time: a kernel the cache has not seen
    GraphBuilder builder({DType::F32, DType::F32});
    uint32_t product = builder.op(OpKind::Mul, DType::F32, {0, 1});
    builder.op(OpKind::Add, DType::F32, {product, builder.constant(DType::F32, immediate)});
    auto start = Clock::now();
    tg::codegen::HostKernel kernel = tg::codegen::compileHostKernel({&builder.graph, Layout::Contiguous});
    times.push_back(milliseconds(Clock::now() - start));
    ASSERT_NE(kernel, nullptr);
  }
  // The same a*b + c: cached for the contiguous layout, new for the strided one and for PTX.
  auto timed = [&](auto compile) {
    GraphBuilder builder({DType::F32, DType::F32});
    uint32_t product = builder.op(OpKind::Mul, DType::F32, {0, 1});
    builder.op(OpKind::Add, DType::F32, {product, builder.constant(DType::F32, 1.25)});
    auto start = Clock::now();
    compile(builder.graph);
    return milliseconds(Clock::now() - start);
  };
  double cached = timed([](const ScalarGraph &graph) {
    tg::codegen::compileHostKernel({&graph, Layout::Contiguous});
  });
  double strided = timed([](const ScalarGraph &graph) {
    tg::codegen::compileHostKernel({&graph, Layout::Strided});
  });
  double ptx = missingLibdevice().empty() ? timed([](const ScalarGraph &graph) {
    tg::codegen::emitPtx({&graph, Layout::Contiguous});
  })
                                          : 0.0;
  std::printf(
      "[ latency  ] compileHostKernel of a*b+c, contiguous: first %.1f ms (with JIT setup), then %.1f ms and "
      "%.1f ms, cached %.3f ms; strided %.1f ms; emitPtx %.1f ms\n",
      times[0], times[1], times[2], cached, strided, ptx);
  RecordProperty("first_compile_ms", std::to_string(times[0]));
  RecordProperty("warm_compile_ms", std::to_string(times[2]));
}

TEST(CodegenOps, UnaryOpsMatchCpuKernels) {
  for (const OpDtypes &entry : kUnaryOps)
    for (DType dtype : entry.dtypes) {
      // A [7, 11] view of a [11, 7] array: strided, not contiguous.
      Tensor values = longValues(dtype, 77).reshaped({11, 7}).permuted({1, 0});
      ScalarGraph graph = singleOp(entry.kind, {dtype});
      std::string what = std::string(tg::ir::opName(entry.kind)) + " " + tg::ir::dtypeName(dtype);
      int64_t ulps = isTranscendental(entry.kind) ? 2 : 0;
      expectKernelsMatch(graph, {values}, cpuResult(graph, {values}), ulps, 0, what);
      Tensor scalar = values.view({}, {}, values.offset() + 3);
      expectKernelsMatch(graph, {scalar}, cpuResult(graph, {scalar}), ulps, 0, what + " 0-d");
    }
}

TEST(CodegenOps, BinaryOpsMatchCpuKernels) {
  for (const OpDtypes &entry : kBinaryOps)
    for (DType dtype : entry.dtypes) {
      // Integer pow of a negative exponent is an error (CodegenErrors): exponents here are not negative.
      bool nonNegative = entry.kind == OpKind::Pow && !tg::ir::isFloat(dtype);
      expectOpMatches(entry.kind, {dtype, dtype}, {edgeValues(dtype), edgeValues(dtype, nonNegative)});
    }
}

TEST(CodegenOps, WhereAndClipMatchCpuKernels) {
  for (DType dtype : kAll) {
    expectOpMatches(
        OpKind::Where, {DType::Bool, dtype, dtype},
        {vectorTensor(DType::Bool, std::vector<uint8_t>{1, 0, 1}), edgeValues(dtype), edgeValues(dtype)});
    expectOpMatches(OpKind::Clip, {dtype, dtype, dtype},
                    {edgeValues(dtype), edgeValues(dtype), edgeValues(dtype)});
  }
}

TEST(CodegenOps, CastsMatchCpuKernels) {
  for (DType from : kAll)
    for (DType to : kAll)
      expectOpMatches(OpKind::Cast, {from}, {longValues(from, 45)}, to);
}

TEST(CodegenGraphs, ReluOfMultiplyAdd) {
  GraphBuilder builder({DType::F32, DType::F32, DType::F32});
  uint32_t product = builder.op(OpKind::Mul, DType::F32, {0, 1});
  uint32_t sum = builder.op(OpKind::Add, DType::F32, {product, 2});
  builder.op(OpKind::Relu, DType::F32, {sum});
  std::vector<Tensor> inputs = {longValues(DType::F32, 60).reshaped({3, 4, 5}),
                                edgeValues(DType::F32).view({4, 5}, {1, 4}, 3), // a transposed window
                                longValues(DType::F32, 5).reshaped({5})};
  expectKernelsMatch(builder.graph, inputs, reference(builder.graph, inputs), 0, 0, "relu(a * b + c)");
}

TEST(CodegenGraphs, TenOpChain) {
  // t = tanh(sqrt(abs(sin(a * b) - c)) + log1p(abs(b))), then clip(maximum(t * 2, c), -1, 1) / b
  GraphBuilder builder({DType::F64, DType::F64, DType::F64});
  uint32_t v = builder.op(OpKind::Mul, DType::F64, {0, 1});
  v = builder.op(OpKind::Sin, DType::F64, {v});
  v = builder.op(OpKind::Sub, DType::F64, {v, 2});
  v = builder.op(OpKind::Abs, DType::F64, {v});
  v = builder.op(OpKind::Sqrt, DType::F64, {v});
  uint32_t w = builder.op(OpKind::Log1p, DType::F64, {builder.op(OpKind::Abs, DType::F64, {1})});
  v = builder.op(OpKind::Tanh, DType::F64, {builder.op(OpKind::Add, DType::F64, {v, w})});
  v = builder.op(OpKind::Mul, DType::F64, {v, builder.constant(DType::F64, 2)});
  v = builder.op(OpKind::Maximum, DType::F64, {v, 2});
  v = builder.op(OpKind::Clip, DType::F64,
                 {v, builder.constant(DType::F64, -1), builder.constant(DType::F64, 1)});
  builder.op(OpKind::Div, DType::F64, {v, 1});
  // Rank 3 with a broadcast input, over a range split mid-row: exercises the host's odometer.
  std::vector<Tensor> inputs = {longValues(DType::F64, 24).reshaped({2, 3, 4}), longValues(DType::F64, 4),
                                longValues(DType::F64, 6).reshaped({2, 3, 1})};
  // Each libm call may be a libmvec one on the host, a few ulps apart, which later ops carry along.
  expectKernelsMatch(builder.graph, inputs, reference(builder.graph, inputs), 8, 1e-13, "ten-op chain");
}

TEST(CodegenGraphs, WhereWithImmediate) {
  for (DType dtype : kFloats) {
    GraphBuilder builder({dtype, dtype});
    uint32_t positive = builder.op(OpKind::Gt, DType::Bool, {0, builder.constant(dtype, 0)});
    builder.op(OpKind::Where, dtype, {positive, builder.op(OpKind::Exp, dtype, {0}), 1});
    std::vector<Tensor> inputs = {longValues(dtype, 100), longValues(dtype, 100)};
    expectKernelsMatch(builder.graph, inputs, reference(builder.graph, inputs), 2, 0,
                       std::string("where(x > 0, exp(x), y) ") + tg::ir::dtypeName(dtype));
  }
}

TEST(CodegenGraphs, MathOfImmediatesIsLibmsBitForBit) {
  // LLVM would fold these calls at compile time through double precision, a few ulps from libm's results.
  std::vector<OpKind> functions;
  for (const OpDtypes &entry : kUnaryOps)
    if (isTranscendental(entry.kind)) functions.push_back(entry.kind);
  ASSERT_GE(functions.size(), 16u); // every MATH_OP, sigmoid and softplus
  for (DType dtype : kFloats) {
    // Without inputs: tanh(sigmoid(0.25 - tanh(0))), a 0-d kernel.
    GraphBuilder constantOnly({});
    uint32_t v = constantOnly.op(OpKind::Tanh, dtype, {constantOnly.constant(dtype, 0)});
    v = constantOnly.op(OpKind::Sub, dtype, {constantOnly.constant(dtype, 0.25), v});
    constantOnly.op(OpKind::Tanh, dtype, {constantOnly.op(OpKind::Sigmoid, dtype, {v})});
    expectKernelsMatch(constantOnly.graph, {}, reference(constantOnly.graph, {}), 0, 0,
                       std::string("immediates only ") + tg::ir::dtypeName(dtype));

    // x + f(c) + pow(c, c') for every function f, over a vector long enough to vectorize.
    for (double immediate : {0.3, 0.7, 1.3, 2.9, -0.6, 5.5}) {
      GraphBuilder builder({dtype});
      uint32_t sum = 0;
      for (OpKind function : functions)
        sum = builder.op(OpKind::Add, dtype,
                         {sum, builder.op(function, dtype, {builder.constant(dtype, immediate)})});
      uint32_t power =
          builder.op(OpKind::Pow, dtype, {builder.constant(dtype, immediate), builder.constant(dtype, 1.7)});
      builder.op(OpKind::Add, dtype, {sum, power});
      std::vector<Tensor> inputs = {longValues(dtype, 40)};
      expectKernelsMatch(builder.graph, inputs, reference(builder.graph, inputs), 0, 0,
                         "x + f(" + std::to_string(immediate) + ") " + tg::ir::dtypeName(dtype));
    }
  }
}

TEST(CodegenGraphs, CastsThroughEveryDtype) {
  // f64 -> f32 -> i64 -> i32 -> f64 -> bool -> i32 -> i64 -> f64, plus an integer immediate on the way.
  GraphBuilder builder({DType::F64});
  uint32_t v = builder.op(OpKind::Cast, DType::F32, {0});
  v = builder.op(OpKind::Cast, DType::I64, {v});
  v = builder.op(OpKind::Cast, DType::I32, {v});
  v = builder.op(OpKind::Mul, DType::I32, {v, builder.constant(DType::I32, 3)});
  v = builder.op(OpKind::Cast, DType::F64, {v});
  v = builder.op(OpKind::Cast, DType::Bool, {v});
  v = builder.op(OpKind::Cast, DType::I32, {v});
  v = builder.op(OpKind::Cast, DType::I64, {v});
  builder.op(OpKind::Cast, DType::F64, {v});
  std::vector<Tensor> inputs = {longValues(DType::F64, 50)};
  expectKernelsMatch(builder.graph, inputs, reference(builder.graph, inputs), 0, 0, "cast chain");
}

TEST(CodegenGraphs, StridedRangesCrossRows) {
  // Output [3, 4, 5]; a: a permuted view, b: broadcast along two axes; ranges cut mid-row and mid-plane.
  GraphBuilder builder({DType::I64, DType::I64});
  builder.op(OpKind::Sub, DType::I64, {0, 1});
  Tensor a = longValues(DType::I64, 60).reshaped({5, 3, 4}).permuted({1, 2, 0});
  Tensor b = longValues(DType::I64, 4).reshaped({4, 1});
  Tensor expected = reference(builder.graph, {a, b});
  tg::codegen::KernelSpec spec{&builder.graph, Layout::Strided};
  tg::codegen::HostKernel kernel = tg::codegen::compileHostKernel(spec);
  for (int64_t cut : {1, 4, 5, 7, 19, 20, 21, 41, 59}) {
    Launch launch(builder.graph, {a, b});
    ASSERT_EQ(tg::codegen::runHostKernel(spec, kernel, launch.args, 0, cut), 0);
    ASSERT_EQ(tg::codegen::runHostKernel(spec, kernel, launch.args, cut, 60), 0);
    expectMatches(launch.output, expected, 0, 0, "cut at " + std::to_string(cut));
  }
  // An empty output: nothing to do.
  Tensor empty = Tensor::empty(DType::I64, {3, 4, 0});
  Launch launch(builder.graph, {empty, b});
  EXPECT_EQ(tg::codegen::runHostKernel(spec, kernel, launch.args, 0, 0), 0);
}

TEST(CodegenGraphs, StridedKernelsWalkMergedPlanesAndKeepTheLastAxis) {
  // The runtime walks planes (the last two axes) of the space with size-1 outer axes dropped and axes merged
  // where the strides allow: [5, 1, 3, 2] + [2] is one plane of 15 rows; [6, 1] with a trailing size-1 axis
  // keeps it (the kernel is specialized for its strides); a permuted input merges nothing. Ranges cut planes
  // and rows anywhere.
  GraphBuilder builder({DType::I64, DType::I64});
  builder.op(OpKind::Sub, DType::I64, {0, 1});
  struct Case {
    Tensor a, b;
  };
  std::vector<Case> cases = {
      {longValues(DType::I64, 30).reshaped({5, 1, 3, 2}), longValues(DType::I64, 2)},
      {longValues(DType::I64, 6).reshaped({6, 1}), longValues(DType::I64, 1).reshaped({1, 1})},
      {longValues(DType::I64, 30).reshaped({2, 3, 5}).permuted({2, 0, 1}), longValues(DType::I64, 3)},
  };
  for (const Case &c : cases) {
    Tensor expected = reference(builder.graph, {c.a, c.b});
    Launch launch(builder.graph, {c.a, c.b});
    tg::codegen::KernelSpec spec{&builder.graph, Layout::Strided,
                                 tg::codegen::innerStridePattern(launch.strides, 2, launch.shape.size())};
    tg::codegen::HostKernel kernel = tg::codegen::compileHostKernel(spec);
    for (int64_t cut = 0; cut <= launch.count; ++cut) {
      Launch run(builder.graph, {c.a, c.b});
      ASSERT_EQ(tg::codegen::runHostKernel(spec, kernel, run.args, 0, cut), 0);
      ASSERT_EQ(tg::codegen::runHostKernel(spec, kernel, run.args, cut, run.count), 0);
      expectMatches(run.output, expected, 0, 0, "cut at " + std::to_string(cut));
    }
  }
}

TEST(CodegenGraphs, InnerStrideSpecializationsGiveTheGeneralKernelsResults) {
  // Output [6, 37]: a contiguous (inner stride 1), b a column broadcast along the rows (inner stride 0), c a
  // transposed view (inner stride 6, left general); the pattern the runtime computes, and ranges that cut
  // rows.
  GraphBuilder builder({DType::F32, DType::F32, DType::F32});
  builder.op(OpKind::Add, DType::F32, {builder.op(OpKind::Mul, DType::F32, {0, 1}), 2});
  Tensor a = longValues(DType::F32, 6 * 37).reshaped({6, 37});
  Tensor b = longValues(DType::F32, 6).reshaped({6, 1});
  Tensor c = longValues(DType::F32, 37 * 6).reshaped({37, 6}).permuted({1, 0});
  Tensor expected = reference(builder.graph, {a, b, c});
  Launch launch(builder.graph, {a, b, c});
  std::vector<tg::codegen::InnerStride> pattern = tg::codegen::innerStridePattern(launch.strides, 3, 2);
  using tg::codegen::InnerStride;
  ASSERT_EQ(pattern, (std::vector<InnerStride>{InnerStride::Unit, InnerStride::Zero, InnerStride::Any}));
  tg::codegen::KernelSpec spec{&builder.graph, Layout::Strided, pattern};
  EXPECT_NE(tg::codegen::kernelName(spec), tg::codegen::kernelName({&builder.graph, Layout::Strided}));
  tg::codegen::HostKernel kernel = tg::codegen::compileHostKernel(spec);
  for (int64_t cut : {0, 1, 36, 37, 38, 100, 222}) {
    Launch run(builder.graph, {a, b, c});
    ASSERT_EQ(tg::codegen::runHostKernel(spec, kernel, run.args, 0, cut), 0);
    ASSERT_EQ(tg::codegen::runHostKernel(spec, kernel, run.args, cut, 222), 0);
    expectMatches(run.output, expected, 0, 0, "cut at " + std::to_string(cut));
  }
  // A 0-d output: every input is read at offset 0 (pattern Zero).
  EXPECT_EQ(tg::codegen::innerStridePattern({}, 2, 0),
            (std::vector<InnerStride>{InnerStride::Zero, InnerStride::Zero}));
}

TEST(CodegenErrors, NegativeIntegerPower) {
  for (DType dtype : {DType::I32, DType::I64}) {
    ScalarGraph graph = singleOp(OpKind::Pow, {dtype, dtype});
    Tensor base = longValues(dtype, 300);
    tg::ir::TensorData exponents(dtype, {300});
    for (int64_t i = 0; i < 300; ++i)
      exponents.set(i, i == 250 ? -1 : i % 5);
    std::vector<Tensor> inputs = {base, Tensor::fromData(exponents)};
    for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
      EXPECT_EQ(runHost(graph, layout, inputs).code, tg::codegen::kNegativeIntegerPower);
      EXPECT_EQ(runSimDevice(graph, layout, inputs).code, tg::codegen::kNegativeIntegerPower);
    }
  }
  EXPECT_STREQ(tg::codegen::kernelErrorMessage(tg::codegen::kNegativeIntegerPower),
               "integers to negative integer powers are not allowed");
}

TEST(CodegenApi, KernelNamesAreStable) {
  ScalarGraph graph = singleOp(OpKind::Add, {DType::F32, DType::F32});
  std::string name = tg::codegen::kernelName({&graph, Layout::Contiguous});
  EXPECT_EQ(name.size(), std::string("tgc_fused_").size() + 16);
  EXPECT_EQ(name.rfind("tgc_fused_", 0), 0u);
  ScalarGraph copy = graph;
  EXPECT_EQ(tg::codegen::kernelName({&copy, Layout::Contiguous}), name);
  EXPECT_NE(tg::codegen::kernelName({&graph, Layout::Strided}), name);
  ScalarGraph other = singleOp(OpKind::Sub, {DType::F32, DType::F32});
  EXPECT_NE(tg::codegen::kernelName({&other, Layout::Contiguous}), name);
}

/// codegen::kernelLayout, the one rule the runtime's launches (shapes and strides) and --emit (static shapes,
/// no strides) share: Contiguous exactly when every input is read in the kernel's own order.
TEST(CodegenApi, KernelLayoutReadsEveryInputInTheKernelsOrder) {
  using tg::codegen::kernelLayout;
  using tg::codegen::LayoutInput;
  ScalarGraph add = singleOp(OpKind::Add, {DType::F32, DType::F32});
  ScalarGraph sum = singleOp(OpKind::Exp, {DType::F32});
  sum.reduction = OpKind::Sum;
  Shape space = {3, 4}, rowMajor = {4, 1}, transposed = {1, 3}, row = {4}, unit = {1};
  std::vector<LayoutInput> plain = {{space, rowMajor}, {space, rowMajor}};
  EXPECT_EQ(kernelLayout(add, space, plain), Layout::Contiguous);
  EXPECT_EQ(kernelLayout(add, space, {{{space, rowMajor}, {space, transposed}}}), Layout::Strided);
  EXPECT_EQ(kernelLayout(add, space, {{{space, rowMajor}, {row, unit}}}), Layout::Strided); // broadcast
  // No strides: a static type, read as C-contiguous.
  EXPECT_EQ(kernelLayout(add, space, {{{space}, {space}}}), Layout::Contiguous);
  // An elementwise input of another rank is Strided even where only leading 1s are missing.
  Shape wide = {1, 4};
  EXPECT_EQ(kernelLayout(add, wide, {{{wide, rowMajor}, {row, unit}}}), Layout::Strided);

  // Reductions walk the kept axes, then the reduced ones: the trailing axis of a C-contiguous input is read
  // in order, the leading one across the rows; a transposed view whose transposition is that order is read
  // in order.
  std::vector<LayoutInput> one = {{space, rowMajor}};
  int64_t last[] = {1}, first[] = {0}, fromTheEnd[] = {-2};
  EXPECT_EQ(kernelLayout(sum, space, one, last), Layout::Contiguous);
  EXPECT_EQ(kernelLayout(sum, space, one, first), Layout::Strided);
  EXPECT_EQ(kernelLayout(sum, space, one, fromTheEnd), Layout::Strided);
  EXPECT_EQ(kernelLayout(sum, space, {{{space, transposed}}}, first), Layout::Contiguous);
  EXPECT_EQ(kernelLayout(sum, space, {{{space}}}, first), Layout::Strided);
  EXPECT_EQ(kernelLayout(sum, wide, {{{row, unit}}}, last), Layout::Contiguous); // leading 1s do not matter
}

TEST(CodegenApi, CacheIsSharedAcrossThreads) {
  GraphBuilder builder({DType::I32});
  builder.op(OpKind::Maximum, DType::I32, {0, builder.constant(DType::I32, 17)}); // no other test compiles it
  const ScalarGraph &graph = builder.graph;
  std::vector<tg::codegen::HostKernel> kernels(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kernels.size(); ++i)
    threads.emplace_back([&, i] {
      ScalarGraph copy = graph;
      kernels[i] = tg::codegen::compileHostKernel({&copy, Layout::Strided});
    });
  for (std::thread &thread : threads)
    thread.join();
  for (tg::codegen::HostKernel kernel : kernels)
    EXPECT_EQ(kernel, kernels[0]);
}

TEST(CodegenApi, HostLlvmVectorizesMathThroughLibmvec) {
  ScalarGraph graph = singleOp(OpKind::Exp, {DType::F32});
  std::string text = tg::codegen::emitHostLlvm({&graph, Layout::Contiguous});
  EXPECT_NE(text.find("define"), std::string::npos);
  EXPECT_NE(text.find(tg::codegen::kernelName({&graph, Layout::Contiguous})), std::string::npos);
#if defined(__x86_64__) && defined(__linux__)
  EXPECT_NE(text.find("_ZGV"), std::string::npos) << "exp did not vectorize through libmvec:\n" << text;
#endif
}

TEST(CodegenApi, DeviceLlvmHasOneKernelAndNoLibdeviceDeclarations) {
  if (std::string missing = missingLibdevice(); !missing.empty()) GTEST_SKIP() << missing;
  ScalarGraph graph = singleOp(OpKind::Tanh, {DType::F64});
  std::string text = tg::codegen::emitDeviceLlvm({&graph, Layout::Strided});
  EXPECT_NE(text.find("ptx_kernel"), std::string::npos) << text;
  EXPECT_EQ(text.find("declare double @__nv_"), std::string::npos) << text;
  EXPECT_THROW(tg::codegen::emitPtx({&graph, Layout::Strided}, "sm_999"), tg::ir::UserError);
}

/// Bodies that use every op of `dtype` (each feeding the next, so that none is dead), for PTX checks.
ScalarGraph everyOpChain(DType dtype) {
  GraphBuilder builder({dtype, dtype, DType::Bool});
  uint32_t v = 0;
  for (const OpDtypes &entry : kUnaryOps)
    if (std::find(entry.dtypes.begin(), entry.dtypes.end(), dtype) != entry.dtypes.end())
      v = builder.op(entry.kind, dtype, {v});
  for (const OpDtypes &entry : kBinaryOps) {
    if (std::find(entry.dtypes.begin(), entry.dtypes.end(), dtype) == entry.dtypes.end()) continue;
    if (tg::ir::isComparison(entry.kind) && dtype != DType::Bool)
      v = builder.op(OpKind::Where, dtype, {builder.op(entry.kind, DType::Bool, {v, 1}), v, 1});
    else
      v = builder.op(entry.kind, dtype, {v, 1});
  }
  v = builder.op(OpKind::Clip, dtype, {v, 0, 1});
  v = builder.op(OpKind::Where, dtype, {2, v, builder.constant(dtype, 3)});
  for (DType to : kAll) // every cast out of dtype and back
    v = builder.op(OpKind::Cast, dtype, {builder.op(OpKind::Cast, to, {v})});
  return builder.graph;
}

TEST(CodegenPtx, PtxassAcceptsEveryOp) {
  const char *ptxas = "/usr/local/cuda/bin/ptxas";
  if (access(ptxas, X_OK) != 0) GTEST_SKIP() << "no ptxas at " << ptxas << " to check the PTX";
  if (std::string missing = missingLibdevice(); !missing.empty()) GTEST_SKIP() << missing;
  std::filesystem::path directory = std::filesystem::temp_directory_path() /
                                    ("tgc_codegen_test_" + std::to_string(static_cast<long>(getpid())));
  std::filesystem::create_directories(directory);
  for (DType dtype : kAll) {
    ScalarGraph graph = everyOpChain(dtype);
    for (Layout layout : {Layout::Contiguous, Layout::Strided})
      for (const char *arch : {"sm_90", "sm_80"}) {
        std::string ptx = tg::codegen::emitPtx({&graph, layout}, arch);
        std::string what = std::string(tg::ir::dtypeName(dtype)) + " " + layoutName(layout) + " " + arch;
        EXPECT_NE(ptx.find(".entry " + tg::codegen::kernelName({&graph, layout})), std::string::npos) << what;
        EXPECT_NE(ptx.find(std::string(".target ") + arch), std::string::npos) << what;
        std::filesystem::path file = directory / (std::string(tg::ir::dtypeName(dtype)) + "_" +
                                                  layoutName(layout) + "_" + arch + ".ptx");
        std::ofstream(file) << ptx;
        std::string command = std::string(ptxas) + " -arch=" + arch + " " + file.string() + " -o /dev/null";
        EXPECT_EQ(std::system(command.c_str()), 0) << what << ": ptxas rejected " << file;
      }
  }
  std::filesystem::remove_all(directory);
}

} // namespace
