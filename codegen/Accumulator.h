// What a reduction computes, apart from how its kernels walk the elements (codegen/ReductionBuilder.cpp): the
// accumulator's type and identity, how an element enters it (lift), how two combine, and the stored result
// (finish), in LLVM IR, after runtime/ReductionKernels.cpp. Included by ReductionBuilder.cpp alone.
#pragma once

#include "codegen/Kernel.h"
#include "codegen/ScalarEmitter.h"
#include "ir/Assert.h"

#include <llvm/IR/IRBuilder.h>

namespace tg::codegen {

/// How a reduction accumulates, after runtime/ReductionKernels.cpp: float sums, means and products in double,
/// integer and bool sums and products in wrapping i64, integer and bool means in double, max/min in the
/// program's dtype (NaN wins), any/all in i1.
class Accumulator {
public:
  Accumulator(llvm::IRBuilder<> &builder, const ir::ScalarGraph &body)
      : b(builder), kind(*body.reduction), input(body.resultDtype()), output(kernelOutputDtype(body)) {
    llvm::LLVMContext &context = b.getContext();
    switch (kind) {
    case ir::OpKind::Sum:
    case ir::OpKind::Prod:
      type = ir::isFloat(input) ? b.getDoubleTy() : b.getInt64Ty();
      break;
    case ir::OpKind::Mean:
      type = b.getDoubleTy();
      break;
    case ir::OpKind::Max:
    case ir::OpKind::Min:
      type = registerType(context, input);
      break;
    case ir::OpKind::Any:
    case ir::OpKind::All:
      type = b.getInt1Ty();
      break;
    default:
      TG_ASSERT(false) << ir::opName(kind) << " cannot take a prologue";
    }
  }

  llvm::Type *type = nullptr;

  /// combine(identity, x) == x: Ops.def's identity (an empty reduction's value), or the lowest (highest)
  /// value for max (min), which have none (NumPy reports their reductions of no element).
  llvm::Value *identity() {
    bool isFloat = type->isFloatingPointTy();
    switch (kind) {
    case ir::OpKind::Max:
      if (isFloat) return llvm::ConstantFP::getInfinity(type, /*Negative=*/true);
      return input == ir::DType::Bool
                 ? b.getFalse()
                 : llvm::ConstantInt::get(type, llvm::APInt::getSignedMinValue(type->getIntegerBitWidth()));
    case ir::OpKind::Min:
      if (isFloat) return llvm::ConstantFP::getInfinity(type, /*Negative=*/false);
      return input == ir::DType::Bool
                 ? b.getTrue()
                 : llvm::ConstantInt::get(type, llvm::APInt::getSignedMaxValue(type->getIntegerBitWidth()));
    default:
      TG_ASSERT(ir::opInfo(kind).identity != ir::Identity::None) << ir::opName(kind) << " has no identity";
      if (ir::opInfo(kind).identity == ir::Identity::Zero) return llvm::Constant::getNullValue(type);
      return isFloat ? llvm::ConstantFP::get(type, 1.0) : llvm::ConstantInt::get(type, 1); // i1 1 is true
    }
  }

  /// A program value (registerType(input)) as an accumulator.
  llvm::Value *lift(llvm::Value *value) {
    switch (kind) {
    case ir::OpKind::Max:
    case ir::OpKind::Min:
      return value;
    case ir::OpKind::Any:
    case ir::OpKind::All:
      if (input == ir::DType::Bool) return value;
      return ir::isFloat(input) ? b.CreateFCmpUNE(value, llvm::ConstantFP::get(value->getType(), 0.0))
                                : b.CreateICmpNE(value, llvm::ConstantInt::get(value->getType(), 0));
    default: // sum, prod, mean
      if (ir::isFloat(input)) return b.CreateFPCast(value, type);
      if (type->isFloatingPointTy())
        return input == ir::DType::Bool ? b.CreateUIToFP(value, type) : b.CreateSIToFP(value, type);
      return input == ir::DType::Bool ? b.CreateZExt(value, type) : b.CreateSExtOrTrunc(value, type);
    }
  }

  /// Two accumulators as one. Float sums and products are marked reassociable: the host loop then keeps
  /// several partial sums (vector lanes, interleaved), the devices combine per-thread partials in a tree;
  /// both round differently from the CPU's pairwise double sum, by a few ulps of double, far below f32's and
  /// the tests' tolerance. max/min use llvm.maximum/minimum (NaN wins, as the CPU's; they order -0.0 below
  /// 0.0, where the CPU keeps the first of two zeros: equal values either way) so that the loop vectorizes.
  llvm::Value *combine(llvm::Value *x, llvm::Value *y) {
    bool isFloat = type->isFloatingPointTy();
    switch (kind) {
    case ir::OpKind::Sum:
    case ir::OpKind::Mean:
      return isFloat ? reassociable(b.CreateFAdd(x, y)) : b.CreateAdd(x, y);
    case ir::OpKind::Prod:
      return isFloat ? reassociable(b.CreateFMul(x, y)) : b.CreateMul(x, y);
    case ir::OpKind::Max:
      if (isFloat) return b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, y);
      return input == ir::DType::Bool ? b.CreateOr(x, y)
                                      : b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, y);
    case ir::OpKind::Min:
      if (isFloat) return b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, x, y);
      return input == ir::DType::Bool ? b.CreateAnd(x, y)
                                      : b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, y);
    case ir::OpKind::Any:
      return b.CreateOr(x, y);
    default: // all
      return b.CreateAnd(x, y);
    }
  }

  /// The stored result (registerType(output)) of an accumulator over `count` (i64) elements: mean divides in
  /// double, then everything converts to the output dtype as a cast does (scalar::Cast).
  llvm::Value *finish(llvm::Value *accumulated, llvm::Value *count) {
    if (kind == ir::OpKind::Mean) accumulated = b.CreateFDiv(accumulated, b.CreateSIToFP(count, type));
    llvm::Type *result = registerType(b.getContext(), output);
    if (accumulated->getType() == result) return accumulated;
    return b.CreateFPCast(accumulated, result); // sums, products and means of f32
  }

  ir::DType outputDtype() const { return output; }

private:
  llvm::Value *reassociable(llvm::Value *value) {
    if (auto *instruction = llvm::dyn_cast<llvm::Instruction>(value)) instruction->setHasAllowReassoc(true);
    return value;
  }

  llvm::IRBuilder<> &b;
  ir::OpKind kind;
  ir::DType input, output;
};

} // namespace tg::codegen
