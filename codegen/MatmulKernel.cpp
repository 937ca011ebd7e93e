// The matmul kernel (Kernel.h): one body of index math and multiply-adds, placed in a PTX entry (thread and
// block indices from the special registers) or in a simulated-device function (a loop over the threads of
// one block), so that what the tests run on the CPU is what the GPU runs.
#include "codegen/Kernel.h"
#include "codegen/KernelBuilder.h"
#include "codegen/ScalarEmitter.h"
#include "ir/Assert.h"

#include <cstddef>
#include <iterator>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>
#include <vector>

namespace tg::codegen {

namespace {

using llvm::Value;

constexpr int64_t kPerThread = kMatmulTile / kMatmulThreads; // outputs per thread along each axis

struct MatmulOperands {
  Value *n, *m, *k, *a, *aRowStride, *aColStride, *b, *bRowStride, *bColStride, *c;
};

/// Each MatmulArgs field: where it is (its offset / 8 is its parameter's index, the struct being the kernel's
/// parameter buffer), whether it is a pointer (else an i64), and the operand it becomes.
struct MatmulField {
  size_t offset;
  bool pointer;
  Value *MatmulOperands::*operand;
};
const MatmulField kMatmulFields[] = {
    {offsetof(MatmulArgs, n), false, &MatmulOperands::n},
    {offsetof(MatmulArgs, m), false, &MatmulOperands::m},
    {offsetof(MatmulArgs, k), false, &MatmulOperands::k},
    {offsetof(MatmulArgs, a), true, &MatmulOperands::a},
    {offsetof(MatmulArgs, aRowStride), false, &MatmulOperands::aRowStride},
    {offsetof(MatmulArgs, aColStride), false, &MatmulOperands::aColStride},
    {offsetof(MatmulArgs, b), true, &MatmulOperands::b},
    {offsetof(MatmulArgs, bRowStride), false, &MatmulOperands::bRowStride},
    {offsetof(MatmulArgs, bColStride), false, &MatmulOperands::bColStride},
    {offsetof(MatmulArgs, c), true, &MatmulOperands::c},
};
static_assert(std::size(kMatmulFields) * 8 == sizeof(MatmulArgs), "every MatmulArgs field has its entry");

/// acc + x * y as the CPU computes it: in floating point, wrapping for integers, or-of-ands for bools.
Value *multiplyAdd(llvm::IRBuilder<> &b, ir::DType dtype, Value *acc, Value *x, Value *y) {
  switch (dtype) {
  case ir::DType::F32:
  case ir::DType::F64:
    return b.CreateFAdd(acc, b.CreateFMul(x, y));
  case ir::DType::Bool:
    return b.CreateOr(acc, b.CreateAnd(x, y));
  default:
    return b.CreateAdd(acc, b.CreateMul(x, y));
  }
}

/// Thread (tx, ty) of block (bx, by): its 4 x 4 outputs, each a sum over k of products, in order.
void emitThread(llvm::IRBuilder<> &b, ir::DType dtype, const MatmulOperands &in, Value *blockX, Value *blockY,
                Value *threadX, Value *threadY) {
  llvm::Function *function = b.GetInsertBlock()->getParent();
  llvm::LLVMContext &context = b.getContext();
  llvm::Type *i64 = b.getInt64Ty(), *element = memoryType(context, dtype);
  Value *rowBase = b.CreateAdd(b.CreateMul(blockY, b.getInt64(kMatmulTile)), threadY, "row.base");
  Value *colBase = b.CreateAdd(b.CreateMul(blockX, b.getInt64(kMatmulTile)), threadX, "col.base");
  Value *rows[kPerThread], *cols[kPerThread], *rowInside[kPerThread], *colInside[kPerThread];
  for (int64_t i = 0; i < kPerThread; ++i) {
    rows[i] = b.CreateAdd(rowBase, b.getInt64(i * kMatmulThreads));
    cols[i] = b.CreateAdd(colBase, b.getInt64(i * kMatmulThreads));
    rowInside[i] = b.CreateICmpSLT(rows[i], in.n);
    colInside[i] = b.CreateICmpSLT(cols[i], in.m);
    // Outside rows and columns read row or column 0 (always there when the loop runs) and are not stored.
    rows[i] = b.CreateSelect(rowInside[i], rows[i], b.getInt64(0));
    cols[i] = b.CreateSelect(colInside[i], cols[i], b.getInt64(0));
  }
  // for (p = 0; p < k; ++p) acc[i][j] += a[row_i, p] * b[p, col_j]
  llvm::BasicBlock *preheader = b.GetInsertBlock();
  llvm::BasicBlock *loop = llvm::BasicBlock::Create(context, "k.loop", function);
  llvm::BasicBlock *store = llvm::BasicBlock::Create(context, "store", function);
  Value *zero = llvm::Constant::getNullValue(element);
  b.CreateCondBr(b.CreateICmpSGT(in.k, b.getInt64(0)), loop, store);
  b.SetInsertPoint(loop);
  llvm::PHINode *p = b.CreatePHI(i64, 2, "p");
  p->addIncoming(b.getInt64(0), preheader);
  llvm::PHINode *acc[kPerThread][kPerThread];
  for (int64_t i = 0; i < kPerThread; ++i)
    for (int64_t j = 0; j < kPerThread; ++j) {
      acc[i][j] = b.CreatePHI(element, 2, "acc");
      acc[i][j]->addIncoming(zero, preheader);
    }
  Value *aValues[kPerThread], *bValues[kPerThread];
  for (int64_t i = 0; i < kPerThread; ++i) {
    Value *aIndex = b.CreateAdd(b.CreateMul(rows[i], in.aRowStride), b.CreateMul(p, in.aColStride));
    aValues[i] = b.CreateLoad(element, b.CreateGEP(element, in.a, aIndex), "a");
    Value *bIndex = b.CreateAdd(b.CreateMul(p, in.bRowStride), b.CreateMul(cols[i], in.bColStride));
    bValues[i] = b.CreateLoad(element, b.CreateGEP(element, in.b, bIndex), "b");
  }
  Value *next[kPerThread][kPerThread];
  for (int64_t i = 0; i < kPerThread; ++i)
    for (int64_t j = 0; j < kPerThread; ++j)
      next[i][j] = multiplyAdd(b, dtype, acc[i][j], aValues[i], bValues[j]);
  Value *pNext = b.CreateAdd(p, b.getInt64(1), "p.next");
  llvm::BasicBlock *latch = b.GetInsertBlock();
  p->addIncoming(pNext, latch);
  for (int64_t i = 0; i < kPerThread; ++i)
    for (int64_t j = 0; j < kPerThread; ++j)
      acc[i][j]->addIncoming(next[i][j], latch);
  b.CreateCondBr(b.CreateICmpSLT(pNext, in.k), loop, store);

  b.SetInsertPoint(store);
  Value *sums[kPerThread][kPerThread];
  for (int64_t i = 0; i < kPerThread; ++i)
    for (int64_t j = 0; j < kPerThread; ++j) {
      llvm::PHINode *sum = b.CreatePHI(element, 2, "sum");
      sum->addIncoming(zero, preheader);
      sum->addIncoming(next[i][j], latch);
      sums[i][j] = sum;
    }
  for (int64_t i = 0; i < kPerThread; ++i)
    for (int64_t j = 0; j < kPerThread; ++j) {
      llvm::BasicBlock *write = llvm::BasicBlock::Create(context, "write", function);
      llvm::BasicBlock *after = llvm::BasicBlock::Create(context, "after", function);
      b.CreateCondBr(b.CreateAnd(rowInside[i], colInside[j]), write, after);
      b.SetInsertPoint(write);
      Value *index = b.CreateAdd(b.CreateMul(rows[i], in.m), cols[j]);
      b.CreateStore(sums[i][j], b.CreateGEP(element, in.c, index));
      b.CreateBr(after);
      b.SetInsertPoint(after);
    }
}

} // namespace

llvm::Function *buildMatmulPtxKernel(llvm::Module &module, ir::DType dtype, const std::string &name) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::Type *global = llvm::PointerType::get(context, 1);
  std::vector<llvm::Type *> parameters(std::size(kMatmulFields));
  for (const MatmulField &field : kMatmulFields)
    parameters[field.offset / 8] = field.pointer ? global : i64;
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), parameters, false);
  llvm::Function *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  function->setCallingConv(llvm::CallingConv::PTX_Kernel);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
  MatmulOperands operands;
  for (const MatmulField &field : kMatmulFields)
    operands.*field.operand = function->getArg(static_cast<unsigned>(field.offset / 8));
  auto special = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), i64); };
  emitThread(b, dtype, operands, special(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x),
             special(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y),
             special(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x),
             special(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y));
  b.CreateRetVoid();
  return function;
}

