// Host tensors: views share their buffer, contiguous() copies only when needed, copyFrom follows strides.
#include "runtime/Tensor.h"

#include <gtest/gtest.h>

namespace {

using tg::ir::DType;
using tg::runtime::Tensor;

Tensor iota(std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(DType::I32, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<int32_t>()[i] = static_cast<int32_t>(i);
  return t;
}

std::vector<int32_t> elements(const Tensor &t) {
  tg::ir::TensorData data = t.toData();
  return std::vector<int32_t>(data.data<int32_t>(), data.data<int32_t>() + data.numElements());
}

TEST(TensorTest, BuffersAreAligned) {
  for (int64_t size : {0, 1, 3, 100}) {
    Tensor t = Tensor::empty(DType::F64, {size});
    EXPECT_TRUE(t.defined());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.rawData()) % 64, 0u);
  }
  EXPECT_FALSE(Tensor().defined());
}

TEST(TensorTest, ViewsAndContiguousCopies) {
  Tensor matrix = iota({2, 3});
  EXPECT_TRUE(matrix.isContiguous());
  EXPECT_EQ(matrix.strides(), (std::vector<int64_t>{3, 1}));
  Tensor transposed = matrix.permuted({1, 0});
  EXPECT_FALSE(transposed.isContiguous());
  EXPECT_EQ(transposed.data<int32_t>(), matrix.data<int32_t>()); // a view
  Tensor copy = transposed.contiguous();
  EXPECT_TRUE(copy.isContiguous());
  EXPECT_NE(copy.data<int32_t>(), matrix.data<int32_t>());
  EXPECT_EQ(elements(transposed), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(matrix.contiguous().data<int32_t>(), matrix.data<int32_t>()); // no copy

  Tensor row = matrix.view({3}, {1}, 3); // the second row
  EXPECT_EQ(elements(row), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(elements(transposed.reshaped({6})), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(elements(matrix.view({2, 3}, {0, 1}, 0)), (std::vector<int32_t>{0, 1, 2, 0, 1, 2})); // broadcast
}

TEST(TensorTest, CopyFromFollowsStrides) {
  Tensor target = Tensor::empty(DType::I32, {3, 2});
  target.copyFrom(iota({2, 3}).permuted({1, 0}));
  EXPECT_EQ(elements(target), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  Tensor column = target.view({3}, {2}, 1);
  column.copyFrom(iota({3}));
  EXPECT_EQ(elements(target), (std::vector<int32_t>{0, 0, 1, 1, 2, 2}));
}

TEST(TensorTest, DataRoundTrip) {
  tg::ir::TensorData data(DType::F32, {2, 2});
  for (int64_t i = 0; i < 4; ++i)
    data.set(i, 0.5 * static_cast<double>(i));
  Tensor t = Tensor::fromData(data);
  EXPECT_EQ(t.toData(), data);
  EXPECT_EQ(Tensor::fromData(tg::ir::TensorData(DType::I64, {0, 5})).toData().shape,
            (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(tg::runtime::shapeTuple({}), "()");
  EXPECT_EQ(tg::runtime::shapeTuple({5}), "(5,)");
  EXPECT_EQ(tg::runtime::shapeTuple({3, 4}), "(3, 4)");
}

} // namespace
