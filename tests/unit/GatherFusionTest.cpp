// Gathers fused into kernels (ir/ScalarGraph.h's gather instruction): a fused body that reads a table where
// its index values say gives, on the host (the generated kernel, over threads) and on the simulated device,
// what the CPU's own gather kernel followed by the CPU's elementwise or reduction kernel gives, for tables
// that are views (transposed, offset), several index arrays, indices along an axis, negative and i32 indices,
// a gather in a reduction's prologue; and an index out of range is the kernel's error, located at the gather.
#include "codegen/Kernel.h"
#include "ir/Graph.h"
#include "ir/ScalarGraph.h"
#include "runtime/Device.h"
#include "runtime/Kernels.h"

#include <gtest/gtest.h>
#include <memory>
#include <string>

namespace {

using tg::ir::Dim;
using tg::ir::DType;
using tg::ir::Op;
using tg::ir::OpAttrs;
using tg::ir::OpKind;
using tg::ir::Place;
using tg::ir::ScalarGraph;
using tg::ir::TensorData;
using tg::ir::TensorType;
using tg::runtime::Tensor;

Tensor values(DType dtype, const std::vector<int64_t> &shape, const std::function<double(int64_t)> &at) {
  TensorData data(dtype, shape);
  for (int64_t i = 0; i < data.numElements(); ++i)
    data.set(i, at(i));
  return Tensor::fromData(data);
}

TensorType typeOf(const Tensor &tensor, Place place) {
  TensorType type{tensor.dtype(), {}, place};
  for (int64_t size : tensor.shape())
    type.shape.push_back(Dim::of(size));
  return type;
}

/// One op on the CPU, its kernel's result.
Tensor cpu(OpKind kind, const OpAttrs &attrs, const std::vector<Tensor> &inputs) {
  tg::ir::Graph graph;
  std::vector<tg::ir::Value *> operands;
  for (const Tensor &input : inputs)
    operands.push_back(graph.addInput(typeOf(input, Place::Host), "x"));
  tg::ir::Node *node = graph.addNode(Op(kind, attrs), operands);
  return tg::runtime::runOp(node->op(), inputs, {node->output()->type()}).at(0);
}

/// The fused node of `body` over `inputs`, on the simulated device when `device`, else on the host.
Tensor runFused(const std::shared_ptr<ScalarGraph> &body, const OpAttrs &reduction,
                const std::vector<Tensor> &inputs, bool device) {
  OpAttrs attrs = reduction;
  attrs.body = body;
  Place place = device ? Place::Device : Place::Host;
  tg::ir::Graph graph;
  std::vector<tg::ir::Value *> operands;
  for (const Tensor &input : inputs)
    operands.push_back(graph.addInput(typeOf(input, place), "x"));
  tg::ir::Node *node = graph.addNode(Op(OpKind::Fused, attrs, place), operands);
  if (!device) return tg::runtime::runOp(node->op(), inputs, {node->output()->type()}).at(0);
  std::unique_ptr<tg::runtime::Device> sim = tg::runtime::makeSimDevice();
  std::vector<Tensor> uploaded;
  for (const Tensor &input : inputs)
    uploaded.push_back(sim->upload(input));
  return sim->download(sim->run(*node, uploaded));
}

void expectSame(const Tensor &got, const Tensor &want, const std::string &what) {
  TensorData a = got.toData(), b = want.toData();
  ASSERT_EQ(a.shape, b.shape) << what;
  for (int64_t i = 0; i < b.numElements(); ++i)
    ASSERT_NEAR(a.get(i), b.get(i), 1e-5 * std::abs(b.get(i))) << what << ", element " << i;
}

/// gather(table, indices...) along `axis`, then relu, fused and unfused.
void expectGatherRelu(const Tensor &table, const std::vector<Tensor> &indices, int64_t axis, bool alongAxis,
                      const std::vector<Tensor> &alignedIndices, const std::string &what) {
  OpAttrs gatherAttrs;
  gatherAttrs.axes = {axis};
  gatherAttrs.keepdims = alongAxis;
  std::vector<Tensor> gatherInputs{table};
  gatherInputs.insert(gatherInputs.end(), indices.begin(), indices.end());
  Tensor gathered = cpu(OpKind::Gather, gatherAttrs, gatherInputs);
  Tensor want = cpu(OpKind::Relu, {}, {gathered});

  auto body = std::make_shared<ScalarGraph>();
  body->inputDtypes.push_back(table.dtype());
  tg::ir::ScalarInstr gather{OpKind::Gather, table.dtype(), {0}, static_cast<double>(axis)};
  gather.indexRank =
      static_cast<uint32_t>(gathered.rank() - (table.rank() - static_cast<size_t>(indices.size())));
  for (uint32_t k = 0; k < alignedIndices.size(); ++k) {
    body->inputDtypes.push_back(alignedIndices[k].dtype());
    gather.operands.push_back(k + 1);
  }
  body->body.push_back(gather);
  body->body.push_back({OpKind::Relu, table.dtype(), {static_cast<uint32_t>(alignedIndices.size() + 1)}});
  std::vector<Tensor> inputs{table};
  inputs.insert(inputs.end(), alignedIndices.begin(), alignedIndices.end());
  expectSame(runFused(body, {}, inputs, false), want, what + " (host)");
  expectSame(runFused(body, {}, inputs, true), want, what + " (sim)");
}

TEST(GatherFusionTest, FusedGathersGiveTheCpuGathersNumbers) {
  auto wave = [](int64_t i) { return static_cast<double>((i * 7) % 23) - 11.0; };
  Tensor table = values(DType::F32, {37, 300}, wave);
  // Rows of a table, negative indices among them: the index aligned as [n, 1] (its axis, then the table's
  // last).
  Tensor rows = values(DType::I64, {50}, [](int64_t i) { return static_cast<double>((i * 11) % 74 - 37); });
  expectGatherRelu(table, {rows}, 0, false, {rows.reshaped({50, 1})}, "rows");
  // The same from a transposed view and from a view at an offset.
  Tensor transposed = values(DType::F32, {300, 37}, wave).permuted({1, 0});
  expectGatherRelu(transposed, {rows}, 0, false, {rows.reshaped({50, 1})}, "rows of a transposed table");
  Tensor offset = table.view({30, 300}, {300, 1}, 7 * 300);
  Tensor fewer = values(DType::I32, {50}, [](int64_t i) { return static_cast<double>((i * 11) % 60 - 30); });
  expectGatherRelu(offset, {fewer}, 0, false, {fewer.reshaped({50, 1})}, "i32 rows of a view at an offset");
  // Columns: x[:, idx], the index's axis last (no alignment).
  Tensor columns = values(DType::I64, {2, 9}, [](int64_t i) { return static_cast<double>(299 - 31 * i); });
  expectGatherRelu(table, {columns}, 1, false, {columns}, "columns");
  // Two index arrays broadcast together: p[i, j], one element each.
  Tensor i =
      values(DType::I64, {40, 1}, [](int64_t k) { return static_cast<double>(k % 37 - (k % 2) * 37); });
  Tensor j = values(DType::I32, {3}, [](int64_t k) { return static_cast<double>(k * 140 - 1); });
  expectGatherRelu(table, {i, j}, 0, false, {i, j}, "two index arrays");
  // Along an axis (take_along_axis): the index has the table's rank and broadcasts with it.
  Tensor along =
      values(DType::I64, {37, 4}, [](int64_t k) { return static_cast<double>((k * 97) % 600 - 300); });
  expectGatherRelu(table, {along}, 1, true, {along}, "along axis 1");
}

TEST(GatherFusionTest, AGatherInAReductionsPrologueGivesTheCpusBags) {
  Tensor table = values(DType::F32, {37, 300}, [](int64_t i) { return static_cast<double>(i % 29) / 8; });
  Tensor docs = values(DType::I64, {40, 8}, [](int64_t i) { return static_cast<double>((i * 5) % 37); });
  OpAttrs gatherAttrs;
  gatherAttrs.axes = {0};
  OpAttrs mean;
  mean.axes = {1};
  Tensor want = cpu(OpKind::Mean, mean, {cpu(OpKind::Gather, gatherAttrs, {table, docs})});
  auto body = std::make_shared<ScalarGraph>();
  body->inputDtypes = {DType::F32, DType::I64};
  tg::ir::ScalarInstr gather{OpKind::Gather, DType::F32, {0, 1}, 0};
  gather.indexRank = 2;
  body->body.push_back(gather);
  body->reduction = OpKind::Mean;
  for (bool device : {false, true})
    expectSame(runFused(body, mean, {table, docs.reshaped({40, 8, 1})}, device), want,
               device ? "bags (sim)" : "bags (host)");
}

TEST(GatherFusionTest, AnIndexOutOfRangeIsTheKernelsErrorAtTheGather) {
  Tensor table = values(DType::F32, {5, 64}, [](int64_t i) { return static_cast<double>(i); });
  auto body = std::make_shared<ScalarGraph>();
  body->inputDtypes = {DType::F32, DType::I64};
  tg::ir::ScalarInstr gather{OpKind::Gather, DType::F32, {0, 1}, 0};
  gather.indexRank = 1;
  body->body = {gather, {OpKind::Neg, DType::F32, {2}}};
  tg::ir::SourceLoc at{std::make_shared<const std::string>("model.tg"), 3, 14};
  body->locs = {at, {}};
  for (double bad : {5.0, -6.0}) {
    Tensor index = values(DType::I64, {300, 1}, [&](int64_t i) { return i == 250 ? bad : i % 5; });
    for (bool device : {false, true}) {
      std::string what = std::string(device ? "sim" : "host") + ", index " + std::to_string(int(bad));
      try {
        runFused(body, {}, {table, index}, device);
        ADD_FAILURE() << what << ": no error";
      } catch (const tg::ir::UserError &error) {
        EXPECT_EQ(error.message, "an index is out of bounds for the axis it indexes") << what;
        EXPECT_EQ(error.loc.str(), "model.tg:3:14") << what;
      }
    }
  }
}

} // namespace
