// Scalar programs in LLVM IR: each instruction as its op's scalar semantics (codegen/ScalarOps.h) emit it, or
// as its MATH_OP's libm (libdevice) call; loads and stores of elements.
#include "codegen/ScalarEmitter.h"

#include "codegen/Kernel.h"
#include "codegen/ScalarOps.h"
#include "ir/Assert.h"

#include <cstdint>
#include <limits>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

namespace tg::codegen {

using ir::DType;
using ir::OpKind;
using llvm::Value;

llvm::Type *registerType(llvm::LLVMContext &context, DType dtype) {
  const ir::DTypeInfo &info = ir::dtypeInfo(dtype);
  switch (info.kind) {
  case ir::DTypeKind::Bool:
    return llvm::Type::getInt1Ty(context);
  case ir::DTypeKind::Int:
    return llvm::Type::getIntNTy(context, static_cast<unsigned>(info.size * 8));
  case ir::DTypeKind::Float:
    break;
  }
  return info.size == 4 ? llvm::Type::getFloatTy(context) : llvm::Type::getDoubleTy(context);
}

llvm::Type *memoryType(llvm::LLVMContext &context, DType dtype) {
  return dtype == DType::Bool ? llvm::Type::getInt8Ty(context) : registerType(context, dtype);
}

Value *loadElement(llvm::IRBuilder<> &builder, DType dtype, Value *base, Value *index, llvm::MDNode *inputs) {
  llvm::Type *type = memoryType(builder.getContext(), dtype);
  llvm::LoadInst *element = builder.CreateLoad(type, builder.CreateInBoundsGEP(type, base, index));
  element->setMetadata(llvm::LLVMContext::MD_alias_scope, inputs);
  return dtype == DType::Bool ? builder.CreateICmpNE(element, builder.getInt8(0)) : element;
}

void storeElement(llvm::IRBuilder<> &builder, DType dtype, Value *base, Value *index, Value *value,
                  llvm::MDNode *inputs) {
  llvm::Type *type = memoryType(builder.getContext(), dtype);
  if (dtype == DType::Bool) value = builder.CreateZExt(value, type);
  builder.CreateStore(value, builder.CreateInBoundsGEP(type, base, index))
      ->setMetadata(llvm::LLVMContext::MD_noalias, inputs);
}

llvm::MDNode *kernelInputScope(llvm::LLVMContext &context) {
  llvm::MDBuilder metadata(context);
  llvm::MDNode *domain = metadata.createAnonymousAliasScopeDomain("tgc.kernel");
  return llvm::MDNode::get(context, {metadata.createAnonymousAliasScope(domain, "inputs")});
}

namespace {

/// Emits a scalar program: the instructions in order, each by its op's `emit` (codegen/ScalarOps.h) or, for a
/// MATH_OP, as a call of its libm function. ScalarOps' emit functions build with `b` and the helpers below.
class ScalarBuilder {
public:
  ScalarBuilder(llvm::IRBuilder<> &builder, MathTarget target, const TableAccess &tables)
      : b(builder), target(target), tables(tables) {}

  ScalarResult emit(const ir::ScalarGraph &graph, llvm::ArrayRef<Value *> inputs) {
    TG_ASSERT(inputs.size() == graph.numInputs())
        << "scalar body of " << graph.numInputs() << " inputs given " << inputs.size() << " values";
    std::vector<Value *> values(inputs.begin(), inputs.end());
    std::vector<bool> inputFreeValues(inputs.size(), false);
    for (const ir::ScalarInstr &instr : graph.body) {
      std::vector<Value *> operands;
      std::vector<DType> operandDtypes;
      inputFree = true;
      for (uint32_t operand : instr.operands) {
        TG_ASSERT(operand < values.size()) << "scalar value %" << operand << " used before it is defined";
        operands.push_back(values[operand]);
        operandDtypes.push_back(graph.dtypeOf(operand));
        inputFree = inputFree && inputFreeValues[operand];
      }
      values.push_back(instruction(instr, operands, operandDtypes));
      inputFreeValues.push_back(inputFree);
    }
    std::vector<Value *> extras;
    for (uint32_t value : graph.extraOutputs)
      extras.push_back(values[value]);
    return {values.back(), errorCode, std::move(extras)};
  }

