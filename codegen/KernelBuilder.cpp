// KernelBuilder: the elementwise kernels' loops around the scalar body, the host's row walk and the devices'
// grid-stride loop, and the build*Kernel functions (signatures in KernelBuilder.h), which declare every
// fused kernel and hand a reduction's body to ReductionBuilder.cpp.
#include "codegen/KernelBuilder.h"

#include "codegen/LoopEmitter.h"
#include "codegen/ScalarEmitter.h"
#include "ir/Assert.h"

#include <functional>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>
#include <vector>

namespace tg::codegen {

using llvm::BasicBlock;
using llvm::Value;

namespace {

/// Emits an elementwise kernel's body: one element per index of the output, in the loops of one target.
class ElementwiseEmitter : public LoopEmitter {
public:
  using LoopEmitter::LoopEmitter;

  /// Host: a loop over [begin, end) that notes the elements' error codes as it goes (the largest stays) and
  /// returns it at the end: no exit from the loop, which therefore vectorizes (a failing element computes a
  /// value all the same, from a safe place: ScalarEmitter.h).
  void hostLoop(const KernelOperands &operands, Value *begin, Value *end) {
    hostError = local(builder.getInt32Ty(), builder.getInt32(kKernelOk), "error");
    if (spec.layout == Layout::Contiguous)
      hostContiguousLoop(operands, begin, end);
    else
      hostPlaneLoop(operands, begin, end);
    builder.CreateRet(load(hostError));
  }

  /// Device: elements first, first + step, ... below count; a failing element stores its code in errorFlag.
  void gridStrideLoop(const KernelOperands &operands, Value *count, Value *first, Value *step,
                      Value *errorFlag) {
    BasicBlock *loop = block("grid.loop"), *exit = block("grid.exit");
    BasicBlock *preheader = builder.GetInsertBlock();
    builder.CreateCondBr(builder.CreateICmpSLT(first, count), loop, exit);
    builder.SetInsertPoint(loop);
    llvm::PHINode *index = builder.CreatePHI(builder.getInt64Ty(), 2, "i");
    index->addIncoming(first, preheader);
    std::vector<Value *> offsets = spec.layout == Layout::Contiguous
                                       ? std::vector<Value *>(spec.body->numArrays(), index)
                                       : divideIndex(operands, index);
    element(operands, offsets, index, [&](Value *code) { builder.CreateStore(code, errorFlag); });
    Value *next = builder.CreateAdd(index, step, "i.next");
    index->addIncoming(next, builder.GetInsertBlock());
    builder.CreateCondBr(builder.CreateICmpSLT(next, count), loop, exit);
    builder.SetInsertPoint(exit);
  }

