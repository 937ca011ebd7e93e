// argmax/argmin as two fused reductions (runtime/ArgReduction.h, how the CUDA device computes them), run here
// through the host's generated kernels and compared with the CPU's argmax/argmin: ties go to the first index,
// a NaN wins (the first NaN), every axis, keepdims, integer and boolean inputs.
#include "runtime/ArgReduction.h"

#include "runtime/Kernels.h"

#include <cmath>
#include <gtest/gtest.h>
#include <random>

namespace {

using tg::ir::DType;
using tg::ir::Op;
using tg::ir::OpKind;
using tg::ir::Place;
using tg::ir::TensorType;
using tg::runtime::Tensor;

Tensor values(DType dtype, std::vector<int64_t> shape, uint32_t seed, bool withNaN) {
  tg::ir::TensorData data(dtype, shape);
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> small(0, 4); // few distinct values: many ties
  for (int64_t i = 0; i < data.numElements(); ++i)
    data.set(i, withNaN && i % 7 == 3 && i % 3 == 0 ? NAN : small(random));
  return Tensor::fromData(data);
}

Tensor planned(const Op &op, const Tensor &x, size_t axis) {
  int64_t length = x.shape()[axis];
  tg::runtime::ArgReduction plan = tg::runtime::planArgReduction(op, x.dtype(), axis, op.attrs().keepdims);
  Tensor extreme = tg::runtime::runOp(plan.extreme, {x}, {TensorType{x.dtype(), {}, Place::Host}})[0];
  Tensor positions = Tensor::empty(DType::I64, {length});
  for (int64_t i = 0; i < length; ++i)
    positions.data<int64_t>()[i] = i;
  std::vector<int64_t> shape(x.rank(), 1), strides(x.rank(), 0);
  shape[axis] = length;
  strides[axis] = 1;
  Tensor index = positions.view(shape, strides, 0);
  return tg::runtime::runOp(plan.first, {x, extreme, index}, {TensorType{DType::I64, {}, Place::Host}})[0];
}

TEST(ArgReductionTest, MatchesTheCpuKernels) {
  int cases = 0;
  for (OpKind kind : {OpKind::Argmax, OpKind::Argmin})
    for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::Bool})
      for (size_t axis : {0, 1, 2})
        for (bool keepdims : {false, true}) {
          bool withNaN = dtype == DType::F32 || dtype == DType::F64;
          Tensor x = values(dtype, {5, 6, 7}, static_cast<uint32_t>(axis * 10 + keepdims), withNaN);
          tg::ir::OpAttrs attrs;
          attrs.axes = {static_cast<int64_t>(axis)};
          attrs.keepdims = keepdims;
          Op op(kind, attrs);
          Tensor want = tg::runtime::runOp(op, {x}, {TensorType{DType::I64, {}, Place::Host}})[0];
          Tensor got = planned(op, x, axis);
          ASSERT_EQ(got.shape(), want.shape()) << tg::ir::opName(kind) << " axis " << axis;
          ASSERT_EQ(got.toData(), want.toData())
              << tg::ir::opName(kind) << " of " << tg::ir::dtypeName(dtype) << " over axis " << axis;
          ++cases;
        }
  EXPECT_EQ(cases, 48);
}

TEST(ArgReductionTest, TheFirstNaNWins) {
  tg::ir::TensorData data(DType::F32, {6});
  double row[] = {1, 5, NAN, 5, NAN, 0};
  for (int64_t i = 0; i < 6; ++i)
    data.set(i, row[i]);
  tg::ir::OpAttrs attrs;
  attrs.axes = {0};
  for (OpKind kind : {OpKind::Argmax, OpKind::Argmin})
    EXPECT_EQ(planned(Op(kind, attrs), Tensor::fromData(data), 0).toData().get(0), 2);
}

} // namespace