llvm::Function *buildMatmulSimKernel(llvm::Module &module, ir::DType dtype, const std::string &name) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(context), *pointer = llvm::PointerType::getUnqual(context);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {pointer, i64, i64}, false);
  llvm::Function *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
  MatmulOperands operands; // MatmulArgs, field by field
  for (const MatmulField &field : kMatmulFields)
    operands.*field.operand =
        b.CreateLoad(field.pointer ? pointer : i64,
                     b.CreateConstGEP1_64(b.getInt8Ty(), function->getArg(0), field.offset));
  // for (ty = 0; ty < 16; ++ty) for (tx = 0; tx < 16; ++tx) thread (tx, ty)
  llvm::BasicBlock *entry = b.GetInsertBlock();
  llvm::BasicBlock *outer = llvm::BasicBlock::Create(context, "ty.loop", function);
  llvm::BasicBlock *inner = llvm::BasicBlock::Create(context, "tx.loop", function);
  b.CreateBr(outer);
  b.SetInsertPoint(outer);
  llvm::PHINode *threadY = b.CreatePHI(i64, 2, "ty");
  threadY->addIncoming(b.getInt64(0), entry);
  b.CreateBr(inner);
  b.SetInsertPoint(inner);
  llvm::PHINode *threadX = b.CreatePHI(i64, 2, "tx");
  threadX->addIncoming(b.getInt64(0), outer);
  emitThread(b, dtype, operands, function->getArg(1), function->getArg(2), threadX, threadY);
  Value *nextX = b.CreateAdd(threadX, b.getInt64(1));
  threadX->addIncoming(nextX, b.GetInsertBlock());
  llvm::BasicBlock *innerEnd = llvm::BasicBlock::Create(context, "tx.end", function);
  b.CreateCondBr(b.CreateICmpSLT(nextX, b.getInt64(kMatmulThreads)), inner, innerEnd);
  b.SetInsertPoint(innerEnd);
  Value *nextY = b.CreateAdd(threadY, b.getInt64(1));
  threadY->addIncoming(nextY, innerEnd);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(context, "exit", function);
  b.CreateCondBr(b.CreateICmpSLT(nextY, b.getInt64(kMatmulThreads)), outer, exit);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
  return function;
}

std::string emitMatmulPtx(ir::DType dtype, const std::string &gpuArch) {
  std::string name = matmulKernelName(dtype);
  return emitPtxModule({name}, gpuArch,
                       [&](llvm::Module &module) { buildMatmulPtxKernel(module, dtype, name); });
}

SimMatmulKernel compileSimMatmulKernel(ir::DType dtype) {
  std::string name = matmulKernelName(dtype) + "_sim";
  return reinterpret_cast<SimMatmulKernel>(
      compileHostFunction(name, [&](llvm::Module &module) { buildMatmulSimKernel(module, dtype, name); }));
}

} // namespace tg::codegen
