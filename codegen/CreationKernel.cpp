// The creation kernels (Kernel.h): eye, arange, rand and randn computed from each element's index, as the
// CPU's creation kernels compute them (runtime/CreationKernels.cpp, runtime/Random.cpp): one body placed in a
// PTX entry (a grid-stride loop) or in a simulated-device function (the same loop for the threads of one
// block in turn).
#include "codegen/Kernel.h"
#include "codegen/KernelBuilder.h"
#include "codegen/ScalarEmitter.h"
#include "ir/Assert.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <numbers>
#include <vector>

namespace tg::codegen {

namespace {

using ir::DType;
using ir::OpKind;
using llvm::Value;

/// The kernel's parameters, in registers.
struct CreationOperands {
  Value *count, *output, *p0, *p1, *x0, *x1;
};

/// CreationArgs' fields, in their order (each 8 bytes: the struct is the kernel's parameter buffer).
const std::vector<ParameterKind> kCreationParameters{ParameterKind::Integer, ParameterKind::Pointer,
                                                     ParameterKind::Integer, ParameterKind::Integer,
                                                     ParameterKind::Double,  ParameterKind::Double};
static_assert(6 * 8 == sizeof(CreationArgs), "every CreationArgs field has its parameter");

CreationOperands creationOperands(const std::vector<Value *> &in) {
  return {in[0], in[1], in[2], in[3], in[4], in[5]};
}

/// log or cos of a float or double: libm's exactly on the host (no vector variant, so the bits are the CPU
/// kernel's), libdevice's on NVPTX.
Value *math(llvm::IRBuilder<> &b, bool nvptx, const char *function, Value *argument) {
  return emitMathCall(b, nvptx ? MathTarget::Nvptx : MathTarget::Host, function, {argument}, /*exact=*/true);
}

/// Philox4x32-10 of counter (index, 0) and key `seed` (runtime/Random.cpp's philox4x32_10).
std::array<Value *, 4> philox(llvm::IRBuilder<> &b, Value *seed, Value *index) {
  llvm::Type *i32 = b.getInt32Ty(), *i64 = b.getInt64Ty();
  auto low = [&](Value *x) { return b.CreateTrunc(x, i32); };
  auto high = [&](Value *x) { return b.CreateTrunc(b.CreateLShr(x, 32), i32); };
  std::array<Value *, 4> counter{low(index), high(index), b.getInt32(0), b.getInt32(0)};
  Value *key0 = low(seed), *key1 = high(seed);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 = b.CreateAdd(key0, b.getInt32(0x9E3779B9));
      key1 = b.CreateAdd(key1, b.getInt32(0xBB67AE85));
    }
    Value *product0 = b.CreateMul(b.getInt64(0xD2511F53), b.CreateZExt(counter[0], i64));
    Value *product1 = b.CreateMul(b.getInt64(0xCD9E8D57), b.CreateZExt(counter[2], i64));
    counter = {b.CreateXor(b.CreateXor(high(product1), counter[1]), key0), low(product1),
               b.CreateXor(b.CreateXor(high(product0), counter[3]), key1), low(product0)};
  }
  return counter;
}

/// The top 53 bits of the 64-bit word (high, low).
Value *top53(llvm::IRBuilder<> &b, Value *high, Value *low) {
  llvm::Type *i64 = b.getInt64Ty();
  Value *word = b.CreateOr(b.CreateShl(b.CreateZExt(high, i64), 32), b.CreateZExt(low, i64));
  return b.CreateLShr(word, 11);
}

