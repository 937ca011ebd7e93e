// The scalar semantics of every elementwise op in LLVM IR, written after runtime/ElementwiseKernels.cpp and
// runtime/KernelSupport.h: each emit function below names the CPU function it mirrors. Everything is
// branch-free (selects) except integer pow, so that the host loop vectorizes.
#include "codegen/ScalarEmitter.h"

#include "codegen/Kernel.h"
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
  switch (dtype) {
  case DType::Bool:
    return llvm::Type::getInt1Ty(context);
  case DType::I32:
    return llvm::Type::getInt32Ty(context);
  case DType::I64:
    return llvm::Type::getInt64Ty(context);
  case DType::F32:
    return llvm::Type::getFloatTy(context);
  case DType::F64:
    break;
  }
  return llvm::Type::getDoubleTy(context);
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

/// Math functions whose implementation depends on the target.
enum class MathFunction { Exp, Log, Log1p, Expm1, Sin, Cos, Tanh, Erf, Pow, Fmod };

const char *libmName(MathFunction function) {
  switch (function) {
  case MathFunction::Exp:
    return "exp";
  case MathFunction::Log:
    return "log";
  case MathFunction::Log1p:
    return "log1p";
  case MathFunction::Expm1:
    return "expm1";
  case MathFunction::Sin:
    return "sin";
  case MathFunction::Cos:
    return "cos";
  case MathFunction::Tanh:
    return "tanh";
  case MathFunction::Erf:
    return "erf";
  case MathFunction::Pow:
    return "pow";
  case MathFunction::Fmod:
    break;
  }
  return "fmod";
}

/// The LLVM intrinsic for a math function, where the host has one (not_intrinsic otherwise). Intrinsics carry
/// no errno, so the loop vectorizer may replace them by libmvec's vector variants; they lower to the same
/// libm calls as the CPU kernels' std::exp etc.
llvm::Intrinsic::ID hostIntrinsic(MathFunction function) {
  switch (function) {
  case MathFunction::Exp:
    return llvm::Intrinsic::exp;
  case MathFunction::Log:
    return llvm::Intrinsic::log;
  case MathFunction::Sin:
    return llvm::Intrinsic::sin;
  case MathFunction::Cos:
    return llvm::Intrinsic::cos;
  case MathFunction::Pow:
    return llvm::Intrinsic::pow;
  default:
    return llvm::Intrinsic::not_intrinsic;
  }
}

class ScalarEmitter {
public:
  ScalarEmitter(llvm::IRBuilder<> &builder, MathTarget target) : b(builder), target(target) {}

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

private:
  Value *instruction(const ir::ScalarInstr &instr, const std::vector<Value *> &operands,
                     const std::vector<DType> &operandDtypes) {
    OpKind kind = instr.kind;
    TG_ASSERT(kind == OpKind::Full || operands.size() == static_cast<size_t>(ir::opInfo(kind).arity))
        << ir::opName(kind) << " with " << operands.size() << " operands in a scalar body";
    switch (kind) {
    case OpKind::Full:
      return immediate(instr.dtype, instr.immediate);
    case OpKind::Cast:
      return cast(operands[0], operandDtypes[0], instr.dtype);
    case OpKind::Where:
      TG_ASSERT(operandDtypes[0] == DType::Bool && operandDtypes[1] == operandDtypes[2])
          << "where of " << ir::dtypeName(operandDtypes[1]) << " and " << ir::dtypeName(operandDtypes[2]);
      return b.CreateSelect(operands[0], operands[1], operands[2]);
    case OpKind::Clip:
      requireSameDtypes(kind, operandDtypes);
      return minimum(maximum(operands[0], operands[1], operandDtypes[0]), operands[2], operandDtypes[0]);
    default:
      break;
    }
    requireSameDtypes(kind, operandDtypes);
    DType dtype = operandDtypes[0];
    Value *result = nullptr;
    if (operands.size() == 1) {
      result = ir::isFloat(dtype)     ? floatUnary(kind, operands[0])
               : dtype == DType::Bool ? boolUnary(kind, operands[0])
                                      : intUnary(kind, operands[0]);
    } else if (Value *compared = compareOrSelect(kind, operands[0], operands[1], dtype)) {
      result = compared;
    } else {
      result = ir::isFloat(dtype)     ? floatBinary(kind, operands[0], operands[1])
               : dtype == DType::Bool ? boolBinary(kind, operands[0], operands[1])
                                      : intBinary(kind, operands[0], operands[1]);
    }
    TG_ASSERT(result) << "no " << ir::opName(kind) << " kernel for " << ir::dtypeName(dtype);
    TG_ASSERT(result->getType() == registerType(b.getContext(), instr.dtype))
        << ir::opName(kind) << " of " << ir::dtypeName(dtype) << " cannot give "
        << ir::dtypeName(instr.dtype);
    return result;
  }

