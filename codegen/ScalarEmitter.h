// ScalarEmitter: a ScalarGraph's instructions as LLVM IR values, for one element. Shared by every target: the
// host and device kernels (KernelBuilder.h) differ only in the loop around it and in how math functions are
// called (MathTarget). Internal to codegen: only codegen's .cpp files include this header.
#pragma once

#include "ir/ScalarGraph.h"

#include <functional>
#include <llvm/ADT/ArrayRef.h>
#include <llvm/IR/IRBuilder.h>
#include <utility>
#include <vector>

namespace tg::codegen {

/// How the emitted code calls math functions: the host calls libm (through LLVM intrinsics where they exist,
/// so that libmvec can vectorize them); NVPTX calls libdevice's __nv_* functions.
enum class MathTarget : uint8_t { Host, Nvptx };

/// The type of a `dtype` value in registers: i1 for bool, i32, i64, float, double.
llvm::Type *registerType(llvm::LLVMContext &context, ir::DType dtype);
/// The type of a `dtype` element in memory: the register type, but a byte (0 or 1) for bool.
llvm::Type *memoryType(llvm::LLVMContext &context, ir::DType dtype);

/// Element `index` of the array of `dtype` at `base` (bool: a byte, nonzero is true), as a register value.
/// The load is in the alias scope `inputs` (a list of one scope), which the kernel's output store is not.
llvm::Value *loadElement(llvm::IRBuilder<> &builder, ir::DType dtype, llvm::Value *base, llvm::Value *index,
                         llvm::MDNode *inputs);
/// Stores a register value as element `index` of the array of `dtype` at `base` (bool: the byte 0 or 1),
/// marked as not aliasing what loadElement loads in the scope `inputs`: a kernel's output never overlaps its
/// inputs (KernelArgs), and without the mark the vectorizer checks that at run time before every loop.
void storeElement(llvm::IRBuilder<> &builder, ir::DType dtype, llvm::Value *base, llvm::Value *index,
                  llvm::Value *value, llvm::MDNode *inputs);
/// A scope list for loadElement and storeElement: one anonymous scope in a domain of its own.
llvm::MDNode *kernelInputScope(llvm::LLVMContext &context);

struct ScalarResult {
  llvm::Value *value;     // the last instruction's value, of registerType(graph.resultDtype())
  llvm::Value *errorCode; // i32: kKernelOk or the first error; null when no instruction of the graph can fail
  std::vector<llvm::Value *> extras; // the values of graph.extraOutputs, in order
};

/// Emits the instructions of `graph` at the builder's insertion point, reading `inputs` (one register value
/// per graph input). Integer pow adds a loop, so the builder may end in another block than it started in; the
/// result is valid there. Every (op, dtype) must be one the CPU kernels accept (else a compiler bug).
/// A call of libm's function `name` (`name`f for f32) on the host, of libdevice's __nv_`name`(f) on NVPTX,
/// marked as computing only, so that it can be hoisted, removed or vectorized (codegen/PassPipeline.cpp names
/// libmvec's variants). `exact`, on the host: a call LLVM may neither fold (through double precision, a few
/// ulps from libm's result) nor replace by a vector variant (nobuiltin), so that its bits are libm's.
llvm::Value *emitMathCall(llvm::IRBuilder<> &builder, MathTarget target, const std::string &name,
                          llvm::ArrayRef<llvm::Value *> arguments, bool exact);

/// How a body's gathers read their tables (ir/ScalarGraph.h), which the kernel's loops know: each gathered
/// axis's size and the table's stride along it (i64), in the order of the body's gathers, and the element of
/// table input `input` at `offset` elements (i64) from the one the kernel's element reads there.
struct TableAccess {
  std::vector<std::pair<llvm::Value *, llvm::Value *>> axes;
  std::function<llvm::Value *(uint32_t input, llvm::Value *offset)> load;
};

/// `inputs` holds null for a table input, which only its gather reads, through `tables`; a gather whose
/// index is out of range reads the table at the index's place along the axis 0 instead, and fails with
/// kIndexOutOfRange.
ScalarResult emitScalarBody(llvm::IRBuilder<> &builder, const ir::ScalarGraph &graph,
                            llvm::ArrayRef<llvm::Value *> inputs, MathTarget target,
                            const TableAccess &tables = {});

} // namespace tg::codegen
