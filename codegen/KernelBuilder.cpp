// The loops around the scalar body: the host's row walk and the devices' grid-stride loop (pictures in
// KernelBuilder.h). Loop state lives in allocas of the entry block; the O3 pipeline's SROA turns them into
// registers before the loop passes see them.
#include "codegen/KernelBuilder.h"

#include "codegen/ScalarEmitter.h"
#include "ir/Assert.h"

#include <cstddef>
#include <dlfcn.h>
#include <functional>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>
#include <vector>

namespace tg::codegen {

using llvm::BasicBlock;
using llvm::Value;

namespace {

// The generated code reads KernelArgs as the LLVM struct {i64, ptr, ptr, ptr, ptr}.
static_assert(offsetof(KernelArgs, rank) == 0 && offsetof(KernelArgs, shape) == 8 &&
                  offsetof(KernelArgs, inputs) == 16 && offsetof(KernelArgs, strides) == 24 &&
                  offsetof(KernelArgs, output) == 32,
              "KernelArgs no longer matches the layout the kernels read");

/// What every kernel reads before its loop.
struct KernelOperands {
  Value *rank = nullptr;
  Value *shape = nullptr;   // ptr to rank i64
  Value *strides = nullptr; // ptr to numInputs * rank i64, input-major
  Value *output = nullptr;
  std::vector<Value *> inputs; // each input's base pointer
};

/// Emits a kernel function's body: the loops of one target around emitScalarBody.
class LoopEmitter {
public:
  LoopEmitter(llvm::Function &function, const KernelSpec &spec, MathTarget target)
      : function(function), spec(spec), target(target),
        builder(BasicBlock::Create(function.getContext(), "entry", &function)) {
    TG_ASSERT(!spec.body->reduction) << "codegen emits elementwise kernels, not reductions with a prologue";
  }

  llvm::IRBuilder<> &b() { return builder; }

  /// Reads a KernelArgs (host ABI) and the input pointers it lists.
  KernelOperands loadKernelArgs(Value *args) {
    llvm::Type *pointer = builder.getPtrTy();
    auto *type = llvm::StructType::get(builder.getContext(),
                                       {builder.getInt64Ty(), pointer, pointer, pointer, pointer});
    auto field = [&](unsigned index, llvm::Type *fieldType, const char *name) {
      return builder.CreateLoad(fieldType, builder.CreateStructGEP(type, args, index), name);
    };
    KernelOperands operands;
    operands.rank = field(0, builder.getInt64Ty(), "rank");
    operands.shape = field(1, pointer, "shape");
    operands.inputs = loadInputPointers(field(2, pointer, "inputs"));
    operands.strides = field(3, pointer, "strides");
    operands.output = field(4, pointer, "output");
    return operands;
  }

  std::vector<Value *> loadInputPointers(Value *inputs) {
    std::vector<Value *> pointers;
    for (size_t k = 0; k < spec.body->numInputs(); ++k)
      pointers.push_back(builder.CreateLoad(
          builder.getPtrTy(), builder.CreateConstInBoundsGEP1_64(builder.getPtrTy(), inputs, k)));
    return pointers;
  }

  /// Host: a loop over [begin, end) that returns an element's error code at once.
  void hostLoop(const KernelOperands &operands, Value *begin, Value *end) {
    if (spec.layout == Layout::Contiguous)
      hostContiguousLoop(operands, begin, end);
    else
      hostStridedLoop(operands, begin, end);
    builder.CreateRet(builder.getInt32(kKernelOk));
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
                                       ? std::vector<Value *>(spec.body->numInputs(), index)
                                       : divideIndex(operands, index);
    element(operands, offsets, index, [&](Value *code) { builder.CreateStore(code, errorFlag); });
    Value *next = builder.CreateAdd(index, step, "i.next");
    index->addIncoming(next, builder.GetInsertBlock());
    builder.CreateCondBr(builder.CreateICmpSLT(next, count), loop, exit);
    builder.SetInsertPoint(exit);
  }