  void requireSameDtypes(OpKind kind, const std::vector<DType> &dtypes) {
    for (DType dtype : dtypes)
      TG_ASSERT(dtype == dtypes[0]) << ir::opName(kind) << " of mixed dtypes in a scalar body";
  }

  /// TensorData::scalar: the immediate converted to `dtype` as a C++ cast would.
  Value *immediate(DType dtype, double value) {
    llvm::Type *type = registerType(b.getContext(), dtype);
    switch (dtype) {
    case DType::Bool:
      return b.getInt1(value != 0);
    case DType::I32:
      return b.getInt32(static_cast<uint32_t>(static_cast<int32_t>(value)));
    case DType::I64:
      return b.getInt64(static_cast<uint64_t>(static_cast<int64_t>(value)));
    case DType::F32:
      return llvm::ConstantFP::get(type, static_cast<float>(value));
    case DType::F64:
      break;
    }
    return llvm::ConstantFP::get(type, value);
  }

  Value *floatConstant(Value *like, double value) { return llvm::ConstantFP::get(like->getType(), value); }
  Value *intConstant(Value *like, int64_t value) {
    return llvm::ConstantInt::get(like->getType(), static_cast<uint64_t>(value), /*IsSigned=*/true);
  }

  /// castScalar: to bool is `!= 0`; float to integer truncates, and NaN or out of range gives the minimum
  /// integer (as x86's cvttss2si, and so NumPy there).
  Value *cast(Value *value, DType from, DType to) {
    if (from == to) return value;
    llvm::Type *type = registerType(b.getContext(), to);
    if (to == DType::Bool)
      return ir::isFloat(from) ? b.CreateFCmpUNE(value, floatConstant(value, 0))
                               : b.CreateICmpNE(value, intConstant(value, 0));
    if (from == DType::Bool) return ir::isFloat(to) ? b.CreateUIToFP(value, type) : b.CreateZExt(value, type);
    if (ir::isFloat(from) && ir::isFloat(to)) return b.CreateFPCast(value, type);
    if (ir::isFloat(to)) return b.CreateSIToFP(value, type);
    if (!ir::isFloat(from)) return b.CreateSExtOrTrunc(value, type);
    // -2^31 and -2^63 are exact in float and double; fptosi is poison outside the range, never selected
    // there.
    double lowest = to == DType::I32 ? static_cast<double>(std::numeric_limits<int32_t>::min())
                                     : static_cast<double>(std::numeric_limits<int64_t>::min());
    Value *inRange = b.CreateAnd(b.CreateFCmpOGE(value, floatConstant(value, lowest)),
                                 b.CreateFCmpOLT(value, floatConstant(value, -lowest)));
    Value *minimumInteger =
        llvm::ConstantInt::get(type, llvm::APInt::getSignedMinValue(type->getIntegerBitWidth()));
    return b.CreateSelect(inRange, b.CreateFPToSI(value, type), minimumInteger);
  }

