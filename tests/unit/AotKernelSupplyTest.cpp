// The kernel supply of libraries made ahead of time (runtime/aot/AotKernelSupply.h): a table of kernels by
// name. A Strided launch whose specialized kernel the table lacks gets the general Strided kernel of its
// body, and computes the same numbers with it; what the table lacks otherwise is an error that names the
// kernel.
#include "runtime/aot/AotKernelSupply.h"

#include "codegen/Kernel.h"

#include <gtest/gtest.h>

namespace tg {
namespace {

using codegen::InnerStride;
using codegen::KernelSpec;
using codegen::Layout;
using ir::DType;
using ir::OpKind;

ir::ScalarGraph addProgram() {
  ir::ScalarGraph body;
  body.inputDtypes = {DType::F32, DType::F32};
  body.body.push_back({OpKind::Add, DType::F32, {0, 1}, 0});
  return body;
}

TEST(AotKernelSupplyTest, AStridedLaunchTakesTheGeneralKernelOfItsBody) {
  ir::ScalarGraph body = addProgram();
  KernelSpec general{&body, Layout::Strided};
  codegen::HostKernel kernel = codegen::compileHostKernel(general);
  runtime::aot::LibraryImage image;
  image.hostKernels = {codegen::kernelName(general)};
  void *table[] = {reinterpret_cast<void *>(kernel)};
  runtime::aot::AotKernelSupply supply;
  supply.add(image, table);

  KernelSpec exact = general;
  EXPECT_EQ(supply.host(exact), kernel);
  // Specialized for a unit stride and a broadcast along the last axis: the table has only the general one.
  KernelSpec specialized{&body, Layout::Strided, {InnerStride::Unit, InnerStride::Unit}};
  ASSERT_EQ(supply.host(specialized), kernel);
  EXPECT_TRUE(specialized.innerStrides.empty()) << "the spec is made the kernel's";

  // a [2, 3] + b [3] (broadcast over the rows), through the spec as the supply left it.
  float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, out[6] = {};
  int64_t shape[2] = {2, 3}, strides[4] = {3, 1, 0, 1};
  const void *inputs[2] = {a, b};
  codegen::KernelArgs args{2, shape, inputs, strides, out};
  ASSERT_EQ(codegen::runHostKernel(specialized, kernel, args, 0, 6), codegen::kKernelOk);
  const float expected[6] = {11, 22, 33, 14, 25, 36};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(out[i], expected[i]) << i;
}

TEST(AotKernelSupplyTest, WhatTheTableLacksIsAnErrorNamingTheKernel) {
  ir::ScalarGraph body = addProgram();
  runtime::aot::AotKernelSupply supply; // an empty table: a library of another script
  KernelSpec contiguous{&body, Layout::Contiguous};
  try {
    supply.host(contiguous);
    FAIL() << "no kernel, no error";
  } catch (const ir::UserError &error) {
    EXPECT_NE(error.message.find(codegen::kernelName(contiguous)), std::string::npos) << error.message;
  }
  EXPECT_THROW(supply.ptx(contiguous, "sm_90"), ir::UserError);
  EXPECT_THROW(supply.simDevice(contiguous), ir::UserError);
}

} // namespace
} // namespace tg
