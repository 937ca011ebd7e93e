// The scalar semantics of the elementwise ops of ir/Ops.def, stated once: per op, the C++ function the CPU
// kernels apply to an element (`evaluate`, runtime/ElementwiseKernels.cpp) and, beside it, the LLVM IR the
// generated kernels compute for it (`emit`, codegen/ScalarEmitter.cpp): the same operations in the same
// order, so that the two agree bit for bit on the host and the CPU kernels are the generated kernels' test
// oracle (tests/unit/CodegenTest.cpp). A MATH_OP's semantics is its libm column and has no entry here.
//
// Semantics follow NumPy: `%` takes the divisor's sign, integer arithmetic wraps around, round is half to
// even, maximum/minimum/clip propagate NaN, casts to integers truncate. The emitted forms are branch-free
// (selects), except integer pow, so that host loops vectorize.
//
// `emit` is a template over the emitter (codegen/ScalarEmitter.cpp's ScalarBuilder), whose IRBuilder `b` and
// helpers it calls, so this header needs no LLVM header and the CPU kernels include it cheaply. Each op's
// struct has the same name as its OpKind, and the kernels dispatch to it through Ops.def: an elementwise op
// without its struct does not compile.
#pragma once

#include "ir/DType.h"
#include "ir/SourceLoc.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tg::scalar {

using ir::DType;

/// The type integer arithmetic runs in so that it wraps around like NumPy's (signed overflow is undefined in
/// C++).
template <typename T>
using WrappingType = typename std::conditional_t<std::is_same_v<T, bool>, std::type_identity<bool>,
                                                 std::make_unsigned<T>>::type;

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;
template <typename T>
constexpr bool kIsBool = std::is_same_v<T, bool>;
template <typename T>
constexpr bool kIsInteger = std::is_integral_v<T> && !kIsBool<T>;

// The element types an op's evaluate takes (the C++ types of ir/DTypes.def): its dtypes.
template <typename T>
concept Float = kIsFloat<T>;
template <typename T>
concept Number = kIsFloat<T> || kIsInteger<T>;
template <typename T>
concept Boolean = kIsBool<T>;
template <typename T>
concept Element = Number<T> || kIsBool<T>;

/// What an element can get wrong: the CPU kernels throw it as a UserError, and the generated kernels report
/// its error code (codegen/Kernel.h's kNegativeIntegerPower), which the runtime turns into the same message.
constexpr const char *kNegativeIntegerPowerMessage = "integers to negative integer powers are not allowed";

// ---- Unary ------------------------------------------------------------------------------------------------

struct Neg {
  template <Number T>
  static T evaluate(T x) {
    if constexpr (kIsFloat<T>)
      return -x;
    else
      return static_cast<T>(WrappingType<T>(0) - static_cast<WrappingType<T>>(x)); // -INT_MIN is INT_MIN
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x) {
    return ir::isFloat(dtype) ? e.b.CreateFNeg(x) : e.b.CreateSub(e.integer(x, 0), x);
  }
};

struct Abs {
  template <Number T>
  static T evaluate(T x) {
    if constexpr (kIsFloat<T>)
      return std::abs(x);
    else
      return x < 0 ? Neg::evaluate(x) : x; // abs(INT_MIN) is INT_MIN
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x) {
    return ir::isFloat(dtype) ? e.fabs(x) : e.integerAbs(x);
  }
};

struct Sqrt {
  template <Float T>
  static T evaluate(T x) {
    return std::sqrt(x);
  }
  template <typename E, typename V>
  static V *emit(E &e, DType, V *x) {
    return e.sqrt(x);
  }
};

struct Rsqrt {
  template <Float T>
  static T evaluate(T x) {
    return T(1) / std::sqrt(x);
  }
  template <typename E, typename V>
  static V *emit(E &e, DType, V *x) {
    return e.b.CreateFDiv(e.constant(x, 1), e.sqrt(x));
  }
};

/// 1 / (1 + exp(-x)), through one exp whose argument is never positive (exp of a large positive one
/// overflows).
struct Sigmoid {
  template <Float T>
  static T evaluate(T x) {
    if (x >= 0) return T(1) / (T(1) + std::exp(-x));
    T e = std::exp(x);
    return e / (T(1) + e);
  }
  template <typename E, typename V>
  static V *emit(E &e, DType, V *x) {
    V *one = e.constant(x, 1);
    V *nonNegative = e.b.CreateFCmpOGE(x, e.constant(x, 0));
    V *exp = e.math("exp", {e.b.CreateSelect(nonNegative, e.b.CreateFNeg(x), x)});
    V *denominator = e.b.CreateFAdd(one, exp);
    return e.b.CreateSelect(nonNegative, e.b.CreateFDiv(one, denominator), e.b.CreateFDiv(exp, denominator));
  }
};

