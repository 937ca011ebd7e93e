// ReductionBuilder: the bodies of reduction kernels (a ScalarGraph with `reduction` set), for each target:
// the schedules, loops over outputs and reduced elements around the scalar body (ReductionEmitter), of what
// each reduction computes (codegen/Accumulator.h). KernelBuilder.cpp declares the functions (signatures in
// KernelBuilder.h) and calls the emit*Reduction functions at the end of this file to fill them.
//
// Host: for each output o in [begin, end), acc = identity, then the reduced sub-space row by row (Contiguous:
// one flat loop over inputs[k][o * R + r]), acc = combine(acc, program), then output[o] = finish(acc). The
// innermost loop is a plain reduction LLVM vectorizes (partial accumulators; float sums and products are
// marked reassociable). Devices, one block per output:
//
//   block b: o = b, b + gridDim, ...         R = reduced elements of o
//     thread t:  p_t = combine over r = t, t + blockDim, ... < R of program(o, r)
//     warp w:    shuffle-down levels 16, 8, 4, 2, 1: lane l += lane l + offset     -> lane 0 holds warp w's
//     shared[w] = lane 0's value; barrier                                          (blockDim % 32 == 0)
//     warp 0:    v = shared[lane] (identity past the last warp); the same 5 levels -> lane 0 stores finish(v)
//     barrier (shared[] is reused by the next output)
//
//   simulated device, threads run one after another:
//     partials[t] = p_t                     for t = 0 .. blockDim-1
//     for offset = 16, 8, 4, 2, 1:          for t in increasing order, where (t % 32) + offset < 32:
//       partials[t] = combine(partials[t], partials[t + offset])   (partials[t + offset] is still this
//                                                                     level's old value: a shuffle's read)
//     partials[w] = partials[32 w] for each warp w, identity up to 32; the 5 levels again over
//     partials[0..32)
//
// so both devices combine the same values in the same tree order.
#include "codegen/Accumulator.h"
#include "codegen/KernelBuilder.h"
#include "codegen/LoopEmitter.h"
#include "codegen/ScalarEmitter.h"
#include "ir/Assert.h"

#include <cstdint>
#include <functional>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>
#include <vector>

namespace tg::codegen {

using llvm::BasicBlock;
using llvm::Value;

namespace {

/// Emits a reduction kernel's body (pictures above): the loops over outputs and reduced
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
    // The elements' error codes, the largest kept and returned at the end: no exit from the loops, which
    // therefore vectorize (a failing element has a value all the same: ScalarEmitter.h).
    hostError = local(b.getInt32Ty(), b.getInt32(kKernelOk), "error");
    auto onError = [&](Value *code) { noteError(code); };
    if (spec.layout == Layout::Contiguous) {
      forLoop(begin, end, b.getInt64(1), [&](Value *outputIndex) {
        Value *base = b.CreateMul(outputIndex, reducedCount, "row.base");
        llvm::AllocaInst *sum = local(accumulator.type, accumulator.identity(), "accumulator");
        forLoop(b.getInt64(0), reducedCount, b.getInt64(1), [&](Value *r) {
          Value *offset = b.CreateAdd(base, r);
          accumulate(sum, operands, std::vector<Value *>(operands.inputs.size(), offset), onError, true);
        });
        store(operands, outputIndex, load(sum), reducedCount);
      });
      b.CreateRet(load(hostError));
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
    if (spec.blockedOutputs) {
      blockedHostLoops(operands, begin, end, keptRank, rowCount, rowAxesEnd, innerSize, innerStrides);
      return;
    }
    forLoop(begin, end, b.getInt64(1), [&](Value *outputIndex) {
      std::vector<Value *> kept = unravel(operands, outputIndex, b.getInt64(0), keptRank, zeros);
      llvm::AllocaInst *sum = local(accumulator.type, accumulator.identity(), "accumulator");
      forLoop(b.getInt64(0), rowCount, b.getInt64(1), [&](Value *row) {
        std::vector<Value *> bases = unravel(operands, row, keptRank, rowAxesEnd, kept);
        forLoop(b.getInt64(0), innerSize, b.getInt64(1), [&](Value *t) {
          std::vector<Value *> offsets;
          for (size_t k = 0; k < numInputs; ++k)
            offsets.push_back(b.CreateAdd(bases[k], b.CreateMul(t, innerStrides[k])));
          accumulate(sum, operands, offsets, onError, true);
        });
      });
      store(operands, outputIndex, load(sum), reducedCount);
    });
    b.CreateRet(load(hostError));
  }

  /// Host: keeps the largest error code of the elements so far.
  void noteError(Value *code) {
    b().CreateStore(b().CreateBinaryIntrinsic(llvm::Intrinsic::umax, load(hostError), code), hostError);
  }