  /// Simulated device: the elements of block `blockStart / blockSize`'s threads, which the PTX kernel's
  /// grid-stride loops cover, in memory order: the loop's rounds in turn, and in each round the threads in
  /// turn (elements base .. base + blockSize - 1, consecutive, so that the inner loop reads memory in order;
  /// a Contiguous one vectorizes). A Strided round divides its first element's index by the shape, as the
  /// PTX kernel does each element's, and steps the next ones along the last axis, dividing again where a row
  /// ends. A failing element stores its code in errorFlag.
  void simulatedBlock(const KernelOperands &operands, Value *count, Value *blockStart, Value *blockSize,
                      Value *step, Value *errorFlag) {
    llvm::Type *i64 = builder.getInt64Ty();
    bool strided = spec.layout == Layout::Strided;
    size_t numArrays = operands.inputs.size();
    // Strided: the last axis's length and each array's stride along it (1 and 0 for a rank-0 space).
    Value *rowLength = nullptr;
    std::vector<Value *> rowStrides;
    if (strided) {
      BasicBlock *before = builder.GetInsertBlock(), *lastAxis = block("last.axis"), *axes = block("axes");
      builder.CreateCondBr(builder.CreateICmpSGT(operands.rank, builder.getInt64(0)), lastAxis, axes);
      builder.SetInsertPoint(lastAxis);
      Value *last = builder.CreateSub(operands.rank, builder.getInt64(1));
      Value *length = loadInt64(operands.shape, last);
      std::vector<Value *> strides;
      for (size_t k = 0; k < numArrays; ++k)
        strides.push_back(inputStride(operands, k, last));
      builder.CreateBr(axes);
      builder.SetInsertPoint(axes);
      auto phi = [&](Value *absent, Value *present) {
        llvm::PHINode *node = builder.CreatePHI(i64, 2);
        node->addIncoming(absent, before);
        node->addIncoming(present, lastAxis);
        return node;
      };
      rowLength = phi(builder.getInt64(1), length);
      for (Value *stride : strides)
        rowStrides.push_back(phi(builder.getInt64(0), stride));
    }
    std::vector<llvm::AllocaInst *> offsets;
    llvm::AllocaInst *column = strided ? local(i64, builder.getInt64(0), "column") : nullptr;
    for (size_t k = 0; strided && k < numArrays; ++k)
      offsets.push_back(local(i64, builder.getInt64(0), "offset"));
    auto divideInto = [&](Value *linear) {
      std::vector<Value *> divided = divideIndex(operands, linear);
      for (size_t k = 0; k < numArrays; ++k)
        builder.CreateStore(divided[k], offsets[k]);
      builder.CreateStore(builder.CreateURem(linear, rowLength), column);
    };

    BasicBlock *rounds = block("rounds"), *threads = block("threads"), *roundDone = block("round.done"),
               *exit = block("exit");
    BasicBlock *preheader = builder.GetInsertBlock();
    builder.CreateCondBr(builder.CreateICmpSLT(blockStart, count), rounds, exit);
    builder.SetInsertPoint(rounds);
    llvm::PHINode *base = builder.CreatePHI(i64, 2, "base");
    base->addIncoming(blockStart, preheader);
    Value *end = builder.CreateBinaryIntrinsic(llvm::Intrinsic::smin, builder.CreateAdd(base, blockSize),
                                               count, nullptr, "round.end");
    if (strided) divideInto(base);
    BasicBlock *roundStart = builder.GetInsertBlock();
    builder.CreateBr(threads);
    builder.SetInsertPoint(threads);
    llvm::PHINode *index = builder.CreatePHI(i64, 2, "i");
    index->addIncoming(base, roundStart);
    std::vector<Value *> at;
    for (size_t k = 0; k < numArrays; ++k)
      at.push_back(strided ? load(offsets[k]) : index);
    element(operands, at, index, [&](Value *code) { builder.CreateStore(code, errorFlag); });
    Value *next = builder.CreateAdd(index, builder.getInt64(1), "i.next", /*HasNUW=*/true, /*HasNSW=*/true);
    if (strided) {
      Value *nextColumn = builder.CreateAdd(load(column), builder.getInt64(1));
      BasicBlock *wrap = block("row.end"), *along = block("row.step"), *advanced = block("advanced");
      builder.CreateCondBr(builder.CreateICmpEQ(nextColumn, rowLength), wrap, along);
      builder.SetInsertPoint(wrap);
      divideInto(next);
      builder.CreateBr(advanced);
      builder.SetInsertPoint(along);
      for (size_t k = 0; k < numArrays; ++k)
        builder.CreateStore(builder.CreateAdd(at[k], rowStrides[k]), offsets[k]);
      builder.CreateStore(nextColumn, column);
      builder.CreateBr(advanced);
      builder.SetInsertPoint(advanced);
    }
    index->addIncoming(next, builder.GetInsertBlock());
    builder.CreateCondBr(builder.CreateICmpSLT(next, end), threads, roundDone);
    builder.SetInsertPoint(roundDone);
    Value *nextBase = builder.CreateAdd(base, step, "base.next");
    base->addIncoming(nextBase, roundDone);
    builder.CreateCondBr(builder.CreateICmpSLT(nextBase, count), rounds, exit);
    builder.SetInsertPoint(exit);
  }

private:
  /// One output element: loads each input at its offset, runs the body, stores at output[outputIndex] and
  /// each extra output at its offset (offsets: one per array, the inputs' then the extra outputs'). When the
  /// body can fail, onError runs with the code: in a block of its own, where the code is not kKernelOk,
  /// unless `everyElement` (then for each element, kKernelOk or not); the stores follow.
  void element(const KernelOperands &operands, const std::vector<Value *> &offsets, Value *outputIndex,
               const std::function<void(Value *)> &onError, bool everyElement = false) {
    size_t numInputs = spec.body->numInputs();
    ScalarResult result = emitScalarBody(builder, *spec.body, loadInputs(operands, offsets), target,
                                         tableAccess(operands, offsets));
    if (result.errorCode && everyElement) onError(result.errorCode);
    if (result.errorCode && !everyElement) {
      BasicBlock *failed = block("element.failed"), *store = block("element.store");
      builder.CreateCondBr(builder.CreateICmpNE(result.errorCode, builder.getInt32(kKernelOk)), failed,
                           store);
      builder.SetInsertPoint(failed);
      onError(result.errorCode);
      if (!builder.GetInsertBlock()->getTerminator()) builder.CreateBr(store);
      builder.SetInsertPoint(store);
    }
    storeElement(builder, spec.body->resultDtype(), operands.output, outputIndex, result.value, inputScope);
    for (size_t j = 0; j < result.extras.size(); ++j)
      storeElement(builder, spec.body->arrayDtype(numInputs + j), operands.inputs[numInputs + j],
                   offsets[numInputs + j], result.extras[j], inputScope);
  }

