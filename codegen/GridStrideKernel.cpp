// Grid-stride kernels over a parameter buffer (KernelBuilder.h): the PTX entry and the simulated-device
// function around one body of per-element work, for the creation, index and window kernels.
#include "codegen/KernelBuilder.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

namespace tg::codegen {

namespace {

llvm::Type *parameterType(llvm::LLVMContext &context, ParameterKind kind, unsigned addressSpace) {
  if (kind == ParameterKind::Integer) return llvm::Type::getInt64Ty(context);
  if (kind == ParameterKind::Double) return llvm::Type::getDoubleTy(context);
  return llvm::PointerType::get(context, addressSpace);
}

/// for (i = first; i < count; i += step) element(i), at the builder's insertion point.
void emitGridStrideLoop(llvm::IRBuilder<> &b, const GridStrideBody &element,
                        const std::vector<llvm::Value *> &in, llvm::Value *count, llvm::Value *first,
                        llvm::Value *step) {
  llvm::LLVMContext &context = b.getContext();
  llvm::Function *function = b.GetInsertBlock()->getParent();
  llvm::BasicBlock *before = b.GetInsertBlock();
  llvm::BasicBlock *loop = llvm::BasicBlock::Create(context, "i.loop", function);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(context, "i.done", function);
  b.CreateCondBr(b.CreateICmpSLT(first, count), loop, done);
  b.SetInsertPoint(loop);
  llvm::PHINode *index = b.CreatePHI(b.getInt64Ty(), 2, "i");
  index->addIncoming(first, before);
  element(b, in, index);
  llvm::Value *next = b.CreateAdd(index, step, "i.next");
  index->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(next, count), loop, done);
  b.SetInsertPoint(done);
}

} // namespace

llvm::Function *buildGridStridePtxKernel(llvm::Module &module, const std::string &name,
                                         const std::vector<ParameterKind> &parameters, size_t countParameter,
                                         const GridStrideBody &element) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  std::vector<llvm::Type *> types;
  for (ParameterKind kind : parameters)
    types.push_back(parameterType(context, kind, 1)); // pointers to global memory
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), types, false);
  llvm::Function *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  function->setCallingConv(llvm::CallingConv::PTX_Kernel);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
  std::vector<llvm::Value *> in;
  for (unsigned p = 0; p < parameters.size(); ++p)
    in.push_back(function->getArg(p));
  auto special = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), i64); };
  llvm::Value *blockSize = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value *first =
      b.CreateAdd(b.CreateMul(special(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), blockSize),
                  special(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x));
  llvm::Value *step = b.CreateMul(special(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), blockSize);
  emitGridStrideLoop(b, element, in, in.at(countParameter), first, step);
  b.CreateRetVoid();
  return function;
}

llvm::Function *buildGridStrideSimKernel(llvm::Module &module, const std::string &name,
                                         const std::vector<ParameterKind> &parameters, size_t countParameter,
                                         const GridStrideBody &element) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(context), *pointer = llvm::PointerType::getUnqual(context);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {pointer, i64, i64, i64}, false);
  llvm::Function *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
  std::vector<llvm::Value *> in; // the parameter buffer, field by field
  for (unsigned p = 0; p < parameters.size(); ++p)
    in.push_back(b.CreateLoad(parameterType(context, parameters[p], 0),
                              b.CreateConstGEP1_64(b.getInt8Ty(), function->getArg(0), p * 8)));
  llvm::Value *block = function->getArg(1), *blockSize = function->getArg(2), *gridSize = function->getArg(3);
  // for (t = 0; t < blockSize; ++t) the loop of thread t of `block`
  llvm::BasicBlock *entry = b.GetInsertBlock();
  llvm::BasicBlock *threads = llvm::BasicBlock::Create(context, "t.loop", function);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(context, "exit", function);
  b.CreateCondBr(b.CreateICmpSGT(blockSize, b.getInt64(0)), threads, exit);
  b.SetInsertPoint(threads);
  llvm::PHINode *thread = b.CreatePHI(i64, 2, "t");
  thread->addIncoming(b.getInt64(0), entry);
  llvm::Value *first = b.CreateAdd(b.CreateMul(block, blockSize), thread);
  emitGridStrideLoop(b, element, in, in.at(countParameter), first, b.CreateMul(gridSize, blockSize));
  llvm::Value *next = b.CreateAdd(thread, b.getInt64(1));
  thread->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(next, blockSize), threads, exit);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
  return function;
}

} // namespace tg::codegen