  // What ScalarOps' emit functions build with.
  llvm::IRBuilder<> &b;
  llvm::Type *type(DType dtype) { return registerType(b.getContext(), dtype); }
  Value *constant(Value *like, double value) { return llvm::ConstantFP::get(like->getType(), value); }
  Value *integer(Value *like, int64_t value) {
    return llvm::ConstantInt::get(like->getType(), static_cast<uint64_t>(value), /*IsSigned=*/true);
  }
  Value *minimumInteger(llvm::Type *type) {
    return llvm::ConstantInt::get(type, llvm::APInt::getSignedMinValue(type->getIntegerBitWidth()));
  }
  Value *fabs(Value *x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
  Value *sqrt(Value *x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x); }
  Value *floor(Value *x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x); }
  Value *ceil(Value *x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x); }
  Value *rint(Value *x) {
    return b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, x);
  } // nearbyint: half to even
  Value *copysign(Value *x, Value *y) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, x, y); }
  Value *integerAbs(Value *x) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse()); }
  /// fmod(f): frem on the host (it lowers to the libm call), libdevice's on NVPTX.
  Value *fmod(Value *x, Value *y) {
    return target == MathTarget::Host ? b.CreateFRem(x, y) : math("fmod", {x, y});
  }

  /// A MATH_OP's (and pow's) call; exact on the host when its arguments are immediates only, which LLVM would
  /// otherwise fold: a nobuiltin call runs once, hoisted out of the loop.
  Value *math(const std::string &name, llvm::ArrayRef<Value *> arguments) {
    return emitMathCall(b, target, name, arguments, target == MathTarget::Host && inputFree);
  }

  /// scalar::Pow's integers: exponentiation by squaring in wrapping arithmetic; a negative exponent is
  /// kNegativeIntegerPower.
  ///
  ///   entry:  e = max(exponent, 0)          loop: result, factor, e = phi ...
  ///           br loop                             br e == 0, done, step
  ///   step:   result *= e & 1 ? factor : 1; factor *= factor; e >>= 1 (logical); br loop
  Value *integerPower(Value *base, Value *exponent) {
    Value *zero = integer(base, 0), *one = integer(base, 1);
    Value *negative = b.CreateICmpSLT(exponent, zero);
    noteError(b.CreateSelect(negative, b.getInt32(kNegativeIntegerPower), b.getInt32(kKernelOk)));
    Value *start = b.CreateSelect(negative, zero, exponent);

    llvm::Function *function = b.GetInsertBlock()->getParent();
    llvm::BasicBlock *entry = b.GetInsertBlock();
    auto *loop = llvm::BasicBlock::Create(b.getContext(), "pow.loop", function);
    auto *step = llvm::BasicBlock::Create(b.getContext(), "pow.step", function);
    auto *done = llvm::BasicBlock::Create(b.getContext(), "pow.done", function);
    b.CreateBr(loop);

    b.SetInsertPoint(loop);
    llvm::PHINode *result = b.CreatePHI(base->getType(), 2, "pow.result");
    llvm::PHINode *factor = b.CreatePHI(base->getType(), 2, "pow.factor");
    llvm::PHINode *remaining = b.CreatePHI(base->getType(), 2, "pow.exponent");
    b.CreateCondBr(b.CreateICmpEQ(remaining, zero), done, step);

    b.SetInsertPoint(step);
    Value *odd = b.CreateICmpNE(b.CreateAnd(remaining, one), zero);
    Value *nextResult = b.CreateMul(result, b.CreateSelect(odd, factor, one));
    Value *nextFactor = b.CreateMul(factor, factor);
    Value *nextRemaining = b.CreateLShr(remaining, one);
    b.CreateBr(loop);

    result->addIncoming(one, entry);
    result->addIncoming(nextResult, step);
    factor->addIncoming(base, entry);
    factor->addIncoming(nextFactor, step);
    remaining->addIncoming(start, entry);
    remaining->addIncoming(nextRemaining, step);
    b.SetInsertPoint(done);
    return result;
  }