  /// Host, KernelSpec::blockedOutputs (keptRank >= 1): outputs [begin, end) in segments of at most
  /// kOutputBlock consecutive outputs along the last kept axis, each segment's accumulators kept together:
  ///
  ///   for each segment o .. o+n:  acc[0..n) = identity
  ///     for each reduced element (rows, then the inner axis):  for j < n: acc[j] = combine(acc[j], element)
  ///     output[o + j] = finish(acc[j])
  ///
  /// Every output still combines its elements in order; only the loops are swapped, so that the innermost
  /// loop reads neighbouring outputs' elements (adjacent in memory when the reduced axes are the outer ones).
  void blockedHostLoops(const KernelOperands &operands, Value *begin, Value *end, Value *keptRank,
                        Value *rowCount, Value *rowAxesEnd, Value *innerSize,
                        const std::vector<Value *> &innerStrides) {
    llvm::IRBuilder<> &b = this->b();
    size_t numInputs = operands.inputs.size();
    auto onError = [&](Value *code) { noteError(code); };
    llvm::AllocaInst *accumulators;
    {
      BasicBlock &entry = function.getEntryBlock();
      llvm::IRBuilder<> atEntry(&entry, entry.begin());
      accumulators = atEntry.CreateAlloca(accumulator.type, b.getInt64(kOutputBlock), "accumulators");
    }
    auto slot = [&](Value *j) { return b.CreateInBoundsGEP(accumulator.type, accumulators, j); };
    Value *lastKept = b.CreateSub(keptRank, b.getInt64(1), "last.kept");
    Value *lastSize = loadInt64(operands.shape, lastKept);
    std::vector<Value *> lastStrides, zeros(numInputs, b.getInt64(0));
    for (size_t k = 0; k < numInputs; ++k)
      lastStrides.push_back(inputStride(operands, k, lastKept));
    llvm::AllocaInst *next = local(b.getInt64Ty(), begin, "segment.start");
    BasicBlock *test = block("segment.test"), *body = block("segment"), *done = block("segments.done");
    b.CreateBr(test);
    b.SetInsertPoint(test);
    b.CreateCondBr(b.CreateICmpSLT(load(next), end), body, done);
    b.SetInsertPoint(body);
    Value *start = load(next);
    // The segment ends at the block's size, at the end of the kept row, or at `end`.
    Value *toRowEnd = b.CreateSub(lastSize, b.CreateURem(start, lastSize));
    Value *count = b.CreateBinaryIntrinsic(
        llvm::Intrinsic::smin,
        b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, toRowEnd, b.getInt64(kOutputBlock)),
        b.CreateSub(end, start), nullptr, "segment.size");
    std::vector<Value *> kept = unravel(operands, start, b.getInt64(0), keptRank, zeros);
    forLoop(b.getInt64(0), count, b.getInt64(1),
            [&](Value *j) { b.CreateStore(accumulator.identity(), slot(j)); });
    forLoop(b.getInt64(0), rowCount, b.getInt64(1), [&](Value *row) {
      std::vector<Value *> bases = unravel(operands, row, keptRank, rowAxesEnd, kept);
      forLoop(b.getInt64(0), innerSize, b.getInt64(1), [&](Value *t) {
        std::vector<Value *> elementBases;
        for (size_t k = 0; k < numInputs; ++k)
          elementBases.push_back(b.CreateAdd(bases[k], b.CreateMul(t, innerStrides[k])));
        forLoop(b.getInt64(0), count, b.getInt64(1), [&](Value *j) {
          std::vector<Value *> offsets;
          for (size_t k = 0; k < numInputs; ++k)
            offsets.push_back(b.CreateAdd(elementBases[k], b.CreateMul(j, lastStrides[k])));
          accumulate(slot(j), operands, offsets, onError, true);
        });
      });
    });
    Value *reducedCount = product(operands, keptRank, operands.rank);
    forLoop(b.getInt64(0), count, b.getInt64(1), [&](Value *j) {
      store(operands, b.CreateAdd(start, j), b.CreateLoad(accumulator.type, slot(j)), reducedCount);
    });
    b.CreateStore(b.CreateAdd(start, count), next);
    b.CreateBr(test);
    b.SetInsertPoint(done);
    b.CreateRet(load(hostError));
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
      // Each thread's partial as the PTX kernel's thread makes it (elements t, t + blockSize, ... in that
      // order), but a round of all threads at a time: elements base .. base + blockSize - 1, in memory order.
      forLoop(b.getInt64(0), blockSize, b.getInt64(1),
              [&](Value *thread) { b.CreateStore(accumulator.identity(), slot(thread)); });
      forLoop(b.getInt64(0), reducedCount, blockSize, [&](Value *base) {
        Value *end =
            b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(base, blockSize), reducedCount);
        forLoop(base, end, b.getInt64(1), [&](Value *r) {
          accumulate(slot(b.CreateSub(r, base)), operands,
                     elementOffsets(operands, outputIndex, kept, keptRank, reducedCount, r),
                     [&](Value *code) { b.CreateStore(code, errorFlag); });
        });
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
  /// Outputs accumulated together by blockedHostLoops: 64 doubles, 512 bytes of stack, and 64 neighbouring
  /// floats are four cache lines read per reduced element.
  static constexpr int64_t kOutputBlock = 64;

  /// The innermost axis, along which the Strided host loops walk rows: when `present`, its size, each
  /// input's stride along it and its index; otherwise size 1, strides 0 and index `rank`. Continues in a new
  /// block `next`.
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
    llvm::AllocaInst *sum = local(accumulator.type, accumulator.identity(), "partial");
    forLoop(thread, reducedCount, threads, [&](Value *r) {
      accumulate(sum, operands, elementOffsets(operands, outputIndex, kept, keptRank, reducedCount, r),
                 onError);
    });
    return load(sum);
  }

