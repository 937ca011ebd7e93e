#include "runtime/Tensor.h"

#include <gtest/gtest.h>

using tg::runtime::Tensor;
TEST(TensorTest, Placeholder) { EXPECT_TRUE(Tensor::empty(tg::ir::DType::F32, {2, 3}).isContiguous()); }