  /// A local variable of the function (an entry-block alloca), set to `initial` here.
  llvm::AllocaInst *local(llvm::Type *type, Value *initial, const char *name) {
    BasicBlock &entry = function.getEntryBlock();
    llvm::IRBuilder<> atEntry(&entry, entry.begin());
    llvm::AllocaInst *variable = atEntry.CreateAlloca(type, nullptr, name);
    builder.CreateStore(initial, variable);
    return variable;
  }

  BasicBlock *block(const char *name) { return BasicBlock::Create(builder.getContext(), name, &function); }

private:
  Value *load(llvm::AllocaInst *variable) {
    return builder.CreateLoad(variable->getAllocatedType(), variable);
  }

  /// array[index] of an i64 array.
  Value *loadInt64(Value *array, Value *index) {
    return builder.CreateLoad(builder.getInt64Ty(),
                              builder.CreateInBoundsGEP(builder.getInt64Ty(), array, index));
  }
  /// Input k's stride along `axis`: strides[k * rank + axis].
  Value *inputStride(const KernelOperands &operands, size_t k, Value *axis) {
    return loadInt64(operands.strides,
                     builder.CreateAdd(builder.CreateMul(builder.getInt64(k), operands.rank), axis));
  }

  /// One output element: loads each input at its offset, runs the body, stores at output[outputIndex]. When
  /// the body can fail, onError runs in a block of its own with the code; unless it returns, the store
  /// follows.
  void element(const KernelOperands &operands, const std::vector<Value *> &offsets, Value *outputIndex,
               const std::function<void(Value *)> &onError) {
    std::vector<Value *> values;
    for (size_t k = 0; k < operands.inputs.size(); ++k)
      values.push_back(loadElement(builder, spec.body->inputDtypes[k], operands.inputs[k], offsets[k]));
    ScalarResult result = emitScalarBody(builder, *spec.body, values, target);
    if (result.errorCode) {
      BasicBlock *failed = block("element.failed"), *store = block("element.store");
      builder.CreateCondBr(builder.CreateICmpNE(result.errorCode, builder.getInt32(kKernelOk)), failed,
                           store);
      builder.SetInsertPoint(failed);
      onError(result.errorCode);
      if (!builder.GetInsertBlock()->getTerminator()) builder.CreateBr(store);
      builder.SetInsertPoint(store);
    }
    storeElement(builder, spec.body->resultDtype(), operands.output, outputIndex, result.value);
  }

  void returnError(Value *code) { builder.CreateRet(code); }

  /// for (i = begin; i < end; ++i) output[i] = body(inputs[k][i]...): the loop LLVM vectorizes.
  void hostContiguousLoop(const KernelOperands &operands, Value *begin, Value *end) {
    BasicBlock *loop = block("loop"), *exit = block("exit");
    BasicBlock *preheader = builder.GetInsertBlock();
    builder.CreateCondBr(builder.CreateICmpSLT(begin, end), loop, exit);
    builder.SetInsertPoint(loop);
    llvm::PHINode *index = builder.CreatePHI(builder.getInt64Ty(), 2, "i");
    index->addIncoming(begin, preheader);
    element(operands, std::vector<Value *>(operands.inputs.size(), index), index,
            [&](Value *code) { returnError(code); });
    Value *next = builder.CreateAdd(index, builder.getInt64(1), "i.next", /*HasNUW=*/true, /*HasNSW=*/true);
    index->addIncoming(next, builder.GetInsertBlock());
    builder.CreateCondBr(builder.CreateICmpSLT(next, end), loop, exit);
    builder.SetInsertPoint(exit);
  }