  /// Host: keeps the largest error code of the elements so far.
  void noteError(Value *code) {
    builder.CreateStore(builder.CreateBinaryIntrinsic(llvm::Intrinsic::umax, load(hostError), code),
                        hostError);
  }

  /// for (i = begin; i < end; ++i) output[i] = body(inputs[k][i]...): the loop LLVM vectorizes.
  void hostContiguousLoop(const KernelOperands &operands, Value *begin, Value *end) {
    BasicBlock *loop = block("loop"), *exit = block("exit");
    BasicBlock *preheader = builder.GetInsertBlock();
    builder.CreateCondBr(builder.CreateICmpSLT(begin, end), loop, exit);
    builder.SetInsertPoint(loop);
    llvm::PHINode *index = builder.CreatePHI(builder.getInt64Ty(), 2, "i");
    index->addIncoming(begin, preheader);
    element(
        operands, std::vector<Value *>(operands.inputs.size(), index), index,
        [&](Value *code) { noteError(code); }, /*everyElement=*/true);
    Value *next = builder.CreateAdd(index, builder.getInt64(1), "i.next", /*HasNUW=*/true, /*HasNSW=*/true);
    index->addIncoming(next, builder.GetInsertBlock());
    builder.CreateCondBr(builder.CreateICmpSLT(next, end), loop, exit);
    builder.SetInsertPoint(exit);
  }

