// LoopEmitter: what the elementwise kernels (KernelBuilder.cpp) and the reduction kernels
// (ReductionBuilder.cpp) share while they fill a kernel function: the operands every kernel reads (from a
// KernelArgs, or from the PTX entry's parameters), local variables and blocks, and the index arithmetic on
// shape and strides. Loop state lives in allocas of the entry block; the optimizer's SROA turns them into
// registers before the loop passes see them. Internal to codegen: only codegen's .cpp files include this
// header.
#pragma once

#include "codegen/Kernel.h"
#include "codegen/ScalarEmitter.h"

#include <cstddef>
#include <llvm/IR/IRBuilder.h>
#include <vector>

namespace tg::codegen {

// The generated code reads KernelArgs as the LLVM struct {i64, ptr, ptr, ptr, ptr, i64}.
static_assert(offsetof(KernelArgs, rank) == 0 && offsetof(KernelArgs, shape) == 8 &&
                  offsetof(KernelArgs, inputs) == 16 && offsetof(KernelArgs, strides) == 24 &&
                  offsetof(KernelArgs, output) == 32 && offsetof(KernelArgs, reducedRank) == 40,
              "KernelArgs no longer matches the layout the kernels read");

/// NVPTX's address space of global (device) memory.
constexpr unsigned kGlobalAddressSpace = 1;

/// What every kernel reads before its loop.
struct KernelOperands {
  llvm::Value *rank = nullptr;
  llvm::Value *shape = nullptr;   // ptr to rank i64
  llvm::Value *strides = nullptr; // ptr to numInputs * rank i64, input-major
  llvm::Value *output = nullptr;
  llvm::Value *reducedRank = nullptr; // reduction kernels only
  std::vector<llvm::Value *> inputs;  // each input's base pointer, then each extra output's (ScalarGraph)
  std::vector<std::pair<llvm::Value *, llvm::Value *>> gatheredAxes; // size and stride of each (KernelArgs)
};

/// The base of the emitters that fill a kernel function's body: the loops of one target around
/// emitScalarBody. Constructing one opens the function's entry block.
class LoopEmitter {
public:
  LoopEmitter(llvm::Function &function, const KernelSpec &spec, MathTarget target)
      : function(function), spec(spec), target(target),
        builder(llvm::BasicBlock::Create(function.getContext(), "entry", &function)),
        inputScope(kernelInputScope(function.getContext())), tables(spec.body->tableReaders()) {}

  llvm::IRBuilder<> &b() { return builder; }

  /// Reads a KernelArgs (host ABI) and the input pointers it lists.
  KernelOperands loadKernelArgs(llvm::Value *args) {
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
    loadGatheredAxes(operands);
    return operands;
  }

  /// Reads the PTX entry's parameters (Kernel.h's FusedParameter).
  KernelOperands loadPtxParameters() {
    KernelOperands operands;
    operands.rank = function.getArg(kFusedRank);
    operands.shape = function.getArg(kFusedShape);
    // Inputs are global memory (the kernel's contract): saying so gives ld.global instead of generic loads.
    for (llvm::Value *input : loadInputPointers(function.getArg(kFusedInputs)))
      operands.inputs.push_back(builder.CreateAddrSpaceCast(
          input, llvm::PointerType::get(builder.getContext(), kGlobalAddressSpace)));
    operands.strides = function.getArg(kFusedStrides);
    operands.output = function.getArg(kFusedOutput);
    if (spec.body->reduction) operands.reducedRank = function.getArg(kFusedReducedRank);
    loadGatheredAxes(operands);
    return operands;
  }

  /// The body's input values at `offsets` (one per array): each input's element, but null for a table, which
  /// its gather reads through tableAccess.
  std::vector<llvm::Value *> loadInputs(const KernelOperands &operands,
                                        const std::vector<llvm::Value *> &offsets) {
    std::vector<llvm::Value *> values;
    for (size_t k = 0; k < spec.body->numInputs(); ++k)
      values.push_back(tables[k] ? nullptr
                                 : loadElement(builder, spec.body->inputDtypes[k], operands.inputs[k],
                                               offsets[k], inputScope));
    return values;
  }