  /// The CPU's forEachRow over [begin, end): find begin's multi-index once, then run the innermost axis as a
  /// tight loop (which LLVM vectorizes, versioned on unit strides) and carry into the outer axes like an
  /// odometer. A 0-d output is one row of one element.
  ///
  ///   setup:  inner size / input strides of the last axis (1 / 0 when rank is 0)
  ///           index[0..rank) = unravel(begin); rowBase[k] = offset of begin's row start in input k
  ///   row:    length = min(innerSize - innerStart, end - position)
  ///   inner:  for t in [innerStart, innerStart + length): output[position - innerStart + t] =
  ///               body(inputs[k][rowBase[k] + t * innerStride[k]]...)
  ///           position += length; if position == end: return
  ///   carry:  innerStart = 0; for j = rank-2 down: index[j]++, rowBase[k] += strides[k][j]; stop unless it
  ///           wrapped to shape[j] (then index[j] = 0, rowBase[k] -= shape[j] * strides[k][j])
  void hostStridedLoop(const KernelOperands &operands, Value *begin, Value *end) {
    llvm::Type *i64 = builder.getInt64Ty();
    size_t numInputs = operands.inputs.size();
    BasicBlock *setup = block("setup"), *exit = block("exit");
    builder.CreateCondBr(builder.CreateICmpSLT(begin, end), setup, exit);

    // The innermost axis, if any.
    builder.SetInsertPoint(setup);
    BasicBlock *lastAxis = block("last.axis"), *unravel = block("unravel");
    builder.CreateCondBr(builder.CreateICmpSGT(operands.rank, builder.getInt64(0)), lastAxis, unravel);
    builder.SetInsertPoint(lastAxis);
    Value *last = builder.CreateSub(operands.rank, builder.getInt64(1));
    Value *lastSize = loadInt64(operands.shape, last);
    std::vector<Value *> lastStrides;
    for (size_t k = 0; k < numInputs; ++k)
      lastStrides.push_back(inputStride(operands, k, last));
    builder.CreateBr(unravel);
    builder.SetInsertPoint(unravel);
    llvm::PHINode *innerSize = builder.CreatePHI(i64, 2, "inner.size");
    innerSize->addIncoming(builder.getInt64(1), setup);
    innerSize->addIncoming(lastSize, lastAxis);
    std::vector<Value *> innerStrides;
    for (size_t k = 0; k < numInputs; ++k) {
      llvm::PHINode *stride = builder.CreatePHI(i64, 2, "inner.stride");
      stride->addIncoming(builder.getInt64(0), setup);
      stride->addIncoming(lastStrides[k], lastAxis);
      innerStrides.push_back(stride);
    }

    // index[j] and rowBase[k] for begin, from the last axis to the first.
    Value *index = builder.CreateAlloca(i64, operands.rank, "index");
    std::vector<llvm::AllocaInst *> rowBases;
    for (size_t k = 0; k < numInputs; ++k)
      rowBases.push_back(local(i64, builder.getInt64(0), "row.base"));
    llvm::AllocaInst *remaining = local(i64, begin, "remaining");
    llvm::AllocaInst *axis = local(i64, builder.CreateSub(operands.rank, builder.getInt64(1)), "axis");
    BasicBlock *unravelTest = block("unravel.test"), *unravelAxis = block("unravel.axis"),
               *unravelDone = block("unravel.done");
    builder.CreateBr(unravelTest);
    builder.SetInsertPoint(unravelTest);
    Value *j = load(axis);
    builder.CreateCondBr(builder.CreateICmpSGE(j, builder.getInt64(0)), unravelAxis, unravelDone);
    builder.SetInsertPoint(unravelAxis);
    Value *size = loadInt64(operands.shape, j);
    Value *rest = load(remaining);
    Value *coordinate = builder.CreateURem(rest, size);
    builder.CreateStore(builder.CreateUDiv(rest, size), remaining);
    builder.CreateStore(coordinate, builder.CreateInBoundsGEP(i64, index, j));
    for (size_t k = 0; k < numInputs; ++k)
      builder.CreateStore(
          builder.CreateAdd(load(rowBases[k]), builder.CreateMul(coordinate, inputStride(operands, k, j))),
          rowBases[k]);
    builder.CreateStore(builder.CreateSub(j, builder.getInt64(1)), axis);
    builder.CreateBr(unravelTest);

    // rowBase[k] so far is begin's own offset; step back to its row's start.
    builder.SetInsertPoint(unravelDone);
    Value *firstInner = builder.CreateURem(begin, innerSize);
    for (size_t k = 0; k < numInputs; ++k)
      builder.CreateStore(
          builder.CreateSub(load(rowBases[k]), builder.CreateMul(firstInner, innerStrides[k])), rowBases[k]);
    llvm::AllocaInst *position = local(i64, begin, "position");
    llvm::AllocaInst *innerStart = local(i64, firstInner, "inner.start");
    BasicBlock *row = block("row");
    builder.CreateBr(row);

    builder.SetInsertPoint(row);
    Value *rowPosition = load(position), *start = load(innerStart);
    Value *length = builder.CreateBinaryIntrinsic(llvm::Intrinsic::smin, builder.CreateSub(innerSize, start),
                                                  builder.CreateSub(end, rowPosition), nullptr, "row.length");
    Value *stop = builder.CreateAdd(start, length, "inner.stop");
    Value *outputBase = builder.CreateSub(rowPosition, start, "output.base");
    std::vector<Value *> bases;
    for (size_t k = 0; k < numInputs; ++k)
      bases.push_back(load(rowBases[k]));
    BasicBlock *inner = block("inner"), *rowDone = block("row.done");
    builder.CreateBr(inner);
    builder.SetInsertPoint(inner);
    llvm::PHINode *t = builder.CreatePHI(i64, 2, "t");
    t->addIncoming(start, row);
    std::vector<Value *> offsets;
    for (size_t k = 0; k < numInputs; ++k)
      offsets.push_back(builder.CreateAdd(bases[k], builder.CreateMul(t, innerStrides[k])));
    element(operands, offsets, builder.CreateAdd(outputBase, t), [&](Value *code) { returnError(code); });
    Value *nextT = builder.CreateAdd(t, builder.getInt64(1), "t.next", /*HasNUW=*/true, /*HasNSW=*/true);
    t->addIncoming(nextT, builder.GetInsertBlock());
    builder.CreateCondBr(builder.CreateICmpSLT(nextT, stop), inner, rowDone);

    builder.SetInsertPoint(rowDone);
    Value *nextPosition = builder.CreateAdd(rowPosition, length);
    builder.CreateStore(nextPosition, position);
    BasicBlock *carry = block("carry");
    builder.CreateCondBr(builder.CreateICmpSLT(nextPosition, end), carry, exit);

    // More elements remain, so some outer axis j < rank - 1 can still advance: the carry stops there.
    builder.SetInsertPoint(carry);
    builder.CreateStore(builder.getInt64(0), innerStart);
    builder.CreateStore(builder.CreateSub(operands.rank, builder.getInt64(2)), axis);
    BasicBlock *carryAxis = block("carry.axis"), *carryWrap = block("carry.wrap"),
               *carryDone = block("carry.done");
    builder.CreateBr(carryAxis);
    builder.SetInsertPoint(carryAxis);
    Value *outer = load(axis);
    Value *slot = builder.CreateInBoundsGEP(i64, index, outer);
    Value *advanced = builder.CreateAdd(builder.CreateLoad(i64, slot), builder.getInt64(1));
    std::vector<Value *> outerStrides;
    for (size_t k = 0; k < numInputs; ++k) {
      outerStrides.push_back(inputStride(operands, k, outer));
      builder.CreateStore(builder.CreateAdd(load(rowBases[k]), outerStrides[k]), rowBases[k]);
    }
    Value *outerSize = loadInt64(operands.shape, outer);
    builder.CreateCondBr(builder.CreateICmpSLT(advanced, outerSize), carryDone, carryWrap);
    builder.SetInsertPoint(carryWrap);
    builder.CreateStore(builder.getInt64(0), slot);
    for (size_t k = 0; k < numInputs; ++k)
      builder.CreateStore(builder.CreateSub(load(rowBases[k]), builder.CreateMul(outerSize, outerStrides[k])),
                          rowBases[k]);
    builder.CreateStore(builder.CreateSub(outer, builder.getInt64(1)), axis);
    builder.CreateBr(carryAxis);
    builder.SetInsertPoint(carryDone);
    builder.CreateStore(advanced, slot);
    builder.CreateBr(row);

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

  llvm::Function &function;
  const KernelSpec &spec;
  MathTarget target;
  llvm::IRBuilder<> builder;
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
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::Function *function =
      declareKernel(module, name, llvm::Type::getInt32Ty(context),
                    {llvm::PointerType::getUnqual(context), i64, i64}, {"args", "begin", "end"});
  LoopEmitter emitter(*function, spec, MathTarget::Host);
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
  LoopEmitter emitter(*function, spec, MathTarget::Host);
  llvm::IRBuilder<> &b = emitter.b();
  KernelOperands operands = emitter.loadKernelArgs(function->getArg(0));
  Value *count = function->getArg(1), *blockIndex = function->getArg(2), *blockSize = function->getArg(3);
  Value *step = b.CreateMul(function->getArg(4), blockSize, "grid.threads");
  Value *blockStart = b.CreateMul(blockIndex, blockSize, "block.start");
  llvm::AllocaInst *errorFlag = emitter.local(b.getInt32Ty(), b.getInt32(kKernelOk), "error.flag");

  // for (thread = 0; thread < blockSize; ++thread) the grid-stride loop of global thread blockStart + thread.
  BasicBlock *threads = emitter.block("threads"), *exit = emitter.block("exit");
  BasicBlock *preheader = b.GetInsertBlock();
  b.CreateCondBr(b.CreateICmpSGT(blockSize, b.getInt64(0)), threads, exit);
  b.SetInsertPoint(threads);
  llvm::PHINode *thread = b.CreatePHI(i64, 2, "thread");
  thread->addIncoming(b.getInt64(0), preheader);
  emitter.gridStrideLoop(operands, count, b.CreateAdd(blockStart, thread), step, errorFlag);
  Value *nextThread = b.CreateAdd(thread, b.getInt64(1), "thread.next");
  thread->addIncoming(nextThread, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(nextThread, blockSize), threads, exit);
  b.SetInsertPoint(exit);
  b.CreateRet(b.CreateLoad(b.getInt32Ty(), errorFlag));
  return function;
}

/// NVPTX's address space of global (device) memory.
constexpr unsigned kGlobalAddressSpace = 1;

llvm::Function *buildPtxKernel(llvm::Module &module, const KernelSpec &spec, const std::string &name) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(context), *pointer = llvm::PointerType::getUnqual(context);
  llvm::Function *function = declareKernel(
      module, name, llvm::Type::getVoidTy(context), {i64, i64, pointer, pointer, pointer, pointer, pointer},
      {"count", "rank", "shape", "inputs", "strides", "output", "errorFlag"});
  function->setCallingConv(llvm::CallingConv::PTX_Kernel);
  LoopEmitter emitter(*function, spec, MathTarget::Nvptx);
  llvm::IRBuilder<> &b = emitter.b();
  KernelOperands operands;
  operands.rank = function->getArg(1);
  operands.shape = function->getArg(2);
  // Inputs are global memory (the kernel's contract): saying so gives ld.global instead of generic loads.
  for (Value *input : emitter.loadInputPointers(function->getArg(3)))
    operands.inputs.push_back(
        b.CreateAddrSpaceCast(input, llvm::PointerType::get(context, kGlobalAddressSpace)));
  operands.strides = function->getArg(4);
  operands.output = function->getArg(5);