  // Comparisons, maximum and minimum take every dtype; bool orders false < true.
  Value *compareOrSelect(OpKind kind, Value *x, Value *y, DType dtype) {
    if (ir::isFloat(dtype)) {
      switch (kind) {
      case OpKind::Lt:
        return b.CreateFCmpOLT(x, y);
      case OpKind::Le:
        return b.CreateFCmpOLE(x, y);
      case OpKind::Gt:
        return b.CreateFCmpOGT(x, y);
      case OpKind::Ge:
        return b.CreateFCmpOGE(x, y);
      case OpKind::Eq:
        return b.CreateFCmpOEQ(x, y);
      case OpKind::Ne:
        return b.CreateFCmpUNE(x, y); // NaN != anything
      default:
        break;
      }
    } else {
      bool isBool = dtype == DType::Bool;
      switch (kind) {
      case OpKind::Lt:
        return isBool ? b.CreateICmpULT(x, y) : b.CreateICmpSLT(x, y);
      case OpKind::Le:
        return isBool ? b.CreateICmpULE(x, y) : b.CreateICmpSLE(x, y);
      case OpKind::Gt:
        return isBool ? b.CreateICmpUGT(x, y) : b.CreateICmpSGT(x, y);
      case OpKind::Ge:
        return isBool ? b.CreateICmpUGE(x, y) : b.CreateICmpSGE(x, y);
      case OpKind::Eq:
        return b.CreateICmpEQ(x, y);
      case OpKind::Ne:
        return b.CreateICmpNE(x, y);
      default:
        break;
      }
    }
    if (kind == OpKind::Maximum) return maximum(x, y, dtype);
    if (kind == OpKind::Minimum) return minimum(x, y, dtype);
    return nullptr;
  }

  /// KernelSupport's maximum: a NaN first operand wins, else `a >= b ? a : b` (so a NaN second operand wins
  /// too, and maximum(-0.0, 0.0) is -0.0: no LLVM maxnum/maximum intrinsic has exactly these rules).
  Value *maximum(Value *x, Value *y, DType dtype) {
    if (!ir::isFloat(dtype))
      return b.CreateSelect(dtype == DType::Bool ? b.CreateICmpUGE(x, y) : b.CreateICmpSGE(x, y), x, y);
    return b.CreateSelect(b.CreateFCmpUNO(x, x), x, b.CreateSelect(b.CreateFCmpOGE(x, y), x, y));
  }
  Value *minimum(Value *x, Value *y, DType dtype) {
    if (!ir::isFloat(dtype))
      return b.CreateSelect(dtype == DType::Bool ? b.CreateICmpULE(x, y) : b.CreateICmpSLE(x, y), x, y);
    return b.CreateSelect(b.CreateFCmpUNO(x, x), x, b.CreateSelect(b.CreateFCmpOLE(x, y), x, y));
  }

  Value *floatUnary(OpKind kind, Value *x) {
    Value *zero = floatConstant(x, 0), *one = floatConstant(x, 1);
    switch (kind) {
    case OpKind::Neg:
      return b.CreateFNeg(x);
    case OpKind::Abs:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    case OpKind::Exp:
      return math(MathFunction::Exp, {x});
    case OpKind::Log:
      return math(MathFunction::Log, {x});
    case OpKind::Log1p:
      return math(MathFunction::Log1p, {x});
    case OpKind::Expm1:
      return math(MathFunction::Expm1, {x});
    case OpKind::Sqrt:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case OpKind::Rsqrt:
      return b.CreateFDiv(one, b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
    case OpKind::Sin:
      return math(MathFunction::Sin, {x});
    case OpKind::Cos:
      return math(MathFunction::Cos, {x});
    case OpKind::Tanh:
      return math(MathFunction::Tanh, {x});
    case OpKind::Erf:
      return math(MathFunction::Erf, {x});
    case OpKind::Sigmoid: {
      // sigmoid(): x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); one exp whose argument is never
      // positive.
      Value *nonNegative = b.CreateFCmpOGE(x, zero);
      Value *e = math(MathFunction::Exp, {b.CreateSelect(nonNegative, b.CreateFNeg(x), x)});
      Value *denominator = b.CreateFAdd(one, e);
      return b.CreateSelect(nonNegative, b.CreateFDiv(one, denominator), b.CreateFDiv(e, denominator));
    }
    case OpKind::Softplus: {
      // softplus(): x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)).
      Value *positive = b.CreateFCmpOGT(x, zero);
      Value *tail = math(MathFunction::Log1p,
                         {math(MathFunction::Exp, {b.CreateSelect(positive, b.CreateFNeg(x), x)})});
      return b.CreateSelect(positive, b.CreateFAdd(x, tail), tail);
    }
    case OpKind::Relu:
      return b.CreateSelect(b.CreateFCmpOLT(x, zero), zero, x); // NaN and -0.0 stay
    case OpKind::Floor:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
    case OpKind::Ceil:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
    case OpKind::Round:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, x); // nearbyint: half to even
    case OpKind::Sign: {
      // sign(): NaN stays NaN; -0.0 gives 0.0.
      Value *sign = b.CreateSelect(b.CreateFCmpOGT(x, zero), one,
                                   b.CreateSelect(b.CreateFCmpOLT(x, zero), floatConstant(x, -1), zero));
      return b.CreateSelect(b.CreateFCmpUNO(x, x), x, sign);
    }
    default:
      return nullptr;
    }
  }

