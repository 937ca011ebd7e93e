// The index kernels (Kernel.h): the offsets of index positions, then gather, scatter_add and scatter_set of
// whole blocks at those offsets, one body each placed in a PTX entry or a simulated-device function
// (GridStrideKernel.cpp).
#include "codegen/Kernel.h"
#include "codegen/KernelBuilder.h"
#include "codegen/ScalarEmitter.h"
#include "ir/Assert.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace tg::codegen {

namespace {

using ir::DType;
using llvm::Value;

/// IndexArgs' fields, in their order (each 8 bytes: the struct is the kernel's parameter buffer).
enum Field {
  kCount,
  kOutput,
  kInput,
  kOffsets,
  kPositions,
  kInner,
  kRowElements,
  kSize,
  kStride,
  kAccumulate,
  kError
};
const std::vector<ParameterKind> kIndexParameters{
    ParameterKind::Integer, ParameterKind::Pointer, ParameterKind::Pointer, ParameterKind::Pointer,
    ParameterKind::Integer, ParameterKind::Integer, ParameterKind::Integer, ParameterKind::Integer,
    ParameterKind::Integer, ParameterKind::Integer, ParameterKind::Pointer};
static_assert(11 * 8 == sizeof(IndexArgs), "every IndexArgs field has its parameter");

/// offsets: output[j] = (accumulate ? output[j] : 0) + norm(input[j]) * stride; an index out of range is
/// reported in error[0..1].
void emitOffset(llvm::IRBuilder<> &b, const std::vector<Value *> &in, Value *j) {
  llvm::LLVMContext &context = b.getContext();
  llvm::Type *i64 = b.getInt64Ty();
  Value *index = b.CreateLoad(i64, b.CreateGEP(i64, in[kInput], j));
  Value *size = in[kSize];
  Value *outside = b.CreateOr(b.CreateICmpSLT(index, b.CreateNeg(size)), b.CreateICmpSGE(index, size));
  llvm::Function *function = b.GetInsertBlock()->getParent();
  llvm::BasicBlock *report = llvm::BasicBlock::Create(context, "outside", function);
  llvm::BasicBlock *store = llvm::BasicBlock::Create(context, "store", function);
  b.CreateCondBr(outside, report, store);
  b.SetInsertPoint(report);
  b.CreateStore(b.getInt64(1), in[kError]);
  b.CreateStore(index, b.CreateConstGEP1_64(i64, in[kError], 1));
  b.CreateBr(store);
  b.SetInsertPoint(store);
  Value *normalized = b.CreateSelect(b.CreateICmpSLT(index, b.getInt64(0)), b.CreateAdd(index, size), index);
  Value *target = b.CreateGEP(i64, in[kOutput], j);
  Value *before = b.CreateSelect(b.CreateICmpNE(in[kAccumulate], b.getInt64(0)), b.CreateLoad(i64, target),
                                 b.getInt64(0));
  b.CreateStore(b.CreateAdd(before, b.CreateMul(normalized, in[kStride])), target);
}

/// Element i's place in x: row * rowElements + offsets[j] + e.
Value *emitPlace(llvm::IRBuilder<> &b, const std::vector<Value *> &in, Value *i) {
  llvm::Type *i64 = b.getInt64Ty();
  Value *e = b.CreateSRem(i, in[kInner]), *n = b.CreateSDiv(i, in[kInner]);
  Value *j = b.CreateSRem(n, in[kPositions]), *row = b.CreateSDiv(n, in[kPositions]);
  Value *offset = b.CreateLoad(i64, b.CreateGEP(i64, in[kOffsets], j));
  return b.CreateAdd(b.CreateAdd(b.CreateMul(row, in[kRowElements]), offset), e);
}

GridStrideBody indexBody(IndexKernel kind, DType dtype) {
  return [=](llvm::IRBuilder<> &b, const std::vector<Value *> &in, Value *i) {
    if (kind == IndexKernel::Offsets) return emitOffset(b, in, i);
    llvm::Type *type = memoryType(b.getContext(), dtype);
    Value *place = emitPlace(b, in, i);
    if (kind == IndexKernel::Gather) {
      b.CreateStore(b.CreateLoad(type, b.CreateGEP(type, in[kInput], place)),
                    b.CreateGEP(type, in[kOutput], i));
      return;
    }
    Value *value = b.CreateLoad(type, b.CreateGEP(type, in[kInput], i));
    Value *target = b.CreateGEP(type, in[kOutput], place);
    if (kind == IndexKernel::ScatterSet) {
      b.CreateStore(value, target);
    } else if (dtype == DType::Bool) { // or: a true update stores 1, which no other store undoes
      Value *old = b.CreateLoad(type, target);
      b.CreateStore(b.CreateSelect(b.CreateICmpNE(value, llvm::ConstantInt::get(type, 0)),
                                   llvm::ConstantInt::get(type, 1), old),
                    target);
    } else {
      auto operation = ir::isFloat(dtype) ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add;
      b.CreateAtomicRMW(operation, target, value, llvm::MaybeAlign(ir::dtypeSize(dtype)),
                        llvm::AtomicOrdering::Monotonic);
    }
  };
}

} // namespace

llvm::Function *buildIndexPtxKernel(llvm::Module &module, IndexKernel kind, DType dtype,
                                    const std::string &name) {
  return buildGridStridePtxKernel(module, name, kIndexParameters, kCount, indexBody(kind, dtype));
}

std::string emitIndexPtx(IndexKernel kind, DType dtype, const std::string &gpuArch) {
  std::string name = indexKernelName(kind, dtype);
  return emitPtxModule({name}, gpuArch,
                       [&](llvm::Module &module) { buildIndexPtxKernel(module, kind, dtype, name); });
}

SimIndexKernel compileSimIndexKernel(IndexKernel kind, DType dtype) {
  std::string name = indexKernelName(kind, dtype) + "_sim";
  return reinterpret_cast<SimIndexKernel>(compileHostFunction(name, [&](llvm::Module &module) {
    buildGridStrideSimKernel(module, name, kIndexParameters, kCount, indexBody(kind, dtype));
  }));
}

} // namespace tg::codegen
