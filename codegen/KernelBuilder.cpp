// The loops around the scalar body: the host's row walk and the devices' grid-stride loop (pictures in
// KernelBuilder.h). Loop state lives in allocas of the entry block; the optimizer's SROA turns them into
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
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>
#include <mutex>
#include <optional>
#include <vector>

namespace tg::codegen {

using llvm::BasicBlock;
using llvm::Value;

namespace {

// The generated code reads KernelArgs as the LLVM struct {i64, ptr, ptr, ptr, ptr}.
static_assert(offsetof(KernelArgs, rank) == 0 && offsetof(KernelArgs, shape) == 8 &&
                  offsetof(KernelArgs, inputs) == 16 && offsetof(KernelArgs, strides) == 24 &&
                  offsetof(KernelArgs, output) == 32 && offsetof(KernelArgs, reducedRank) == 40,
              "KernelArgs no longer matches the layout the kernels read");

/// What every kernel reads before its loop.
struct KernelOperands {
  Value *rank = nullptr;
  Value *shape = nullptr;   // ptr to rank i64
  Value *strides = nullptr; // ptr to numInputs * rank i64, input-major
  Value *output = nullptr;
  Value *reducedRank = nullptr; // reduction kernels only
  std::vector<Value *> inputs;  // each input's base pointer
};

/// Emits a kernel function's body: the loops of one target around emitScalarBody.
class LoopEmitter {
public:
  LoopEmitter(llvm::Function &function, const KernelSpec &spec, MathTarget target)
      : function(function), spec(spec), target(target),
        builder(BasicBlock::Create(function.getContext(), "entry", &function)),
        inputScope(kernelInputScope(function.getContext())) {}

  llvm::IRBuilder<> &b() { return builder; }

  /// Reads a KernelArgs (host ABI) and the input pointers it lists.
  KernelOperands loadKernelArgs(Value *args) {
    llvm::Type *pointer = builder.getPtrTy();
    auto *type = llvm::StructType::get(builder.getContext(), {builder.getInt64Ty(), pointer, pointer, pointer,
                                                              pointer, builder.getInt64Ty()});
    auto field = [&](unsigned index, llvm::Type *fieldType, const char *name) {
      return builder.CreateLoad(fieldType, builder.CreateStructGEP(type, args, index), name);
    };
    KernelOperands operands;
    operands.rank = field(0, builder.getInt64Ty(), "rank");
    operands.shape = field(1, pointer, "shape");
    operands.inputs = loadInputPointers(field(2, pointer, "inputs"));
    operands.strides = field(3, pointer, "strides");
    operands.output = field(4, pointer, "output");
    if (spec.body->reduction) operands.reducedRank = field(5, builder.getInt64Ty(), "reduced.rank");
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
      hostPlaneLoop(operands, begin, end);
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

  /// The innermost axis, where the strided loops walk rows: when `present`, its size, each input's stride
  /// along it and its index; otherwise size 1, strides 0 and index `rank`. Continues in a new block `next`.
  struct InnerAxis {
    Value *size;
    std::vector<Value *> strides;
    Value *index;
  };
  InnerAxis innerAxis(const KernelOperands &operands, Value *present, const char *next) {
    llvm::Type *i64 = builder.getInt64Ty();
    BasicBlock *before = builder.GetInsertBlock(), *lastAxis = block("last.axis"), *after = block(next);
    builder.CreateCondBr(present, lastAxis, after);
    builder.SetInsertPoint(lastAxis);
    Value *last = builder.CreateSub(operands.rank, builder.getInt64(1));
    Value *lastSize = loadInt64(operands.shape, last);
    std::vector<Value *> lastStrides;
    for (size_t k = 0; k < operands.inputs.size(); ++k)
      lastStrides.push_back(inputStride(operands, k, last));
    builder.CreateBr(after);
    builder.SetInsertPoint(after);
    auto phi = [&](Value *absent, Value *value, const char *name) {
      llvm::PHINode *node = builder.CreatePHI(i64, 2, name);
      node->addIncoming(absent, before);
      node->addIncoming(value, lastAxis);
      return node;
    };
    InnerAxis axis{
        phi(builder.getInt64(1), lastSize, "inner.size"), {}, phi(operands.rank, last, "inner.axis")};
    for (Value *stride : lastStrides)
      axis.strides.push_back(phi(builder.getInt64(0), stride, "inner.stride"));
    return axis;
  }

  /// The inner axis's strides, those the kernel is specialized for as constants (KernelSpec::innerStrides).
  std::vector<Value *> specializedStrides(std::vector<Value *> strides) {
    for (size_t k = 0; k < spec.innerStrides.size(); ++k)
      if (spec.innerStrides[k] != InnerStride::Any)
        strides[k] = builder.getInt64(spec.innerStrides[k] == InnerStride::Unit ? 1 : 0);
    return strides;
  }

protected:
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
      values.push_back(
          loadElement(builder, spec.body->inputDtypes[k], operands.inputs[k], offsets[k], inputScope));
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
    storeElement(builder, spec.body->resultDtype(), operands.output, outputIndex, result.value, inputScope);
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
    element(operands, offsets, builder.CreateAdd(outputBase, t), [&](Value *code) { returnError(code); });
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

  llvm::Function &function;
  const KernelSpec &spec;
  MathTarget target;
  llvm::IRBuilder<> builder;
  llvm::MDNode *inputScope; // what the element loads read, which the output store never writes
};

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