  /// Each array's offset of reduced element `r` of output `outputIndex` (whose offsets keptOffsets gave).
  std::vector<Value *> elementOffsets(const KernelOperands &operands, Value *outputIndex,
                                      const std::vector<Value *> &kept, Value *keptRank, Value *reducedCount,
                                      Value *r) {
    if (spec.layout == Layout::Contiguous)
      return std::vector<Value *>(operands.inputs.size(),
                                  b().CreateAdd(b().CreateMul(outputIndex, reducedCount), r));
    return unravel(operands, r, keptRank, operands.rank, kept);
  }

  /// sum = combine(sum, lift(program at offsets)), and each extra output's value stored at its offset
  /// (offsets: one per array, the inputs' then the extra outputs'). When the program can fail, onError runs
  /// with the code: for every element where `everyElement`, else in a block of its own where the code is
  /// not kKernelOk; unless it returns, the accumulation follows.
  void accumulate(Value *sum, const KernelOperands &operands, const std::vector<Value *> &offsets,
                  const std::function<void(Value *)> &onError, bool everyElement = false) {
    llvm::IRBuilder<> &b = this->b();
    size_t numInputs = spec.body->numInputs();
    ScalarResult result =
        emitScalarBody(b, *spec.body, loadInputs(operands, offsets), target, tableAccess(operands, offsets));
    if (result.errorCode && everyElement) onError(result.errorCode);
    if (result.errorCode && !everyElement) {
      BasicBlock *failed = block("element.failed"), *next = block("element.next");
      b.CreateCondBr(b.CreateICmpNE(result.errorCode, b.getInt32(kKernelOk)), failed, next);
      b.SetInsertPoint(failed);
      onError(result.errorCode);
      if (!b.GetInsertBlock()->getTerminator()) b.CreateBr(next);
      b.SetInsertPoint(next);
    }
    for (size_t j = 0; j < result.extras.size(); ++j)
      storeElement(b, spec.body->arrayDtype(numInputs + j), operands.inputs[numInputs + j],
                   offsets[numInputs + j], result.extras[j], inputScope);
    b.CreateStore(accumulator.combine(b.CreateLoad(accumulator.type, sum), accumulator.lift(result.value)),
                  sum);
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
  llvm::AllocaInst *hostError = nullptr; // host: the largest error code of the elements so far
};

} // namespace

void emitHostReduction(llvm::Function &function, const KernelSpec &spec) {
  ReductionEmitter emitter(function, spec, MathTarget::Host);
  KernelOperands operands = emitter.loadKernelArgs(function.getArg(0));
  emitter.hostLoops(operands, function.getArg(1), function.getArg(2));
}

void emitSimDeviceReduction(llvm::Function &function, const KernelSpec &spec) {
  ReductionEmitter emitter(function, spec, MathTarget::Host);
  KernelOperands operands = emitter.loadKernelArgs(function.getArg(0));
  emitter.simulatedBlock(operands, function.getArg(1), function.getArg(2), function.getArg(3),
                         function.getArg(4));
}

void emitPtxReduction(llvm::Function &function, const KernelSpec &spec) {
  ReductionEmitter emitter(function, spec, MathTarget::Nvptx);
  KernelOperands operands = emitter.loadPtxParameters();
  emitter.ptxBlocks(operands, function.getArg(kFusedCount), function.getArg(kFusedErrorFlag));
}

} // namespace tg::codegen