  /// How the body's gathers read their tables at `offsets` (one per array): table k's element at offsets[k]
  /// plus the gather's own offset.
  TableAccess tableAccess(const KernelOperands &operands, const std::vector<llvm::Value *> &offsets) {
    return {operands.gatheredAxes, [this, &operands, offsets](uint32_t input, llvm::Value *offset) {
              return loadElement(builder, spec.body->inputDtypes[input], operands.inputs[input],
                                 builder.CreateAdd(offsets[input], offset), inputScope);
            }};
  }

  /// A local variable of the function (an entry-block alloca), set to `initial` here.
  llvm::AllocaInst *local(llvm::Type *type, llvm::Value *initial, const char *name) {
    llvm::BasicBlock &entry = function.getEntryBlock();
    llvm::IRBuilder<> atEntry(&entry, entry.begin());
    llvm::AllocaInst *variable = atEntry.CreateAlloca(type, nullptr, name);
    builder.CreateStore(initial, variable);
    return variable;
  }

  llvm::BasicBlock *block(const char *name) {
    return llvm::BasicBlock::Create(builder.getContext(), name, &function);
  }

protected:
  /// The size and stride of each axis the body's gathers index, from the words after the strides.
  void loadGatheredAxes(KernelOperands &operands) {
    size_t axes = spec.body->gatheredAxes();
    if (axes == 0) return;
    llvm::Value *words = builder.CreateInBoundsGEP(
        builder.getInt64Ty(), operands.strides,
        builder.CreateMul(builder.getInt64(spec.body->numArrays()), operands.rank), "gathered.axes");
    for (size_t a = 0; a < axes; ++a)
      operands.gatheredAxes.emplace_back(loadInt64(words, builder.getInt64(2 * a)),
                                         loadInt64(words, builder.getInt64(2 * a + 1)));
  }

  /// The pointers of the arrays the body addresses: its inputs, then its extra outputs.
  std::vector<llvm::Value *> loadInputPointers(llvm::Value *inputs) {
    std::vector<llvm::Value *> pointers;
    for (size_t k = 0; k < spec.body->numArrays(); ++k)
      pointers.push_back(builder.CreateLoad(
          builder.getPtrTy(), builder.CreateConstInBoundsGEP1_64(builder.getPtrTy(), inputs, k)));
    return pointers;
  }

  /// The inner axis's strides, those the kernel is specialized for as constants (KernelSpec::innerStrides).
  std::vector<llvm::Value *> specializedStrides(std::vector<llvm::Value *> strides) {
    for (size_t k = 0; k < spec.innerStrides.size(); ++k)
      if (spec.innerStrides[k] != InnerStride::Any)
        strides[k] = builder.getInt64(spec.innerStrides[k] == InnerStride::Unit ? 1 : 0);
    return strides;
  }

  llvm::Value *load(llvm::AllocaInst *variable) {
    return builder.CreateLoad(variable->getAllocatedType(), variable);
  }

  /// array[index] of an i64 array.
  llvm::Value *loadInt64(llvm::Value *array, llvm::Value *index) {
    return builder.CreateLoad(builder.getInt64Ty(),
                              builder.CreateInBoundsGEP(builder.getInt64Ty(), array, index));
  }
  /// Input k's stride along `axis`: strides[k * rank + axis].
  llvm::Value *inputStride(const KernelOperands &operands, size_t k, llvm::Value *axis) {
    return loadInt64(operands.strides,
                     builder.CreateAdd(builder.CreateMul(builder.getInt64(k), operands.rank), axis));
  }

  llvm::Function &function;
  const KernelSpec &spec;
  MathTarget target;
  llvm::IRBuilder<> builder;
  llvm::MDNode *inputScope; // what the element loads read, which the output store never writes
  std::vector<const ir::ScalarInstr *> tables; // per input, the gather that reads it as its table, or null
};

} // namespace tg::codegen
