// The creation kernels (Kernel.h): eye, arange, rand and randn computed from each element's index, as the
// CPU's creation kernels compute them (runtime/CreationKernels.cpp, runtime/Random.cpp): one body placed in a
// PTX entry (a grid-stride loop) or in a simulated-device function (the same loop for the threads of one
// block in turn).
#include "codegen/Kernel.h"
#include "codegen/KernelBuilder.h"
#include "codegen/ScalarEmitter.h"
#include "ir/Assert.h"

#include <cstddef>
#include <iterator>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
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

/// Each CreationArgs field: where it is (its offset / 8 is its parameter's index, the struct being the
/// kernel's parameter buffer), its kind, and the operand it becomes.
struct CreationField {
  size_t offset;
  enum Kind { Integer, Pointer, Double } kind;
  Value *CreationOperands::*operand;
};
const CreationField kCreationFields[] = {
    {offsetof(CreationArgs, count), CreationField::Integer, &CreationOperands::count},
    {offsetof(CreationArgs, output), CreationField::Pointer, &CreationOperands::output},
    {offsetof(CreationArgs, p0), CreationField::Integer, &CreationOperands::p0},
    {offsetof(CreationArgs, p1), CreationField::Integer, &CreationOperands::p1},
    {offsetof(CreationArgs, x0), CreationField::Double, &CreationOperands::x0},
    {offsetof(CreationArgs, x1), CreationField::Double, &CreationOperands::x1},
};
static_assert(std::size(kCreationFields) * 8 == sizeof(CreationArgs),
              "every CreationArgs field has its entry");

llvm::Type *fieldType(llvm::LLVMContext &context, CreationField::Kind kind, unsigned addressSpace) {
  if (kind == CreationField::Integer) return llvm::Type::getInt64Ty(context);
  if (kind == CreationField::Double) return llvm::Type::getDoubleTy(context);
  return llvm::PointerType::get(context, addressSpace);
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

/// for (i = first; i < count; i += step) output[i] = element(i), at the builder's insertion point.
void emitGridStrideLoop(llvm::IRBuilder<> &b, OpKind kind, DType dtype, const CreationOperands &in,
                        Value *first, Value *step, bool nvptx) {
  llvm::LLVMContext &context = b.getContext();
  llvm::Function *function = b.GetInsertBlock()->getParent();
  llvm::BasicBlock *before = b.GetInsertBlock();
  llvm::BasicBlock *loop = llvm::BasicBlock::Create(context, "i.loop", function);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(context, "i.done", function);
  b.CreateCondBr(b.CreateICmpSLT(first, in.count), loop, done);
  b.SetInsertPoint(loop);
  llvm::PHINode *index = b.CreatePHI(b.getInt64Ty(), 2, "i");
  index->addIncoming(first, before);
  llvm::Type *type = memoryType(context, dtype);
  b.CreateStore(emitElement(b, kind, dtype, in, index, nvptx), b.CreateGEP(type, in.output, index));
  Value *next = b.CreateAdd(index, step, "i.next");
  index->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(next, in.count), loop, done);
  b.SetInsertPoint(done);
}

} // namespace

std::string creationKernelName(ir::OpKind kind, ir::DType dtype) {
  return std::string("tgc_") + ir::opName(kind) + "_" + ir::dtypeName(dtype);
}

bool hasCreationKernel(ir::OpKind kind, ir::DType dtype) {
  switch (kind) {
  case OpKind::Eye:
  case OpKind::Arange:
  case OpKind::Rand:
  case OpKind::Randn:
    return ir::takes(kind, dtype);
  default:
    return false;
  }
}

llvm::Function *buildCreationPtxKernel(llvm::Module &module, ir::OpKind kind, ir::DType dtype,
                                       const std::string &name) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  std::vector<llvm::Type *> parameters(std::size(kCreationFields));
  for (const CreationField &field : kCreationFields)
    parameters[field.offset / 8] = fieldType(context, field.kind, 1); // pointers to global memory
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), parameters, false);
  llvm::Function *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  function->setCallingConv(llvm::CallingConv::PTX_Kernel);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
  CreationOperands operands;
  for (const CreationField &field : kCreationFields)
    operands.*field.operand = function->getArg(static_cast<unsigned>(field.offset / 8));
  auto special = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), i64); };
  Value *blockSize = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  Value *first = b.CreateAdd(b.CreateMul(special(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), blockSize),
                             special(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x));
  Value *step = b.CreateMul(special(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), blockSize);
  emitGridStrideLoop(b, kind, dtype, operands, first, step, true);
  b.CreateRetVoid();
  return function;
}

std::string emitCreationPtx(ir::OpKind kind, ir::DType dtype, const std::string &gpuArch) {
  std::string name = creationKernelName(kind, dtype);
  return emitPtxModule({name}, gpuArch,
                       [&](llvm::Module &module) { buildCreationPtxKernel(module, kind, dtype, name); });
}

SimCreationKernel compileSimCreationKernel(ir::OpKind kind, ir::DType dtype) {
  std::string name = creationKernelName(kind, dtype) + "_sim";
  return reinterpret_cast<SimCreationKernel>(compileHostFunction(name, [&](llvm::Module &module) {
    llvm::LLVMContext &context = module.getContext();
    llvm::Type *i64 = llvm::Type::getInt64Ty(context), *pointer = llvm::PointerType::getUnqual(context);
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {pointer, i64, i64, i64}, false);
    llvm::Function *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
    function->addFnAttr(llvm::Attribute::NoUnwind);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
    CreationOperands operands; // CreationArgs, field by field
    for (const CreationField &field : kCreationFields)
      operands.*field.operand =
          b.CreateLoad(fieldType(context, field.kind, 0),
                       b.CreateConstGEP1_64(b.getInt8Ty(), function->getArg(0), field.offset));
    Value *block = function->getArg(1), *blockSize = function->getArg(2), *gridSize = function->getArg(3);
    // for (t = 0; t < blockSize; ++t) the loop of thread t of `block`
    llvm::BasicBlock *entry = b.GetInsertBlock();
    llvm::BasicBlock *threads = llvm::BasicBlock::Create(context, "t.loop", function);
    llvm::BasicBlock *exit = llvm::BasicBlock::Create(context, "exit", function);
    b.CreateCondBr(b.CreateICmpSGT(blockSize, b.getInt64(0)), threads, exit);
    b.SetInsertPoint(threads);
    llvm::PHINode *thread = b.CreatePHI(i64, 2, "t");
    thread->addIncoming(b.getInt64(0), entry);
    Value *first = b.CreateAdd(b.CreateMul(block, blockSize), thread);
    emitGridStrideLoop(b, kind, dtype, operands, first, b.CreateMul(gridSize, blockSize), false);
    Value *next = b.CreateAdd(thread, b.getInt64(1));
    thread->addIncoming(next, b.GetInsertBlock());
    b.CreateCondBr(b.CreateICmpSLT(next, blockSize), threads, exit);
    b.SetInsertPoint(exit);
    b.CreateRetVoid();
  }));
}

} // namespace tg::codegen