  /// The value an empty reduction gives: combine(identity, x) == x.
  Value *identity() {
    bool isFloat = type->isFloatingPointTy();
    switch (kind) {
    case ir::OpKind::Prod:
      return isFloat ? llvm::ConstantFP::get(type, 1.0) : llvm::ConstantInt::get(type, 1);
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
    case ir::OpKind::Any:
      return b.getFalse();
    case ir::OpKind::All:
      return b.getTrue();
    default: // sum, mean
      return llvm::Constant::getNullValue(type);
    }
  }

  /// A program value (registerType(input)) as an accumulator.
  Value *lift(Value *value) {
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
  Value *combine(Value *x, Value *y) {
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
  /// double, then everything converts to the output dtype as castScalar does.
  Value *finish(Value *accumulated, Value *count) {
    if (kind == ir::OpKind::Mean) accumulated = b.CreateFDiv(accumulated, b.CreateSIToFP(count, type));
    llvm::Type *result = registerType(b.getContext(), output);
    if (accumulated->getType() == result) return accumulated;
    return b.CreateFPCast(accumulated, result); // sums, products and means of f32
  }

  ir::DType outputDtype() const { return output; }

private:
  Value *reassociable(Value *value) {
    if (auto *instruction = llvm::dyn_cast<llvm::Instruction>(value)) instruction->setHasAllowReassoc(true);
    return value;
  }

  llvm::IRBuilder<> &b;
  ir::OpKind kind;
  ir::DType input, output;
};

/// Emits a reduction kernel's body (pictures in KernelBuilder.h): the loops over outputs and reduced
/// elements, and for the devices the block's combine.
class ReductionEmitter : public LoopEmitter {
public:
  ReductionEmitter(llvm::Function &function, const KernelSpec &spec, MathTarget target)
      : LoopEmitter(function, spec, target), accumulator(b(), *spec.body) {}

  /// Host: outputs [begin, end), each the reduction of its sub-space, walked row by row (the innermost
  /// reduced axis is the loop LLVM vectorizes).
  void hostLoops(const KernelOperands &operands, Value *begin, Value *end) {
    llvm::IRBuilder<> &b = this->b();
    Value *keptRank = b.CreateSub(operands.rank, operands.reducedRank, "kept.rank");
    Value *reducedCount = product(operands, keptRank, operands.rank);
    auto onError = [&](Value *code) { b.CreateRet(code); };
    if (spec.layout == Layout::Contiguous) {
      forLoop(begin, end, b.getInt64(1), [&](Value *outputIndex) {
        Value *base = b.CreateMul(outputIndex, reducedCount, "row.base");
        llvm::AllocaInst *sum = local(accumulator.type, accumulator.identity(), "accumulator");
        forLoop(b.getInt64(0), reducedCount, b.getInt64(1), [&](Value *r) {
          Value *offset = b.CreateAdd(base, r);
          accumulate(sum, operands, std::vector<Value *>(operands.inputs.size(), offset), onError);
        });
        store(operands, outputIndex, load(sum), reducedCount);
      });
      b.CreateRet(b.getInt32(kKernelOk));
      return;
    }
    // The innermost reduced axis (size 1, strides 0 when no axis is reduced); rows are the axes before it.
    size_t numInputs = operands.inputs.size();
    InnerAxis inner = innerAxis(operands, b.CreateICmpSGT(operands.reducedRank, b.getInt64(0)), "rows");
    Value *innerSize = inner.size, *rowAxesEnd = inner.index;
    std::vector<Value *> innerStrides = specializedStrides(inner.strides);
    Value *rowCount = b.CreateSelect(
        b.CreateICmpEQ(innerSize, b.getInt64(0)), b.getInt64(0),
        b.CreateUDiv(reducedCount, b.CreateBinaryIntrinsic(llvm::Intrinsic::umax, innerSize, b.getInt64(1))),
        "row.count");
    std::vector<Value *> zeros(numInputs, b.getInt64(0));
    forLoop(begin, end, b.getInt64(1), [&](Value *outputIndex) {
      std::vector<Value *> kept = unravel(operands, outputIndex, b.getInt64(0), keptRank, zeros);
      llvm::AllocaInst *sum = local(accumulator.type, accumulator.identity(), "accumulator");
      forLoop(b.getInt64(0), rowCount, b.getInt64(1), [&](Value *row) {
        std::vector<Value *> bases = unravel(operands, row, keptRank, rowAxesEnd, kept);
        forLoop(b.getInt64(0), innerSize, b.getInt64(1), [&](Value *t) {
          std::vector<Value *> offsets;
          for (size_t k = 0; k < numInputs; ++k)
            offsets.push_back(b.CreateAdd(bases[k], b.CreateMul(t, innerStrides[k])));
          accumulate(sum, operands, offsets, onError);
        });
      });
      store(operands, outputIndex, load(sum), reducedCount);
    });
    b.CreateRet(b.getInt32(kKernelOk));
  }

  /// Simulated device: block `blockIndex` of the PTX kernel's algorithm with its threads run one after
  /// another: each thread's partial goes to a per-block buffer, and the shuffle levels become loops over it.
  void simulatedBlock(const KernelOperands &operands, Value *count, Value *blockIndex, Value *blockSize,
                      Value *gridSize) {
    llvm::IRBuilder<> &b = this->b();
    llvm::AllocaInst *errorFlag = local(b.getInt32Ty(), b.getInt32(kKernelOk), "error.flag");
    llvm::AllocaInst *buffer;
    {
      BasicBlock &entry = function.getEntryBlock();
      llvm::IRBuilder<> atEntry(&entry, entry.begin());
      buffer = atEntry.CreateAlloca(accumulator.type, blockSize, "partials");
    }
    Value *keptRank = b.CreateSub(operands.rank, operands.reducedRank, "kept.rank");
    Value *reducedCount = product(operands, keptRank, operands.rank);
    auto slot = [&](Value *index) { return b.CreateInBoundsGEP(accumulator.type, buffer, index); };
    forLoop(blockIndex, count, gridSize, [&](Value *outputIndex) {
      std::vector<Value *> kept = keptOffsets(operands, outputIndex, keptRank);
      forLoop(b.getInt64(0), blockSize, b.getInt64(1), [&](Value *thread) {
        Value *partial = threadPartial(operands, outputIndex, kept, keptRank, reducedCount, thread, blockSize,
                                       [&](Value *code) { b.CreateStore(code, errorFlag); });
        b.CreateStore(partial, slot(thread));
      });
      simulatedShuffleLevels(buffer, blockSize);
      // Lane 0 of each warp to slot `warp` (the PTX kernel's shared memory), the rest of the first warp's
      // slots the identity; then the first warp's levels again.
      Value *warps = b.CreateLShr(blockSize, b.getInt64(5), "warps");
      forLoop(b.getInt64(0), warps, b.getInt64(1), [&](Value *warp) {
        b.CreateStore(b.CreateLoad(accumulator.type, slot(b.CreateShl(warp, b.getInt64(5)))), slot(warp));
      });
      forLoop(warps, b.getInt64(32), b.getInt64(1),
              [&](Value *warp) { b.CreateStore(accumulator.identity(), slot(warp)); });
      simulatedShuffleLevels(buffer, b.getInt64(32));
      store(operands, outputIndex, b.CreateLoad(accumulator.type, slot(b.getInt64(0))), reducedCount);
    });
    b.CreateRet(b.CreateLoad(b.getInt32Ty(), errorFlag));
  }

  /// NVPTX: blocks over outputs, threads over reduced elements, then warp shuffles and shared memory.
  void ptxBlocks(const KernelOperands &operands, Value *count, Value *errorFlag) {
    llvm::IRBuilder<> &b = this->b();
    llvm::Module &module = *function.getParent();
    llvm::Type *i64 = b.getInt64Ty();
    // Shared memory holds one partial per warp; bools as bytes.
    llvm::Type *slotType = accumulator.type->isIntegerTy(1) ? b.getInt8Ty() : accumulator.type;
    auto *sharedType = llvm::ArrayType::get(slotType, 32);
    auto *shared = new llvm::GlobalVariable(
        module, sharedType, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(sharedType),
        function.getName() + "_partials", nullptr, llvm::GlobalValue::NotThreadLocal, kSharedAddressSpace);
    shared->setAlignment(llvm::Align(8));
    auto special = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), i64); };
    Value *thread = special(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value *blockSize = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
    Value *blockIndex = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    Value *gridSize = special(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
    Value *lane = b.CreateAnd(thread, b.getInt64(31), "lane");
    Value *warp = b.CreateLShr(thread, b.getInt64(5), "warp");
    Value *warps = b.CreateLShr(blockSize, b.getInt64(5), "warps");
    Value *keptRank = b.CreateSub(operands.rank, operands.reducedRank, "kept.rank");
    Value *reducedCount = product(operands, keptRank, operands.rank);
    auto sharedSlot = [&](Value *index) {
      return b.CreateInBoundsGEP(sharedType, shared, {b.getInt64(0), index});
    };
    auto toSlot = [&](Value *value) {
      return slotType == accumulator.type ? value : b.CreateZExt(value, slotType);
    };
    auto fromSlot = [&](Value *value) {
      return slotType == accumulator.type ? value : b.CreateICmpNE(value, b.getInt8(0));
    };
    forLoop(blockIndex, count, gridSize, [&](Value *outputIndex) {
      std::vector<Value *> kept = keptOffsets(operands, outputIndex, keptRank);
      Value *partial = threadPartial(operands, outputIndex, kept, keptRank, reducedCount, thread, blockSize,
                                     [&](Value *code) { b.CreateStore(code, errorFlag); });
      partial = shuffleLevels(partial);
      ifThen(b.CreateICmpEQ(lane, b.getInt64(0)), [&] { b.CreateStore(toSlot(partial), sharedSlot(warp)); });
      b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
      ifThen(b.CreateICmpEQ(warp, b.getInt64(0)), [&] {
        Value *mine = fromSlot(b.CreateLoad(slotType, sharedSlot(lane)));
        Value *total =
            shuffleLevels(b.CreateSelect(b.CreateICmpULT(lane, warps), mine, accumulator.identity()));
        ifThen(b.CreateICmpEQ(lane, b.getInt64(0)),
               [&] { store(operands, outputIndex, total, reducedCount); });
      });
      // The next output reuses the shared slots.
      b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
    });
    b.CreateRetVoid();
  }

private:
  /// NVPTX's address space of shared (per-block) memory.
  static constexpr unsigned kSharedAddressSpace = 3;

  /// for (i = start; i < end; i += step) body(i), the index a phi; body may leave the builder in another
  /// block.
  void forLoop(Value *start, Value *end, Value *step, const std::function<void(Value *)> &body) {
    llvm::IRBuilder<> &b = this->b();
    BasicBlock *loop = block("loop"), *exit = block("loop.exit");
    BasicBlock *preheader = b.GetInsertBlock();
    b.CreateCondBr(b.CreateICmpSLT(start, end), loop, exit);
    b.SetInsertPoint(loop);
    llvm::PHINode *index = b.CreatePHI(b.getInt64Ty(), 2, "i");
    index->addIncoming(start, preheader);
    body(index);
    Value *next = b.CreateAdd(index, step, "i.next", /*HasNUW=*/true, /*HasNSW=*/true);
    index->addIncoming(next, b.GetInsertBlock());
    b.CreateCondBr(b.CreateICmpSLT(next, end), loop, exit);
    b.SetInsertPoint(exit);
  }

  void ifThen(Value *condition, const std::function<void()> &body) {
    llvm::IRBuilder<> &b = this->b();
    BasicBlock *then = block("then"), *done = block("then.done");
    b.CreateCondBr(condition, then, done);
    b.SetInsertPoint(then);
    body();
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }

  /// shape[from] * ... * shape[to - 1].
  Value *product(const KernelOperands &operands, Value *from, Value *to) {
    llvm::IRBuilder<> &b = this->b();
    llvm::AllocaInst *result = local(b.getInt64Ty(), b.getInt64(1), "product");
    forLoop(from, to, b.getInt64(1), [&](Value *axis) {
      b.CreateStore(b.CreateMul(load(result), loadInt64(operands.shape, axis)), result);
    });
    return load(result);
  }

  /// start[k] plus the offset in input k of multi-index unravel(linear) over axes [from, to).
  std::vector<Value *> unravel(const KernelOperands &operands, Value *linear, Value *from, Value *to,
                               const std::vector<Value *> &start) {
    llvm::IRBuilder<> &b = this->b();
    std::vector<llvm::AllocaInst *> offsets;
    for (Value *value : start)
      offsets.push_back(local(b.getInt64Ty(), value, "offset"));
    llvm::AllocaInst *remaining = local(b.getInt64Ty(), linear, "remaining");
    llvm::AllocaInst *axis = local(b.getInt64Ty(), b.CreateSub(to, b.getInt64(1)), "axis");
    BasicBlock *test = block("unravel.test"), *divide = block("unravel.axis"), *done = block("unravel.done");
    b.CreateBr(test);
    b.SetInsertPoint(test);
    Value *j = load(axis);
    b.CreateCondBr(b.CreateICmpSGE(j, from), divide, done);
    b.SetInsertPoint(divide);
    Value *size = loadInt64(operands.shape, j);
    Value *rest = load(remaining);
    Value *coordinate = b.CreateURem(rest, size);
    b.CreateStore(b.CreateUDiv(rest, size), remaining);
    for (size_t k = 0; k < offsets.size(); ++k)
      b.CreateStore(b.CreateAdd(load(offsets[k]), b.CreateMul(coordinate, inputStride(operands, k, j))),
                    offsets[k]);
    b.CreateStore(b.CreateSub(j, b.getInt64(1)), axis);
    b.CreateBr(test);
    b.SetInsertPoint(done);
    std::vector<Value *> values;
    for (llvm::AllocaInst *offset : offsets)
      values.push_back(load(offset));
    return values;
  }

  /// Strided: each input's offset of output element `outputIndex`'s sub-space; Contiguous: nothing.
  std::vector<Value *> keptOffsets(const KernelOperands &operands, Value *outputIndex, Value *keptRank) {
    if (spec.layout == Layout::Contiguous) return {};
    std::vector<Value *> zeros(operands.inputs.size(), b().getInt64(0));
    return unravel(operands, outputIndex, b().getInt64(0), keptRank, zeros);
  }

  /// One device thread's partial of output `outputIndex`: reduced elements thread, thread + threads, ...
  Value *threadPartial(const KernelOperands &operands, Value *outputIndex, const std::vector<Value *> &kept,
                       Value *keptRank, Value *reducedCount, Value *thread, Value *threads,
                       const std::function<void(Value *)> &onError) {
    llvm::IRBuilder<> &b = this->b();
    llvm::AllocaInst *sum = local(accumulator.type, accumulator.identity(), "partial");
    forLoop(thread, reducedCount, threads, [&](Value *r) {
      std::vector<Value *> offsets =
          spec.layout == Layout::Contiguous
              ? std::vector<Value *>(operands.inputs.size(),
                                     b.CreateAdd(b.CreateMul(outputIndex, reducedCount), r))
              : unravel(operands, r, keptRank, operands.rank, kept);
      accumulate(sum, operands, offsets, onError);
    });
    return load(sum);
  }

  /// sum = combine(sum, lift(program at offsets)). When the program can fail, onError runs with the code in a
  /// block of its own; unless it returns, the accumulation follows.
  void accumulate(llvm::AllocaInst *sum, const KernelOperands &operands, const std::vector<Value *> &offsets,
                  const std::function<void(Value *)> &onError) {
    llvm::IRBuilder<> &b = this->b();
    std::vector<Value *> values;
    for (size_t k = 0; k < operands.inputs.size(); ++k)
      values.push_back(loadElement(b, spec.body->inputDtypes[k], operands.inputs[k], offsets[k], inputScope));
    ScalarResult result = emitScalarBody(b, *spec.body, values, target);
    if (result.errorCode) {
      BasicBlock *failed = block("element.failed"), *next = block("element.next");
      b.CreateCondBr(b.CreateICmpNE(result.errorCode, b.getInt32(kKernelOk)), failed, next);
      b.SetInsertPoint(failed);
      onError(result.errorCode);
      if (!b.GetInsertBlock()->getTerminator()) b.CreateBr(next);
      b.SetInsertPoint(next);
    }
    b.CreateStore(accumulator.combine(load(sum), accumulator.lift(result.value)), sum);
  }

  void store(const KernelOperands &operands, Value *outputIndex, Value *accumulated, Value *reducedCount) {
    storeElement(b(), accumulator.outputDtype(), operands.output, outputIndex,
                 accumulator.finish(accumulated, reducedCount), inputScope);
  }

  /// The shuffle-down levels 16, 8, 4, 2, 1 over buffer[0 .. size) (size a multiple of 32): lane l of each
  /// warp combines lane l + offset's value where that lane exists. In increasing order, buffer[t + offset] is
  /// still the level's old value when buffer[t] reads it, as a shuffle would read it.
  void simulatedShuffleLevels(llvm::AllocaInst *buffer, Value *size) {
    llvm::IRBuilder<> &b = this->b();
    for (int64_t offset = 16; offset > 0; offset /= 2)
      forLoop(b.getInt64(0), size, b.getInt64(1), [&](Value *t) {
        Value *lane = b.CreateAnd(t, b.getInt64(31));
        ifThen(b.CreateICmpULT(b.CreateAdd(lane, b.getInt64(offset)), b.getInt64(32)), [&] {
          Value *mine = b.CreateInBoundsGEP(accumulator.type, buffer, t);
          Value *other = b.CreateInBoundsGEP(accumulator.type, buffer, b.CreateAdd(t, b.getInt64(offset)));
          b.CreateStore(accumulator.combine(b.CreateLoad(accumulator.type, mine),
                                            b.CreateLoad(accumulator.type, other)),
                        mine);
        });
      });
  }

  /// The warp's tree combine: lane 0 ends with the combination of all 32 lanes' values.
  Value *shuffleLevels(Value *value) {
    for (int64_t offset = 16; offset > 0; offset /= 2)
      value = accumulator.combine(value, shuffleDown(value, offset));
    return value;
  }

  /// shfl.sync.down over the full warp; 64-bit values as two 32-bit halves, i1 as an i32.
  Value *shuffleDown(Value *value, int64_t offset) {
    llvm::IRBuilder<> &b = this->b();
    auto shuffle32 = [&](Value *word) {
      llvm::Intrinsic::ID id = word->getType()->isFloatTy() ? llvm::Intrinsic::nvvm_shfl_sync_down_f32
                                                            : llvm::Intrinsic::nvvm_shfl_sync_down_i32;
      return b.CreateIntrinsic(
          id, {}, {b.getInt32(-1), word, b.getInt32(static_cast<uint32_t>(offset)), b.getInt32(31)});
    };
    llvm::Type *type = value->getType();
    if (type->isIntegerTy(1)) return b.CreateTrunc(shuffle32(b.CreateZExt(value, b.getInt32Ty())), type);
    if (type->isFloatTy() || type->isIntegerTy(32)) return shuffle32(value);
    Value *bits = b.CreateBitCast(value, b.getInt64Ty());
    Value *low = shuffle32(b.CreateTrunc(bits, b.getInt32Ty()));
    Value *high = shuffle32(b.CreateTrunc(b.CreateLShr(bits, b.getInt64(32)), b.getInt32Ty()));
    Value *joined = b.CreateOr(b.CreateZExt(low, b.getInt64Ty()),
                               b.CreateShl(b.CreateZExt(high, b.getInt64Ty()), b.getInt64(32)));
    return b.CreateBitCast(joined, type);
  }

  Accumulator accumulator;
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
            (spec.layout == Layout::Strided && spec.innerStrides.size() == spec.body->numInputs()))
      << "inner strides are for host Strided kernels, one per input";
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::Function *function =
      declareKernel(module, name, llvm::Type::getInt32Ty(context),
                    {llvm::PointerType::getUnqual(context), i64, i64}, {"args", "begin", "end"});
  if (spec.body->reduction) {
    ReductionEmitter emitter(*function, spec, MathTarget::Host);
    KernelOperands operands = emitter.loadKernelArgs(function->getArg(0));
    emitter.hostLoops(operands, function->getArg(1), function->getArg(2));
    return function;
  }
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
  if (spec.body->reduction) {
    ReductionEmitter emitter(*function, spec, MathTarget::Host);
    KernelOperands operands = emitter.loadKernelArgs(function->getArg(0));
    emitter.simulatedBlock(operands, function->getArg(1), function->getArg(2), function->getArg(3),
                           function->getArg(4));
    return function;
  }
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
  bool isReduction = spec.body->reduction.has_value();
  std::vector<llvm::Type *> parameters{i64, i64, pointer, pointer, pointer, pointer, pointer};
  std::vector<const char *> names{"count", "rank", "shape", "inputs", "strides", "output", "errorFlag"};
  if (isReduction) {
    parameters.push_back(i64);
    names.push_back("reducedRank");
  }
  llvm::Function *function = declareKernel(module, name, llvm::Type::getVoidTy(context), parameters, names);
  function->setCallingConv(llvm::CallingConv::PTX_Kernel);
  ReductionEmitter *reduction = nullptr;
  std::optional<ReductionEmitter> reductionEmitter;
  std::optional<LoopEmitter> loopEmitter;
  if (isReduction)
    reduction = &reductionEmitter.emplace(*function, spec, MathTarget::Nvptx);
  else
    loopEmitter.emplace(*function, spec, MathTarget::Nvptx);
  LoopEmitter &emitter = reduction ? *reduction : *loopEmitter;
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
  if (reduction) {
    operands.reducedRank = function->getArg(7);
    reduction->ptxBlocks(operands, function->getArg(0), function->getArg(6));
    return function;
  }

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

using llvm::ElementCount; // for VecFuncs.def's FIXED

/// LLVM's table of libmvec's variants (SSE and AVX2 ones of the common math functions).
const llvm::VecDesc kLlvmLibmvecFunctions[] = {
#define TLI_DEFINE_LIBMVEC_X86_VECFUNCS
#include <llvm/Analysis/VecFuncs.def>
#undef TLI_DEFINE_LIBMVEC_X86_VECFUNCS
};

/// The variants LLVM 19's table lacks, for the math functions of tgc's ops: SSE and AVX2 ones of those glibc
/// 2.35 added, and AVX-512 ones of all.
struct Variant {
  const char *scalar, *vector;
  unsigned lanes;
  const char *abi;
};
const Variant kMoreLibmvecFunctions[] = {
    {"tanhf", "_ZGVbN4v_tanhf", 4, "_ZGV_LLVM_N4v"},
    {"tanhf", "_ZGVdN8v_tanhf", 8, "_ZGV_LLVM_N8v"},
    {"tanh", "_ZGVbN2v_tanh", 2, "_ZGV_LLVM_N2v"},
    {"tanh", "_ZGVdN4v_tanh", 4, "_ZGV_LLVM_N4v"},
    {"log1pf", "_ZGVbN4v_log1pf", 4, "_ZGV_LLVM_N4v"},
    {"log1pf", "_ZGVdN8v_log1pf", 8, "_ZGV_LLVM_N8v"},
    {"log1p", "_ZGVbN2v_log1p", 2, "_ZGV_LLVM_N2v"},
    {"log1p", "_ZGVdN4v_log1p", 4, "_ZGV_LLVM_N4v"},
    {"expm1f", "_ZGVbN4v_expm1f", 4, "_ZGV_LLVM_N4v"},
    {"expm1f", "_ZGVdN8v_expm1f", 8, "_ZGV_LLVM_N8v"},
    {"expm1", "_ZGVbN2v_expm1", 2, "_ZGV_LLVM_N2v"},
    {"expm1", "_ZGVdN4v_expm1", 4, "_ZGV_LLVM_N4v"},
    {"erff", "_ZGVbN4v_erff", 4, "_ZGV_LLVM_N4v"},
    {"erff", "_ZGVdN8v_erff", 8, "_ZGV_LLVM_N8v"},
    {"erf", "_ZGVbN2v_erf", 2, "_ZGV_LLVM_N2v"},
    {"erf", "_ZGVdN4v_erf", 4, "_ZGV_LLVM_N4v"},
    {"tanhf", "_ZGVeN16v_tanhf", 16, "_ZGV_LLVM_N16v"},
    {"tanh", "_ZGVeN8v_tanh", 8, "_ZGV_LLVM_N8v"},
    {"log1pf", "_ZGVeN16v_log1pf", 16, "_ZGV_LLVM_N16v"},
    {"log1p", "_ZGVeN8v_log1p", 8, "_ZGV_LLVM_N8v"},
    {"expm1f", "_ZGVeN16v_expm1f", 16, "_ZGV_LLVM_N16v"},
    {"expm1", "_ZGVeN8v_expm1", 8, "_ZGV_LLVM_N8v"},
    {"erff", "_ZGVeN16v_erff", 16, "_ZGV_LLVM_N16v"},
    {"erf", "_ZGVeN8v_erf", 8, "_ZGV_LLVM_N8v"},
    {"expf", "_ZGVeN16v_expf", 16, "_ZGV_LLVM_N16v"},
    {"exp", "_ZGVeN8v_exp", 8, "_ZGV_LLVM_N8v"},
    {"llvm.exp.f32", "_ZGVeN16v_expf", 16, "_ZGV_LLVM_N16v"},
    {"llvm.exp.f64", "_ZGVeN8v_exp", 8, "_ZGV_LLVM_N8v"},
    {"logf", "_ZGVeN16v_logf", 16, "_ZGV_LLVM_N16v"},
    {"log", "_ZGVeN8v_log", 8, "_ZGV_LLVM_N8v"},
    {"llvm.log.f32", "_ZGVeN16v_logf", 16, "_ZGV_LLVM_N16v"},
    {"llvm.log.f64", "_ZGVeN8v_log", 8, "_ZGV_LLVM_N8v"},
    {"sinf", "_ZGVeN16v_sinf", 16, "_ZGV_LLVM_N16v"},
    {"sin", "_ZGVeN8v_sin", 8, "_ZGV_LLVM_N8v"},
    {"llvm.sin.f32", "_ZGVeN16v_sinf", 16, "_ZGV_LLVM_N16v"},
    {"llvm.sin.f64", "_ZGVeN8v_sin", 8, "_ZGV_LLVM_N8v"},
    {"cosf", "_ZGVeN16v_cosf", 16, "_ZGV_LLVM_N16v"},
    {"cos", "_ZGVeN8v_cos", 8, "_ZGV_LLVM_N8v"},
    {"llvm.cos.f32", "_ZGVeN16v_cosf", 16, "_ZGV_LLVM_N16v"},
    {"llvm.cos.f64", "_ZGVeN8v_cos", 8, "_ZGV_LLVM_N8v"},
    {"powf", "_ZGVeN16vv_powf", 16, "_ZGV_LLVM_N16vv"},
    {"pow", "_ZGVeN8vv_pow", 8, "_ZGV_LLVM_N8vv"},
    {"llvm.pow.f32", "_ZGVeN16vv_powf", 16, "_ZGV_LLVM_N16vv"},
    {"llvm.pow.f64", "_ZGVeN8vv_pow", 8, "_ZGV_LLVM_N8vv"},
};

/// The instruction set a libmvec variant is for, from its name's ISA letter ("_ZGVdN8v_expf": AVX2).
VectorMath variantIsa(llvm::StringRef vectorName) {
  char isa = vectorName.size() > 4 ? vectorName[4] : '?';
  return isa == 'b' ? VectorMath::Sse : isa == 'd' ? VectorMath::Avx2 : VectorMath::Avx512;
}

/// The libmvec variants host kernels may call with `allowed`: those of LLVM's table and tgc's that need no
/// more than that instruction set and that the installed libmvec exports (a kernel must never call a symbol
/// the JIT cannot find).
const std::vector<llvm::VecDesc> &libmvecFunctions(VectorMath allowed) {
  static const std::vector<llvm::VecDesc> exported = [] {
    std::vector<llvm::VecDesc> found;
    void *library = dlopen("libmvec.so.1", RTLD_LAZY);
    if (!library) return found;
    for (const llvm::VecDesc &function : kLlvmLibmvecFunctions)
      if (dlsym(library, function.getVectorFnName().str().c_str())) found.push_back(function);
    for (const Variant &variant : kMoreLibmvecFunctions)
      if (dlsym(library, variant.vector))
        found.emplace_back(variant.scalar, variant.vector, llvm::ElementCount::getFixed(variant.lanes), false,
                           variant.abi);
    return found; // the library stays loaded: the JIT links kernels against it
  }();
  static std::vector<llvm::VecDesc> byIsa[4];
  static std::once_flag split;
  std::call_once(split, [] {
    for (int isa = 0; isa < 4; ++isa)
      for (const llvm::VecDesc &function : exported)
        if (variantIsa(function.getVectorFnName()) <= static_cast<VectorMath>(isa))
          byIsa[isa].push_back(function);
  });
  return byIsa[static_cast<int>(allowed)];
}

} // namespace

/// The host kernels' passes (optimizeModule): inferattrs marks libm's functions as pure and
/// inject-tli-mappings names their vector variants on each call, without which the vectorizer keeps a loop
/// that calls tanhf scalar. The loops the vectorizer takes are built bottom-tested over one induction
/// variable, so loop-rotate and indvars are not needed; on the row walk of a strided kernel they rotated and
/// rewrote the outer loops, a fifth of its compile, for the same vector loop.
constexpr const char *kHostKernelPipeline =
    "inferattrs,function("
    "sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,"
    "loop-mssa(licm),"
    "inject-tli-mappings,loop-vectorize,"
    "instcombine<no-verify-fixpoint>,simplifycfg)";

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine, VectorMath vectorMath) {
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
  if (vectorMath != VectorMath::None) libraryInfo.addVectorizableFunctions(libmvecFunctions(vectorMath));
  // Registered before the defaults, so that it replaces theirs.
  functionAnalyses.registerPass([&] { return llvm::TargetLibraryAnalysis(libraryInfo); });
  passes.registerModuleAnalyses(moduleAnalyses);
  passes.registerCGSCCAnalyses(sccAnalyses);
  passes.registerFunctionAnalyses(functionAnalyses);
  passes.registerLoopAnalyses(loopAnalyses);
  passes.crossRegisterProxies(loopAnalyses, functionAnalyses, sccAnalyses, moduleAnalyses);
  if (triple.isNVPTX()) {
    passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, moduleAnalyses);
    return;
  }
  static std::once_flag hostOptions;
  std::call_once(hostOptions, [] {
    // A vectorized epilogue for the last few elements (under one vector times the interleave) doubles the
    // machine code of each loop and its compile time; the scalar remainder loop does that work instead.
    auto &options = llvm::cl::getRegisteredOptions();
    if (auto found = options.find("enable-epilogue-vectorization"); found != options.end())
      found->second->addOccurrence(0, "enable-epilogue-vectorization", "false");
  });
  llvm::ModulePassManager pipeline;
  llvm::Error error = passes.parsePassPipeline(pipeline, kHostKernelPipeline);
  TG_ASSERT(!error) << "bad host kernel pipeline: " << llvm::toString(std::move(error));
  pipeline.run(module, moduleAnalyses);
}

} // namespace tg::codegen