private:
  Value *instruction(const ir::ScalarInstr &instr, const std::vector<Value *> &operands,
                     const std::vector<DType> &operandDtypes) {
    OpKind kind = instr.kind;
    if (kind == OpKind::Gather) return gather(instr, operands, operandDtypes);
    TG_ASSERT(kind == OpKind::Full || operands.size() == static_cast<size_t>(ir::opInfo(kind).arity))
        << ir::opName(kind) << " with " << operands.size() << " operands in a scalar body";
    if (kind == OpKind::Full) return immediate(instr.dtype, instr.immediate);
    if (kind == OpKind::Cast) return scalar::Cast::emit(*this, operandDtypes[0], instr.dtype, operands[0]);
    // where's condition is bool; the other operands of every op share a dtype the op takes.
    size_t first = kind == OpKind::Where ? 1 : 0;
    DType dtype = operandDtypes[first];
    for (size_t i = first; i < operandDtypes.size(); ++i)
      TG_ASSERT(operandDtypes[i] == dtype && ir::takes(kind, dtype))
          << ir::opName(kind) << " of " << ir::dtypeName(operandDtypes[i]) << " in a scalar body";
    Value *result = nullptr;
    switch (kind) {
#define MATH_OP(Enum, name, libm)                                                                            \
  case OpKind::Enum:                                                                                         \
    result = math(#libm, operands);                                                                          \
    break;
#define ELEMENTWISE_OP(Enum, ...)                                                                            \
  case OpKind::Enum:                                                                                         \
    result = emitOp<scalar::Enum>(dtype, operands);                                                          \
    break;
#include "ir/Ops.def"
    case OpKind::Where:
      result = scalar::Where::emit(*this, dtype, operands[0], operands[1], operands[2]);
      break;
    default:
      TG_ASSERT(false) << ir::opName(kind) << " in a scalar body";
    }
    TG_ASSERT(result->getType() == type(instr.dtype)) << ir::opName(kind) << " of " << ir::dtypeName(dtype)
                                                      << " cannot give " << ir::dtypeName(instr.dtype);
    return result;
  }

  /// A gather's element: the table read at the sum of each index, made non-negative, times its axis's
  /// stride. An index outside [-size, size) is kIndexOutOfRange and reads place 0 along its axis (unsigned,
  /// a negative index that stays negative compares as too large).
  Value *gather(const ir::ScalarInstr &instr, const std::vector<Value *> &operands,
                const std::vector<DType> &operandDtypes) {
    TG_ASSERT(operands.size() >= 2 && !operands[0] && nextAxis + operands.size() - 1 <= tables.axes.size())
        << "a gather of " << operands.size() - 1 << " indices, its table loaded or its axes not given";
    Value *offset = b.getInt64(0);
    for (size_t j = 1; j < operands.size(); ++j) {
      TG_ASSERT(ir::isInteger(operandDtypes[j])) << "a gather's index of " << ir::dtypeName(operandDtypes[j]);
      auto [size, stride] = tables.axes[nextAxis++];
      Value *index = b.CreateSExt(operands[j], b.getInt64Ty());
      Value *place = b.CreateSelect(b.CreateICmpSLT(index, b.getInt64(0)), b.CreateAdd(index, size), index);
      Value *outside = b.CreateICmpUGE(place, size);
      noteError(b.CreateSelect(outside, b.getInt32(kIndexOutOfRange + gathers), b.getInt32(kKernelOk)));
      offset = b.CreateAdd(offset, b.CreateMul(b.CreateSelect(outside, b.getInt64(0), place), stride));
    }
    ++gathers;
    return tables.load(instr.operands[0], offset);
  }

  /// Op S's emit (codegen/ScalarOps.h) of its operands.
  template <typename S>
  Value *emitOp(DType dtype, const std::vector<Value *> &x) {
    if constexpr (requires { S::emit(*this, dtype, x[0]); })
      if (x.size() == 1) return S::emit(*this, dtype, x[0]);
    if constexpr (requires { S::emit(*this, dtype, x[0], x[1]); })
      if (x.size() == 2) return S::emit(*this, dtype, x[0], x[1]);
    if constexpr (requires { S::emit(*this, dtype, x[0], x[1], x[2]); })
      if (x.size() == 3) return S::emit(*this, dtype, x[0], x[1], x[2]);
    TG_ASSERT(false) << x.size() << " operands for an op that takes another number";
    return nullptr;
  }

  /// The immediate converted to `dtype` as a C++ cast would (TensorData::scalar).
  Value *immediate(DType dtype, double value) {
    llvm::Type *llvmType = type(dtype);
    return ir::visitDType(dtype, [&](auto zero) -> Value * {
      using T = decltype(zero);
      if constexpr (std::is_floating_point_v<T>)
        return llvm::ConstantFP::get(llvmType, static_cast<T>(value));
      else if constexpr (std::is_same_v<T, bool>)
        return b.getInt1(value != 0);
      else
        return llvm::ConstantInt::get(llvmType, static_cast<uint64_t>(static_cast<T>(value)),
                                      /*IsSigned=*/true);
    });
  }

  /// Records an element's error code (i32); the first nonzero code of the body wins.
  void noteError(Value *code) {
    errorCode =
        errorCode ? b.CreateSelect(b.CreateICmpNE(errorCode, b.getInt32(kKernelOk)), errorCode, code) : code;
  }

  MathTarget target;
  const TableAccess &tables;
  size_t nextAxis = 0; // the gathered axis of tables.axes that the next gather's first index reads
  int32_t gathers = 0; // the gathers emitted so far
  Value *errorCode = nullptr;
  bool inputFree = false; // the instruction being emitted reads immediates only
};

} // namespace

Value *emitMathCall(llvm::IRBuilder<> &builder, MathTarget target, const std::string &name,
                    llvm::ArrayRef<Value *> arguments, bool exact) {
  llvm::Type *type = arguments[0]->getType();
  std::string symbol =
      std::string(target == MathTarget::Nvptx ? "__nv_" : "") + name + (type->isFloatTy() ? "f" : "");
  std::vector<llvm::Type *> parameters(arguments.size(), type);
  llvm::Module *module = builder.GetInsertBlock()->getModule();
  llvm::FunctionCallee callee =
      module->getOrInsertFunction(symbol, llvm::FunctionType::get(type, parameters, false));
  if (auto *declaration = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    declaration->setDoesNotAccessMemory(); // no errno is read back
    declaration->setDoesNotThrow();
    declaration->setWillReturn();
  }
  llvm::CallInst *call = builder.CreateCall(callee, arguments);
  call->setDoesNotAccessMemory();
  if (exact && target == MathTarget::Host) call->addFnAttr(llvm::Attribute::NoBuiltin);
  return call;
}

ScalarResult emitScalarBody(llvm::IRBuilder<> &builder, const ir::ScalarGraph &graph,
                            llvm::ArrayRef<Value *> inputs, MathTarget target, const TableAccess &tables) {
  return ScalarBuilder(builder, target, tables).emit(graph, inputs);
}

} // namespace tg::codegen