  Value *boolUnary(OpKind kind, Value *x) { return kind == OpKind::Not ? b.CreateNot(x) : nullptr; }

  Value *intUnary(OpKind kind, Value *x) {
    Value *zero = intConstant(x, 0);
    switch (kind) {
    case OpKind::Neg:
      return b.CreateSub(zero, x); // wraps: -INT_MIN is INT_MIN
    case OpKind::Abs:
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse()); // abs(INT_MIN) is INT_MIN
    case OpKind::Relu:
      return b.CreateSelect(b.CreateICmpSLT(x, zero), zero, x);
    case OpKind::Sign:
      return b.CreateSelect(b.CreateICmpSGT(x, zero), intConstant(x, 1),
                            b.CreateSelect(b.CreateICmpSLT(x, zero), intConstant(x, -1), zero));
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Round:
      return x; // integers are already whole
    default:
      return nullptr;
    }
  }

  Value *floatBinary(OpKind kind, Value *x, Value *y) {
    switch (kind) {
    case OpKind::Add:
      return b.CreateFAdd(x, y);
    case OpKind::Sub:
      return b.CreateFSub(x, y);
    case OpKind::Mul:
      return b.CreateFMul(x, y);
    case OpKind::Div:
      return b.CreateFDiv(x, y);
    case OpKind::Mod:
      return floatMod(x, y);
    case OpKind::Pow:
      return math(MathFunction::Pow, {x, y});
    default:
      return nullptr;
    }
  }

  /// floatMod: fmod, then the divisor's sign (Python's %); a zero divisor gives fmod's NaN.
  Value *floatMod(Value *x, Value *y) {
    Value *zero = floatConstant(x, 0);
    Value *mod = math(MathFunction::Fmod, {x, y});
    Value *signedZero = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, zero, y);
    Value *signsDiffer = b.CreateXor(b.CreateFCmpOLT(y, zero), b.CreateFCmpOLT(mod, zero));
    Value *adjusted = b.CreateSelect(signsDiffer, b.CreateFAdd(mod, y), mod);
    return b.CreateSelect(b.CreateFCmpOEQ(y, zero), mod,
                          b.CreateSelect(b.CreateFCmpOEQ(mod, zero), signedZero, adjusted));
  }

  /// NumPy's bool arithmetic: + is or, * is and.
  Value *boolBinary(OpKind kind, Value *x, Value *y) {
    switch (kind) {
    case OpKind::And:
    case OpKind::Mul:
      return b.CreateAnd(x, y);
    case OpKind::Or:
    case OpKind::Add:
      return b.CreateOr(x, y);
    default:
      return nullptr;
    }
  }

  Value *intBinary(OpKind kind, Value *x, Value *y) {
    switch (kind) {
    case OpKind::Add: // LLVM's add, sub and mul without nsw wrap, as the CPU's unsigned arithmetic
      return b.CreateAdd(x, y);
    case OpKind::Sub:
      return b.CreateSub(x, y);
    case OpKind::Mul:
      return b.CreateMul(x, y);
    case OpKind::Mod:
      return intMod(x, y);
    case OpKind::Pow:
      return intPow(x, y);
    default:
      return nullptr;
    }
  }

  /// intMod: 0 for divisors 0 and -1, else the remainder with the divisor's sign. srem is undefined for those
  /// divisors even when its result is not selected, so it divides by 1 instead.
  Value *intMod(Value *x, Value *y) {
    Value *zero = intConstant(x, 0);
    Value *trivial = b.CreateOr(b.CreateICmpEQ(y, zero), b.CreateICmpEQ(y, intConstant(y, -1)));
    Value *mod = b.CreateSRem(x, b.CreateSelect(trivial, intConstant(y, 1), y));
    Value *signsDiffer = b.CreateXor(b.CreateICmpSLT(mod, zero), b.CreateICmpSLT(y, zero));
    Value *adjust = b.CreateAnd(b.CreateICmpNE(mod, zero), signsDiffer);
    return b.CreateSelect(trivial, zero, b.CreateSelect(adjust, b.CreateAdd(mod, y), mod));
  }

  /// intPow: exponentiation by squaring in wrapping arithmetic; a negative exponent is kNegativeIntegerPower.
  ///
  ///   entry:  e = max(exponent, 0)          loop: result, factor, e = phi ...
  ///           br loop                             br e == 0, done, step
  ///   step:   result *= e & 1 ? factor : 1; factor *= factor; e >>= 1 (logical); br loop
  Value *intPow(Value *base, Value *exponent) {
    Value *zero = intConstant(base, 0), *one = intConstant(base, 1);
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

  /// Records an element's error code (i32); the first nonzero code of the body wins.
  void noteError(Value *code) {
    errorCode =
        errorCode ? b.CreateSelect(b.CreateICmpNE(errorCode, b.getInt32(kKernelOk)), errorCode, code) : code;
  }

  Value *math(MathFunction function, llvm::ArrayRef<Value *> arguments) {
    llvm::Type *type = arguments[0]->getType();
    bool isSingle = type->isFloatTy();
    // An input-free argument (immediates only) would let LLVM fold the call, through double precision: a
    // result a few ulps from libm's. A nobuiltin libm call is not folded; it runs once, hoisted out of the
    // loop.
    bool runtimeCall = target == MathTarget::Host && inputFree && function != MathFunction::Fmod;
    if (target == MathTarget::Host && !runtimeCall) {
      if (function == MathFunction::Fmod)
        return b.CreateFRem(arguments[0], arguments[1]); // lowers to fmod(f)
      if (llvm::Intrinsic::ID intrinsic = hostIntrinsic(function);
          intrinsic != llvm::Intrinsic::not_intrinsic)
        return b.CreateIntrinsic(intrinsic, {type}, arguments);
    }
    // A libm call (host) or a libdevice call (NVPTX): expf or exp, __nv_expf or __nv_exp.
    std::string name =
        std::string(target == MathTarget::Nvptx ? "__nv_" : "") + libmName(function) + (isSingle ? "f" : "");
    std::vector<llvm::Type *> parameters(arguments.size(), type);
    llvm::Module *module = b.GetInsertBlock()->getModule();
    llvm::FunctionCallee callee =
        module->getOrInsertFunction(name, llvm::FunctionType::get(type, parameters, false));
    if (auto *declaration = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      // These functions only compute (no errno is read back), so they can be hoisted, removed or vectorized.
      declaration->setDoesNotAccessMemory();
      declaration->setDoesNotThrow();
      declaration->setWillReturn();
    }
    llvm::CallInst *call = b.CreateCall(callee, arguments);
    call->setDoesNotAccessMemory();
    if (runtimeCall) call->addFnAttr(llvm::Attribute::NoBuiltin);
    return call;
  }

  llvm::IRBuilder<> &b;
  MathTarget target;
  Value *errorCode = nullptr;
  bool inputFree = false; // the instruction being emitted reads immediates only
};

} // namespace

ScalarResult emitScalarBody(llvm::IRBuilder<> &builder, const ir::ScalarGraph &graph,
                            llvm::ArrayRef<Value *> inputs, MathTarget target) {
  return ScalarEmitter(builder, target).emit(graph, inputs);
}

} // namespace tg::codegen