  auto special = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), i64); };
  Value *blockSize = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  Value *first = b.CreateAdd(b.CreateMul(special(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), blockSize),
                             special(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), "thread");
  Value *step = b.CreateMul(special(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), blockSize, "grid.threads");
  emitter.gridStrideLoop(operands, function->getArg(0), first, step, function->getArg(6));
  b.CreateRetVoid();
  return function;
}

namespace {

/// libmvec's vector variants that LLVM 19's table lacks (glibc 2.35 added them), for the math functions of
/// tgc's ops: SSE ("b", 128-bit) and AVX2 ("d", 256-bit). Only those the installed libmvec exports, so that a
/// kernel never calls a symbol the JIT cannot find.
const std::vector<llvm::VecDesc> &moreLibmvecFunctions() {
  static const std::vector<llvm::VecDesc> available = [] {
    std::vector<llvm::VecDesc> found;
    void *library = dlopen("libmvec.so.1", RTLD_LAZY);
    if (!library) return found;
    struct Variant {
      const char *scalar, *vector;
      unsigned lanes;
      const char *abi;
    };
    static const Variant variants[] = {
        {"tanhf", "_ZGVbN4v_tanhf", 4, "_ZGV_LLVM_N4v"},   {"tanhf", "_ZGVdN8v_tanhf", 8, "_ZGV_LLVM_N8v"},
        {"tanh", "_ZGVbN2v_tanh", 2, "_ZGV_LLVM_N2v"},     {"tanh", "_ZGVdN4v_tanh", 4, "_ZGV_LLVM_N4v"},
        {"log1pf", "_ZGVbN4v_log1pf", 4, "_ZGV_LLVM_N4v"}, {"log1pf", "_ZGVdN8v_log1pf", 8, "_ZGV_LLVM_N8v"},
        {"log1p", "_ZGVbN2v_log1p", 2, "_ZGV_LLVM_N2v"},   {"log1p", "_ZGVdN4v_log1p", 4, "_ZGV_LLVM_N4v"},
        {"expm1f", "_ZGVbN4v_expm1f", 4, "_ZGV_LLVM_N4v"}, {"expm1f", "_ZGVdN8v_expm1f", 8, "_ZGV_LLVM_N8v"},
        {"expm1", "_ZGVbN2v_expm1", 2, "_ZGV_LLVM_N2v"},   {"expm1", "_ZGVdN4v_expm1", 4, "_ZGV_LLVM_N4v"},
        {"erff", "_ZGVbN4v_erff", 4, "_ZGV_LLVM_N4v"},     {"erff", "_ZGVdN8v_erff", 8, "_ZGV_LLVM_N8v"},
        {"erf", "_ZGVbN2v_erf", 2, "_ZGV_LLVM_N2v"},       {"erf", "_ZGVdN4v_erf", 4, "_ZGV_LLVM_N4v"},
    };
    for (const Variant &variant : variants)
      if (dlsym(library, variant.vector))
        found.emplace_back(variant.scalar, variant.vector, llvm::ElementCount::getFixed(variant.lanes), false,
                           variant.abi);
    return found; // the library stays loaded: the JIT links kernels against it
  }();
  return available;
}

} // namespace

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine, bool useLibmvec) {
  std::string problems;
  llvm::raw_string_ostream problemStream(problems);
  TG_ASSERT(!llvm::verifyModule(module, &problemStream)) << "codegen built a broken module:\n" << problems;

  // Declared in this order so that they are destroyed in the reverse one (PassBuilder's documented usage).
  llvm::LoopAnalysisManager loopAnalyses;
  llvm::FunctionAnalysisManager functionAnalyses;
  llvm::CGSCCAnalysisManager sccAnalyses;
  llvm::ModuleAnalysisManager moduleAnalyses;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder passes(&machine, tuning);
  llvm::Triple triple(module.getTargetTriple());
  llvm::TargetLibraryInfoImpl libraryInfo(triple);
  if (useLibmvec) {
    libraryInfo.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86, triple);
    libraryInfo.addVectorizableFunctions(moreLibmvecFunctions());
  }
  // Registered before the defaults, so that it replaces theirs.
  functionAnalyses.registerPass([&] { return llvm::TargetLibraryAnalysis(libraryInfo); });
  passes.registerModuleAnalyses(moduleAnalyses);
  passes.registerCGSCCAnalyses(sccAnalyses);
  passes.registerFunctionAnalyses(functionAnalyses);
  passes.registerLoopAnalyses(loopAnalyses);
  passes.crossRegisterProxies(loopAnalyses, functionAnalyses, sccAnalyses, moduleAnalyses);
  passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, moduleAnalyses);
}

} // namespace tg::codegen