/// log(1 + exp(x)), computed stably: x + log1p(exp(-x)) for positive x.
struct Softplus {
  template <Float T>
  static T evaluate(T x) {
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
  template <typename E, typename V>
  static V *emit(E &e, DType, V *x) {
    V *positive = e.b.CreateFCmpOGT(x, e.constant(x, 0));
    V *tail = e.math("log1p", {e.math("exp", {e.b.CreateSelect(positive, e.b.CreateFNeg(x), x)})});
    return e.b.CreateSelect(positive, e.b.CreateFAdd(x, tail), tail);
  }
};

/// max(x, 0); NaN and -0.0 stay.
struct Relu {
  template <Number T>
  static T evaluate(T x) {
    return x < 0 ? T(0) : x;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x) {
    V *zero = ir::isFloat(dtype) ? e.constant(x, 0) : e.integer(x, 0);
    return e.b.CreateSelect(ir::isFloat(dtype) ? e.b.CreateFCmpOLT(x, zero) : e.b.CreateICmpSLT(x, zero),
                            zero, x);
  }
};

struct Floor {
  template <Float T>
  static T evaluate(T x) {
    return std::floor(x);
  }
  template <typename E, typename V>
  static V *emit(E &e, DType, V *x) {
    return e.floor(x);
  }
};

struct Ceil {
  template <Float T>
  static T evaluate(T x) {
    return std::ceil(x);
  }
  template <typename E, typename V>
  static V *emit(E &e, DType, V *x) {
    return e.ceil(x);
  }
};

/// Half to even; an integer is whole already.
struct Round {
  template <Number T>
  static T evaluate(T x) {
    if constexpr (kIsFloat<T>)
      return std::nearbyint(x);
    else
      return x;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x) {
    return ir::isFloat(dtype) ? e.rint(x) : x;
  }
};

/// -1, 0 or 1; NaN stays NaN, and -0.0 gives 0.0.
struct Sign {
  template <Number T>
  static T evaluate(T x) {
    if constexpr (kIsFloat<T>)
      if (std::isnan(x)) return x;
    return x > 0 ? T(1) : x < 0 ? T(-1) : T(0);
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x) {
    if (!ir::isFloat(dtype)) {
      V *zero = e.integer(x, 0);
      return e.b.CreateSelect(e.b.CreateICmpSGT(x, zero), e.integer(x, 1),
                              e.b.CreateSelect(e.b.CreateICmpSLT(x, zero), e.integer(x, -1), zero));
    }
    V *zero = e.constant(x, 0);
    V *sign = e.b.CreateSelect(e.b.CreateFCmpOGT(x, zero), e.constant(x, 1),
                               e.b.CreateSelect(e.b.CreateFCmpOLT(x, zero), e.constant(x, -1), zero));
    return e.b.CreateSelect(e.b.CreateFCmpUNO(x, x), x, sign);
  }
};

struct Not {
  template <Boolean T>
  static bool evaluate(T x) {
    return !x;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType, V *x) {
    return e.b.CreateNot(x);
  }
};

/// NumPy's cast: to bool is `!= 0`; floats to integers truncate toward zero, and NaN or an out-of-range value
/// (undefined in C++) gives the minimum integer, as x86's cvttss2si and so NumPy there.
struct Cast {
  template <typename Out, typename In>
  static Out evaluate(In value) {
    if constexpr (kIsBool<Out>) {
      return value != In(0);
    } else if constexpr (std::is_integral_v<Out> && kIsFloat<In>) {
      constexpr double lowest = static_cast<double>(std::numeric_limits<Out>::min()); // -2^31 or -2^63, exact
      if (!(value >= lowest && value < -lowest)) return std::numeric_limits<Out>::min();
      return static_cast<Out>(value);
    } else {
      return static_cast<Out>(value);
    }
  }
  template <typename E, typename V>
  static V *emit(E &e, DType from, DType to, V *value) {
    if (from == to) return value;
    auto *type = e.type(to);
    if (to == DType::Bool)
      return ir::isFloat(from) ? e.b.CreateFCmpUNE(value, e.constant(value, 0))
                               : e.b.CreateICmpNE(value, e.integer(value, 0));
    if (from == DType::Bool)
      return ir::isFloat(to) ? e.b.CreateUIToFP(value, type) : e.b.CreateZExt(value, type);
    if (ir::isFloat(from) && ir::isFloat(to)) return e.b.CreateFPCast(value, type);
    if (ir::isFloat(to)) return e.b.CreateSIToFP(value, type);
    if (!ir::isFloat(from)) return e.b.CreateSExtOrTrunc(value, type);
    // fptosi is poison outside the range, where it is never selected.
    double lowest = ir::visitDType(to, [](auto zero) {
      if constexpr (kIsInteger<decltype(zero)>)
        return static_cast<double>(std::numeric_limits<decltype(zero)>::min());
      return 0.0;
    });
    V *inRange = e.b.CreateAnd(e.b.CreateFCmpOGE(value, e.constant(value, lowest)),
                               e.b.CreateFCmpOLT(value, e.constant(value, -lowest)));
    return e.b.CreateSelect(inRange, e.b.CreateFPToSI(value, type), e.minimumInteger(type));
  }
};

// ---- Binary -----------------------------------------------------------------------------------------------
// Comparisons, maximum and minimum take every dtype; bool orders false < true.

struct Lt {
  template <Element T>
  static bool evaluate(T x, T y) {
    return x < y;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    if (ir::isFloat(dtype)) return e.b.CreateFCmpOLT(x, y);
    return dtype == DType::Bool ? e.b.CreateICmpULT(x, y) : e.b.CreateICmpSLT(x, y);
  }
};

struct Le {
  template <Element T>
  static bool evaluate(T x, T y) {
    return x <= y;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    if (ir::isFloat(dtype)) return e.b.CreateFCmpOLE(x, y);
    return dtype == DType::Bool ? e.b.CreateICmpULE(x, y) : e.b.CreateICmpSLE(x, y);
  }
};

struct Gt {
  template <Element T>
  static bool evaluate(T x, T y) {
    return x > y;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    if (ir::isFloat(dtype)) return e.b.CreateFCmpOGT(x, y);
    return dtype == DType::Bool ? e.b.CreateICmpUGT(x, y) : e.b.CreateICmpSGT(x, y);
  }
};

struct Ge {
  template <Element T>
  static bool evaluate(T x, T y) {
    return x >= y;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    if (ir::isFloat(dtype)) return e.b.CreateFCmpOGE(x, y);
    return dtype == DType::Bool ? e.b.CreateICmpUGE(x, y) : e.b.CreateICmpSGE(x, y);
  }
};

struct Eq {
  template <Element T>
  static bool evaluate(T x, T y) {
    return x == y;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    return ir::isFloat(dtype) ? e.b.CreateFCmpOEQ(x, y) : e.b.CreateICmpEQ(x, y);
  }
};

/// NaN != anything.
struct Ne {
  template <Element T>
  static bool evaluate(T x, T y) {
    return x != y;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    return ir::isFloat(dtype) ? e.b.CreateFCmpUNE(x, y) : e.b.CreateICmpNE(x, y);
  }
};

/// NumPy's maximum: a NaN first operand wins, else `x >= y ? x : y` (so a NaN second operand wins too, and
/// maximum(-0.0, 0.0) is -0.0: no LLVM maxnum/maximum intrinsic has exactly these rules).
struct Maximum {
  template <Element T>
  static T evaluate(T x, T y) {
    if constexpr (kIsFloat<T>)
      if (std::isnan(x)) return x;
    return x >= y ? x : y;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    if (!ir::isFloat(dtype)) return e.b.CreateSelect(Ge::emit(e, dtype, x, y), x, y);
    return e.b.CreateSelect(e.b.CreateFCmpUNO(x, x), x, e.b.CreateSelect(e.b.CreateFCmpOGE(x, y), x, y));
  }
};

struct Minimum {
  template <Element T>
  static T evaluate(T x, T y) {
    if constexpr (kIsFloat<T>)
      if (std::isnan(x)) return x;
    return x <= y ? x : y;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    if (!ir::isFloat(dtype)) return e.b.CreateSelect(Le::emit(e, dtype, x, y), x, y);
    return e.b.CreateSelect(e.b.CreateFCmpUNO(x, x), x, e.b.CreateSelect(e.b.CreateFCmpOLE(x, y), x, y));
  }
};

// Arithmetic wraps around on integers (LLVM's add, sub and mul without nsw do, as unsigned C++ arithmetic).
// On bool, NumPy's + is `or` and * is `and`: the front end writes those ops.

struct Add {
  template <Number T>
  static T evaluate(T x, T y) {
    if constexpr (kIsFloat<T>)
      return x + y;
    else
      return static_cast<T>(static_cast<WrappingType<T>>(x) + static_cast<WrappingType<T>>(y));
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    return ir::isFloat(dtype) ? e.b.CreateFAdd(x, y) : e.b.CreateAdd(x, y);
  }
};

struct Sub {
  template <Number T>
  static T evaluate(T x, T y) {
    if constexpr (kIsFloat<T>)
      return x - y;
    else
      return static_cast<T>(static_cast<WrappingType<T>>(x) - static_cast<WrappingType<T>>(y));
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    return ir::isFloat(dtype) ? e.b.CreateFSub(x, y) : e.b.CreateSub(x, y);
  }
};

struct Mul {
  template <Number T>
  static T evaluate(T x, T y) {
    if constexpr (kIsFloat<T>)
      return x * y;
    else
      return static_cast<T>(static_cast<WrappingType<T>>(x) * static_cast<WrappingType<T>>(y));
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    return ir::isFloat(dtype) ? e.b.CreateFMul(x, y) : e.b.CreateMul(x, y);
  }
};

struct Div {
  template <Float T>
  static T evaluate(T x, T y) {
    return x / y;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType, V *x, V *y) {
    return e.b.CreateFDiv(x, y);
  }
};

/// Python's modulo: the result has the divisor's sign. For floats NumPy's npy_divmod: fmod, then the
/// divisor's sign; a zero divisor gives fmod's NaN. For integers, modulo 0 and -1 are 0 (NumPy gives 0 with a
/// warning; INT_MIN % -1 would overflow).
struct Mod {
  template <Number T>
  static T evaluate(T x, T y) {
    if constexpr (kIsFloat<T>) {
      T mod = std::fmod(x, y);
      if (y == 0) return mod;
      if (mod == 0) return std::copysign(T(0), y);
      return (y < 0) != (mod < 0) ? mod + y : mod;
    } else {
      if (y == 0 || y == -1) return 0;
      T mod = x % y;
      return mod != 0 && (mod < 0) != (y < 0) ? mod + y : mod;
    }
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *y) {
    if (ir::isFloat(dtype)) {
      V *zero = e.constant(x, 0);
      V *mod = e.fmod(x, y);
      V *signedZero = e.copysign(zero, y);
      V *signsDiffer = e.b.CreateXor(e.b.CreateFCmpOLT(y, zero), e.b.CreateFCmpOLT(mod, zero));
      V *adjusted = e.b.CreateSelect(signsDiffer, e.b.CreateFAdd(mod, y), mod);
      return e.b.CreateSelect(e.b.CreateFCmpOEQ(y, zero), mod,
                              e.b.CreateSelect(e.b.CreateFCmpOEQ(mod, zero), signedZero, adjusted));
    }
    // srem is undefined for the divisors 0 and -1 even when its result is not selected: it divides by 1.
    V *zero = e.integer(x, 0);
    V *trivial = e.b.CreateOr(e.b.CreateICmpEQ(y, zero), e.b.CreateICmpEQ(y, e.integer(y, -1)));
    V *mod = e.b.CreateSRem(x, e.b.CreateSelect(trivial, e.integer(y, 1), y));
    V *signsDiffer = e.b.CreateXor(e.b.CreateICmpSLT(mod, zero), e.b.CreateICmpSLT(y, zero));
    V *adjust = e.b.CreateAnd(e.b.CreateICmpNE(mod, zero), signsDiffer);
    return e.b.CreateSelect(trivial, zero, e.b.CreateSelect(adjust, e.b.CreateAdd(mod, y), mod));
  }
};

/// NumPy's floor_divide: the quotient rounded toward minus infinity, consistent with Mod (a == b * (a // b) +
/// a % b). Floats as NumPy's npy_floor_divide: a zero divisor gives a / b (an infinity or NaN); otherwise
/// (a - fmod(a, b)) / b, one less where the remainder's sign differs from the divisor's, then floored
/// (rounded up where that division fell just short of a whole number), and a zero quotient takes the sign of
/// a / b. Integers: a zero divisor gives 0 (NumPy warns), and INT_MIN // -1 wraps to INT_MIN.
struct FloorDiv {
  template <Number T>
  static T evaluate(T a, T b) {
    if constexpr (kIsFloat<T>) {
      if (b == 0) return a / b;
      T mod = std::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
      if (div == 0) return std::copysign(T(0), a / b);
      T floor = std::floor(div);
      return div - floor > T(0.5) ? floor + T(1) : floor;
    } else {
      if (b == 0) return 0;
      if (b == -1) return Neg::evaluate(a);
      T quotient = a / b;
      return a % b != 0 && (a < 0) != (b < 0) ? quotient - 1 : quotient;
    }
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *a, V *b) {
    if (ir::isFloat(dtype)) {
      V *zero = e.constant(a, 0), *one = e.constant(a, 1);
      V *mod = e.fmod(a, b);
      V *div = e.b.CreateFDiv(e.b.CreateFSub(a, mod), b);
      V *signsDiffer = e.b.CreateXor(e.b.CreateFCmpOLT(b, zero), e.b.CreateFCmpOLT(mod, zero));
      div = e.b.CreateSelect(e.b.CreateAnd(e.b.CreateFCmpUNE(mod, zero), signsDiffer),
                             e.b.CreateFSub(div, one), div);
      V *floor = e.floor(div);
      V *rounded = e.b.CreateSelect(e.b.CreateFCmpOGT(e.b.CreateFSub(div, floor), e.constant(a, 0.5)),
                                    e.b.CreateFAdd(floor, one), floor);
      V *quotient = e.b.CreateFDiv(a, b);
      V *result = e.b.CreateSelect(e.b.CreateFCmpOEQ(div, zero), e.copysign(zero, quotient), rounded);
      return e.b.CreateSelect(e.b.CreateFCmpOEQ(b, zero), quotient, result);
    }
    // sdiv and srem are undefined for the divisors 0 and -1 (INT_MIN) even when not selected: they divide
    // by 1.
    V *zero = e.integer(a, 0);
    V *isZero = e.b.CreateICmpEQ(b, zero), *isMinusOne = e.b.CreateICmpEQ(b, e.integer(b, -1));
    V *divisor = e.b.CreateSelect(e.b.CreateOr(isZero, isMinusOne), e.integer(b, 1), b);
    V *quotient = e.b.CreateSDiv(a, divisor), *remainder = e.b.CreateSRem(a, divisor);
    V *signsDiffer = e.b.CreateXor(e.b.CreateICmpSLT(a, zero), e.b.CreateICmpSLT(b, zero));
    V *adjust = e.b.CreateAnd(e.b.CreateICmpNE(remainder, zero), signsDiffer);
    quotient = e.b.CreateSelect(adjust, e.b.CreateSub(quotient, e.integer(a, 1)), quotient);
    return e.b.CreateSelect(isZero, zero, e.b.CreateSelect(isMinusOne, e.b.CreateSub(zero, a), quotient));
  }
};

/// Floats: libm's pow. Integers: exponentiation by squaring in wrapping arithmetic; a negative exponent is an
/// error, as NumPy's.
struct Pow {
  template <Number T>
  static T evaluate(T base, T exponent) {
    if constexpr (kIsFloat<T>) {
      return std::pow(base, exponent);
    } else {
      if (exponent < 0) throw ir::UserError(kNegativeIntegerPowerMessage);
      using U = WrappingType<T>;
      U result = 1, factor = static_cast<U>(base);
      for (U e = static_cast<U>(exponent); e != 0; e >>= 1) {
        if (e & 1) result *= factor;
        factor *= factor;
      }
      return static_cast<T>(result);
    }
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *base, V *exponent) {
    return ir::isFloat(dtype) ? e.math("pow", {base, exponent}) : e.integerPower(base, exponent);
  }
};

struct And {
  template <Boolean T>
  static bool evaluate(T x, T y) {
    return x && y;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType, V *x, V *y) {
    return e.b.CreateAnd(x, y);
  }
};

struct Or {
  template <Boolean T>
  static bool evaluate(T x, T y) {
    return x || y;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType, V *x, V *y) {
    return e.b.CreateOr(x, y);
  }
};

// ---- Three operands ---------------------------------------------------------------------------------------

/// where(condition, a, b): the condition is bool, a and b of the result's dtype.
struct Where {
  template <Element T>
  static T evaluate(bool condition, T a, T b) {
    return condition ? a : b;
  }
  template <typename E, typename V>
  static V *emit(E &e, DType, V *condition, V *a, V *b) {
    return e.b.CreateSelect(condition, a, b);
  }
};

/// minimum(maximum(x, lo), hi), NaN propagating.
struct Clip {
  template <Element T>
  static T evaluate(T x, T lo, T hi) {
    return Minimum::evaluate(Maximum::evaluate(x, lo), hi);
  }
  template <typename E, typename V>
  static V *emit(E &e, DType dtype, V *x, V *lo, V *hi) {
    return Minimum::emit(e, dtype, Maximum::emit(e, dtype, x, lo), hi);
  }
};

/// Whether an op's scalar function takes operands of C++ type T (every elementwise op takes some dtypes only:
/// Ops.def's operands column, which the front end enforces).
template <typename Op, typename T>
constexpr bool kTakes = requires(T x) {
  Op::evaluate(x);
}
|| requires(T x) {
  Op::evaluate(x, x);
}
|| requires(T x) {
  Op::evaluate(x, x, x);
};

} // namespace tg::scalar