  /// Strided (host): part of one plane, the space's last two axes, which the runtime presents as a rank-2
  /// space (a 1-d output is one plane of one row, a 0-d one of one element) with the inputs and the output
  /// at the plane's first element; it walks the planes (runHostKernel, Kernel.h). The rows of the range in
  /// turn, the innermost loop a plain one LLVM vectorizes:
  ///
  ///   row = begin / rowLength; start = begin % rowLength; rowBase[k] = row * outerStride[k]
  ///   for position = begin; position < end; rowBase[k] += outerStride[k], start = 0:
  ///     length = min(rowLength - start, end - position)
  ///     for t in [start, start + length): output[position - start + t] =
  ///         body(inputs[k][rowBase[k] + t * innerStride[k]]...)   (innerStride[k] a constant 1 or 0 where
  ///                                                                the spec says so)
  ///     position += length
  void hostPlaneLoop(const KernelOperands &operands, Value *begin, Value *end) {
    llvm::Type *i64 = builder.getInt64Ty();
    size_t numInputs = operands.inputs.size();
    BasicBlock *setup = block("setup"), *exit = block("exit");
    builder.CreateCondBr(builder.CreateICmpSLT(begin, end), setup, exit);
    builder.SetInsertPoint(setup);
    Value *rowLength = loadInt64(operands.shape, builder.getInt64(1));
    std::vector<Value *> outerStrides, innerStrides;
    for (size_t k = 0; k < numInputs; ++k) {
      outerStrides.push_back(loadInt64(operands.strides, builder.getInt64(2 * k)));
      innerStrides.push_back(loadInt64(operands.strides, builder.getInt64(2 * k + 1)));
    }
    innerStrides = specializedStrides(std::move(innerStrides));
    Value *firstRow = builder.CreateUDiv(begin, rowLength),
          *firstStart = builder.CreateURem(begin, rowLength);
    std::vector<Value *> firstBases;
    for (Value *outer : outerStrides)
      firstBases.push_back(builder.CreateMul(firstRow, outer));
    BasicBlock *preheader = builder.GetInsertBlock(), *row = block("row");
    builder.CreateBr(row);

    builder.SetInsertPoint(row);
    llvm::PHINode *position = builder.CreatePHI(i64, 2, "position");
    llvm::PHINode *start = builder.CreatePHI(i64, 2, "start");
    position->addIncoming(begin, preheader);
    start->addIncoming(firstStart, preheader);
    std::vector<llvm::PHINode *> rowBases;
    for (size_t k = 0; k < numInputs; ++k) {
      rowBases.push_back(builder.CreatePHI(i64, 2, "row.base"));
      rowBases[k]->addIncoming(firstBases[k], preheader);
    }
    Value *length = builder.CreateBinaryIntrinsic(llvm::Intrinsic::smin, builder.CreateSub(rowLength, start),
                                                  builder.CreateSub(end, position), nullptr, "row.length");
    Value *stop = builder.CreateAdd(start, length, "row.stop");
    Value *outputBase = builder.CreateSub(position, start, "output.base");
    BasicBlock *inner = block("inner"), *rowDone = block("row.done");
    builder.CreateBr(inner);

    builder.SetInsertPoint(inner);
    llvm::PHINode *t = builder.CreatePHI(i64, 2, "t");
    t->addIncoming(start, row);
    std::vector<Value *> offsets;
    for (size_t k = 0; k < numInputs; ++k)
      offsets.push_back(builder.CreateAdd(rowBases[k], builder.CreateMul(t, innerStrides[k])));
    element(
        operands, offsets, builder.CreateAdd(outputBase, t), [&](Value *code) { noteError(code); },
        /*everyElement=*/true);
    Value *nextT = builder.CreateAdd(t, builder.getInt64(1), "t.next", /*HasNUW=*/true, /*HasNSW=*/true);
    t->addIncoming(nextT, builder.GetInsertBlock());
    builder.CreateCondBr(builder.CreateICmpSLT(nextT, stop), inner, rowDone);

    builder.SetInsertPoint(rowDone);
    Value *nextPosition = builder.CreateAdd(position, length);
    position->addIncoming(nextPosition, rowDone);
    start->addIncoming(builder.getInt64(0), rowDone);
    for (size_t k = 0; k < numInputs; ++k)
      rowBases[k]->addIncoming(builder.CreateAdd(rowBases[k], outerStrides[k]), rowDone);
    builder.CreateCondBr(builder.CreateICmpSLT(nextPosition, end), row, exit);
    builder.SetInsertPoint(exit);
  }

  /// A Strided element's offset in each input, from its linear index: divide by the sizes from the last axis.
  std::vector<Value *> divideIndex(const KernelOperands &operands, Value *linear) {
    llvm::Type *i64 = builder.getInt64Ty();
    size_t numInputs = operands.inputs.size();
    std::vector<llvm::AllocaInst *> offsets;
    for (size_t k = 0; k < numInputs; ++k)
      offsets.push_back(local(i64, builder.getInt64(0), "offset"));
    llvm::AllocaInst *remaining = local(i64, linear, "remaining");
    llvm::AllocaInst *axis = local(i64, builder.CreateSub(operands.rank, builder.getInt64(1)), "axis");
    BasicBlock *test = block("divide.test"), *divide = block("divide.axis"), *done = block("divide.done");
    builder.CreateBr(test);
    builder.SetInsertPoint(test);
    Value *j = load(axis);
    builder.CreateCondBr(builder.CreateICmpSGE(j, builder.getInt64(0)), divide, done);
    builder.SetInsertPoint(divide);
    Value *size = loadInt64(operands.shape, j);
    Value *rest = load(remaining);
    Value *coordinate = builder.CreateURem(rest, size);
    builder.CreateStore(builder.CreateUDiv(rest, size), remaining);
    for (size_t k = 0; k < numInputs; ++k)
      builder.CreateStore(
          builder.CreateAdd(load(offsets[k]), builder.CreateMul(coordinate, inputStride(operands, k, j))),
          offsets[k]);
    builder.CreateStore(builder.CreateSub(j, builder.getInt64(1)), axis);
    builder.CreateBr(test);
    builder.SetInsertPoint(done);
    std::vector<Value *> values;
    for (llvm::AllocaInst *offset : offsets)
      values.push_back(load(offset));
    return values;
  }