/// Element `index` of the output (its memory type).
Value *emitElement(llvm::IRBuilder<> &b, OpKind kind, DType dtype, const CreationOperands &in, Value *index,
                   bool nvptx) {
  llvm::LLVMContext &context = b.getContext();
  llvm::Type *type = memoryType(context, dtype);
  bool isFloat = dtype == DType::F32 || dtype == DType::F64;
  switch (kind) {
  case OpKind::Eye: { // row == column, p0 the columns
    Value *diagonal = b.CreateICmpEQ(b.CreateSDiv(index, in.p0), b.CreateSRem(index, in.p0));
    return b.CreateSelect(diagonal,
                          isFloat ? llvm::ConstantFP::get(type, 1.0) : llvm::ConstantInt::get(type, 1),
                          llvm::Constant::getNullValue(type));
  }
  case OpKind::Arange: {
    if (dtype == DType::Bool) { // element 0: p0 != 0; the others: p0 + p1 != 0
      Value *value = b.CreateSelect(b.CreateICmpEQ(index, b.getInt64(0)), in.p0, b.CreateAdd(in.p0, in.p1));
      return b.CreateZExt(b.CreateICmpNE(value, b.getInt64(0)), type);
    }
    if (!isFloat) // p0 + index * p1 in 64 bits, wrapping, then narrowed
      return b.CreateTrunc(b.CreateAdd(in.p0, b.CreateMul(index, in.p1)), type);
    Value *first = b.CreateFPTrunc(in.x0, type), *delta = b.CreateFPTrunc(in.x1, type);
    return b.CreateFAdd(first, b.CreateFMul(b.CreateSIToFP(index, type), delta));
  }
  case OpKind::Rand:
  case OpKind::Randn: {
    std::array<Value *, 4> x = philox(b, in.p0, index);
    bool single = dtype == DType::F32;
    Value *unit = single ? llvm::ConstantFP::get(type, 0x1p-24) : llvm::ConstantFP::get(type, 0x1p-53);
    auto fraction = [&](Value *bits) { return b.CreateFMul(b.CreateUIToFP(bits, type), unit); };
    if (kind == OpKind::Rand)
      return single ? fraction(b.CreateLShr(x[0], 8)) : fraction(top53(b, x[0], x[1]));
    // Box-Muller: u1 in (0, 1], u2 in [0, 1).
    Value *u1 = single ? fraction(b.CreateAdd(b.CreateLShr(x[0], 8), b.getInt32(1)))
                       : fraction(b.CreateAdd(top53(b, x[0], x[1]), b.getInt64(1)));
    Value *u2 = single ? fraction(b.CreateLShr(x[1], 8)) : fraction(top53(b, x[2], x[3]));
    Value *radius =
        b.CreateIntrinsic(llvm::Intrinsic::sqrt, {type},
                          {b.CreateFMul(llvm::ConstantFP::get(type, -2.0), math(b, nvptx, "log", u1))});
    Value *twoPi = single ? llvm::ConstantFP::get(type, static_cast<double>(2.0f * std::numbers::pi_v<float>))
                          : llvm::ConstantFP::get(type, 2.0 * std::numbers::pi);
    return b.CreateFMul(radius, math(b, nvptx, "cos", b.CreateFMul(twoPi, u2)));
  }
  default:
    break;
  }
  TG_ASSERT(false) << "no creation kernel for " << ir::opName(kind);
  return nullptr;
}

/// output[i] = element(i).
GridStrideBody creationBody(OpKind kind, DType dtype, bool nvptx) {
  return [=](llvm::IRBuilder<> &b, const std::vector<Value *> &parameters, Value *index) {
    CreationOperands in = creationOperands(parameters);
    llvm::Type *type = memoryType(b.getContext(), dtype);
    b.CreateStore(emitElement(b, kind, dtype, in, index, nvptx), b.CreateGEP(type, in.output, index));
  };
}

} // namespace

llvm::Function *buildCreationPtxKernel(llvm::Module &module, ir::OpKind kind, ir::DType dtype,
                                       const std::string &name) {
  return buildGridStridePtxKernel(module, name, kCreationParameters, 0, creationBody(kind, dtype, true));
}

std::string emitCreationPtx(ir::OpKind kind, ir::DType dtype, const std::string &gpuArch) {
  std::string name = creationKernelName(kind, dtype);
  return emitPtxModule({name}, gpuArch,
                       [&](llvm::Module &module) { buildCreationPtxKernel(module, kind, dtype, name); });
}

SimCreationKernel compileSimCreationKernel(ir::OpKind kind, ir::DType dtype) {
  std::string name = creationKernelName(kind, dtype) + "_sim";
  return reinterpret_cast<SimCreationKernel>(compileHostFunction(name, [&](llvm::Module &module) {
    buildGridStrideSimKernel(module, name, kCreationParameters, 0, creationBody(kind, dtype, false));
  }));
}

} // namespace tg::codegen