  llvm::AllocaInst *hostError = nullptr; // the host loop's largest error code so far
};

llvm::Function *declareKernel(llvm::Module &module, const std::string &name, llvm::Type *result,
                              llvm::ArrayRef<llvm::Type *> parameters, llvm::ArrayRef<const char *> names) {
  auto *type = llvm::FunctionType::get(result, parameters, false);
  llvm::Function *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  for (size_t i = 0; i < names.size(); ++i)
    function->getArg(i)->setName(names[i]);
  return function;
}

} // namespace

llvm::Function *buildHostKernel(llvm::Module &module, const KernelSpec &spec, const std::string &name) {
  TG_ASSERT(spec.innerStrides.empty() ||
            (spec.layout == Layout::Strided && spec.innerStrides.size() == spec.body->numArrays()))
      << "inner strides are for host Strided kernels, one per input and extra output";
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::Function *function =
      declareKernel(module, name, llvm::Type::getInt32Ty(context),
                    {llvm::PointerType::getUnqual(context), i64, i64}, {"args", "begin", "end"});
  if (spec.body->reduction) {
    emitHostReduction(*function, spec);
    return function;
  }
  ElementwiseEmitter emitter(*function, spec, MathTarget::Host);
  KernelOperands operands = emitter.loadKernelArgs(function->getArg(0));
  emitter.hostLoop(operands, function->getArg(1), function->getArg(2));
  return function;
}

llvm::Function *buildSimDeviceKernel(llvm::Module &module, const KernelSpec &spec, const std::string &name) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::Function *function = declareKernel(module, name, llvm::Type::getInt32Ty(context),
                                           {llvm::PointerType::getUnqual(context), i64, i64, i64, i64},
                                           {"args", "count", "block", "blockSize", "gridSize"});
  if (spec.body->reduction) {
    emitSimDeviceReduction(*function, spec);
    return function;
  }
  ElementwiseEmitter emitter(*function, spec, MathTarget::Host);
  llvm::IRBuilder<> &b = emitter.b();
  KernelOperands operands = emitter.loadKernelArgs(function->getArg(0));
  Value *count = function->getArg(1), *blockIndex = function->getArg(2), *blockSize = function->getArg(3);
  Value *step = b.CreateMul(function->getArg(4), blockSize, "grid.threads");
  Value *blockStart = b.CreateMul(blockIndex, blockSize, "block.start");
  llvm::AllocaInst *errorFlag = emitter.local(b.getInt32Ty(), b.getInt32(kKernelOk), "error.flag");
  emitter.simulatedBlock(operands, count, blockStart, blockSize, step, errorFlag);
  b.CreateRet(b.CreateLoad(b.getInt32Ty(), errorFlag));
  return function;
}

llvm::Function *buildPtxKernel(llvm::Module &module, const KernelSpec &spec, const std::string &name) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(context), *pointer = llvm::PointerType::getUnqual(context);
  const char *kNames[kFusedParameters] = {"count",   "rank",   "shape",     "inputs",
                                          "strides", "output", "errorFlag", "reducedRank"};
  std::vector<llvm::Type *> parameters;
  std::vector<const char *> names;
  for (unsigned p = 0; p < fusedParameterCount(spec); ++p) {
    bool integer = p == kFusedCount || p == kFusedRank || p == kFusedReducedRank;
    parameters.push_back(integer ? i64 : pointer);
    names.push_back(kNames[p]);
  }
  llvm::Function *function = declareKernel(module, name, llvm::Type::getVoidTy(context), parameters, names);
  function->setCallingConv(llvm::CallingConv::PTX_Kernel);
  if (spec.body->reduction) {
    emitPtxReduction(*function, spec);
    return function;
  }
  ElementwiseEmitter emitter(*function, spec, MathTarget::Nvptx);
  llvm::IRBuilder<> &b = emitter.b();
  KernelOperands operands = emitter.loadPtxParameters();

  auto special = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), i64); };
  Value *blockSize = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  Value *first = b.CreateAdd(b.CreateMul(special(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), blockSize),
                             special(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), "thread");
  Value *step = b.CreateMul(special(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), blockSize, "grid.threads");
  emitter.gridStrideLoop(operands, function->getArg(kFusedCount), first, step,
                         function->getArg(kFusedErrorFlag));
  b.CreateRetVoid();
  return function;
}

} // namespace tg::codegen
