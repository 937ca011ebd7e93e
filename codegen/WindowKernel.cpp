// The window kernels (Kernel.h): im2col and col2im, the column matrices of a convolution on a device, and
// max pooling with its gradient, one body each placed in a PTX entry or a simulated-device function
// (GridStrideKernel.cpp).
#include "codegen/Kernel.h"
#include "codegen/KernelBuilder.h"
#include "codegen/ScalarEmitter.h"

#include <functional>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace tg::codegen {

namespace {

using ir::DType;
using llvm::Value;

/// WindowArgs' fields, in their order (each 8 bytes: the struct is the kernel's parameter buffer).
enum Field {
  kCount,
  kOutput,
  kInput,
  kSecond,
  kImages,
  kChannels,
  kInH,
  kInW,
  kKH,
  kKW,
  kOutH,
  kOutW,
  kStrideH,
  kStrideW,
  kDilationH,
  kDilationW,
  kPadTop,
  kPadLeft,
  kFields
};
std::vector<ParameterKind> windowParameters() {
  std::vector<ParameterKind> kinds(kFields, ParameterKind::Integer);
  kinds[kOutput] = kinds[kInput] = kinds[kSecond] = ParameterKind::Pointer;
  return kinds;
}
static_assert(kFields * 8 == sizeof(WindowArgs), "every WindowArgs field has its parameter");

/// The emitting state of one element: the builder, the parameters, and the control flow and locals the
/// bodies share.
struct Emitter {
  llvm::IRBuilder<> &b;
  const std::vector<Value *> &in;
  DType dtype;

  llvm::Type *element() { return memoryType(b.getContext(), dtype); }
  Value *zero() { return llvm::Constant::getNullValue(element()); }
  Value *field(Field f) { return in[f]; }
  Value *i64(int64_t value) { return b.getInt64(value); }

  /// A local variable (an alloca of the entry block, which the optimizer makes a register), set to `initial`.
  llvm::AllocaInst *local(llvm::Type *type, Value *initial) {
    llvm::BasicBlock &entry = b.GetInsertBlock()->getParent()->getEntryBlock();
    llvm::IRBuilder<> atEntry(&entry, entry.begin());
    llvm::AllocaInst *variable = atEntry.CreateAlloca(type);
    b.CreateStore(initial, variable);
    return variable;
  }

  /// for (k = 0; k < count; ++k) body(k), continuing after the loop.
  void loop(Value *count, const std::function<void(Value *)> &body) {
    llvm::Function *function = b.GetInsertBlock()->getParent();
    llvm::BasicBlock *before = b.GetInsertBlock();
    llvm::BasicBlock *head = llvm::BasicBlock::Create(b.getContext(), "w.loop", function);
    llvm::BasicBlock *done = llvm::BasicBlock::Create(b.getContext(), "w.done", function);
    b.CreateCondBr(b.CreateICmpSGT(count, i64(0)), head, done);
    b.SetInsertPoint(head);
    llvm::PHINode *k = b.CreatePHI(b.getInt64Ty(), 2, "k");
    k->addIncoming(i64(0), before);
    body(k);
    Value *next = b.CreateAdd(k, i64(1));
    k->addIncoming(next, b.GetInsertBlock());
    b.CreateCondBr(b.CreateICmpSLT(next, count), head, done);
    b.SetInsertPoint(done);
  }

  /// if (condition) body(), continuing after it.
  void when(Value *condition, const std::function<void()> &body) {
    llvm::Function *function = b.GetInsertBlock()->getParent();
    llvm::BasicBlock *then = llvm::BasicBlock::Create(b.getContext(), "w.then", function);
    llvm::BasicBlock *after = llvm::BasicBlock::Create(b.getContext(), "w.after", function);
    b.CreateCondBr(condition, then, after);
    b.SetInsertPoint(then);
    body();
    b.CreateBr(after);
    b.SetInsertPoint(after);
  }

  Value *within(Value *value, Value *size) {
    return b.CreateAnd(b.CreateICmpSGE(value, i64(0)), b.CreateICmpSLT(value, size));
  }

  /// The input row (column) that output row `oy` (column `ox`) reads at kernel row `ky` (column `kx`).
  Value *row(Value *oy, Value *ky) {
    return b.CreateAdd(b.CreateSub(b.CreateMul(oy, field(kStrideH)), field(kPadTop)),
                       b.CreateMul(ky, field(kDilationH)));
  }
  Value *column(Value *ox, Value *kx) {
    return b.CreateAdd(b.CreateSub(b.CreateMul(ox, field(kStrideW)), field(kPadLeft)),
                       b.CreateMul(kx, field(kDilationW)));
  }

  /// The output row (column) whose window reads input row `iy` (column `ix`) at kernel row `ky` (column
  /// `kx`), and whether there is one: the reverse of row(), false where the stride skips it or it falls
  /// outside the output.
  std::pair<Value *, Value *> outputRow(Value *iy, Value *ky) {
    return reverse(iy, ky, kPadTop, kDilationH, kStrideH, kOutH);
  }
  std::pair<Value *, Value *> outputColumn(Value *ix, Value *kx) {
    return reverse(ix, kx, kPadLeft, kDilationW, kStrideW, kOutW);
  }
  std::pair<Value *, Value *> reverse(Value *at, Value *k, Field pad, Field dilation, Field stride,
                                      Field size) {
    Value *t = b.CreateSub(b.CreateAdd(at, field(pad)), b.CreateMul(k, field(dilation)));
    Value *nonNegative = b.CreateICmpSGE(t, i64(0));
    Value *safe = b.CreateSelect(nonNegative, t, i64(0)); // the division of a negative t is never used
    Value *out = b.CreateSDiv(safe, field(stride));
    Value *exact = b.CreateICmpEQ(b.CreateSRem(safe, field(stride)), i64(0));
    return {out, b.CreateAnd(b.CreateAnd(nonNegative, exact), b.CreateICmpSLT(out, field(size)))};
  }

  Value *load(Field array, Value *index) {
    return b.CreateLoad(element(), b.CreateGEP(element(), field(array), index));
  }
  void store(Value *value, Value *index) {
    b.CreateStore(value, b.CreateGEP(element(), field(kOutput), index));
  }
  Value *add(Value *x, Value *y) { return b.CreateFAdd(x, y); } // the bodies that sum take floats only

  /// The place in its plane (iy * inW + ix) of the first maximum of window (oy, ox) of the plane of x
  /// starting at `plane`, -1 for a window of padding only, and the value there: runtime/ConvKernels.cpp's
  /// windowMaximum, a NaN winning at once.
  std::pair<Value *, Value *> windowMaximum(Value *plane, Value *oy, Value *ox) {
    llvm::AllocaInst *best = local(b.getInt64Ty(), i64(-1)), *bestValue = local(element(), zero());
    loop(field(kKH), [&](Value *ky) {
      Value *iy = row(oy, ky);
      Value *rowInside = within(iy, field(kInH));
      loop(field(kKW), [&](Value *kx) {
        Value *ix = column(ox, kx);
        Value *inside = b.CreateAnd(rowInside, within(ix, field(kInW)));
        Value *place = b.CreateAdd(b.CreateMul(iy, field(kInW)), ix);
        Value *value = load(kInput, b.CreateSelect(inside, b.CreateAdd(plane, place), i64(0)));
        Value *current = b.CreateLoad(element(), bestValue);
        Value *first = b.CreateICmpSLT(b.CreateLoad(b.getInt64Ty(), best), i64(0));
        Value *better;
        if (ir::isFloat(dtype)) { // a NaN replaces anything but a NaN, and nothing replaces one
          Value *nan = b.CreateFCmpUNO(value, value), *currentNan = b.CreateFCmpUNO(current, current);
          better = b.CreateAnd(b.CreateNot(currentNan), b.CreateOr(b.CreateFCmpOGT(value, current), nan));
        } else {
          better = b.CreateICmpSGT(value, current);
        }
        Value *take = b.CreateAnd(inside, b.CreateOr(first, better));
        b.CreateStore(b.CreateSelect(take, place, b.CreateLoad(b.getInt64Ty(), best)), best);
        b.CreateStore(b.CreateSelect(take, value, current), bestValue);
      });
    });
    return {b.CreateLoad(b.getInt64Ty(), best), b.CreateLoad(element(), bestValue)};
  }
};

/// Splits a C-order index over sizes (outer first) into one index per size.
std::vector<Value *> unravel(llvm::IRBuilder<> &b, Value *index, const std::vector<Value *> &sizes) {
  std::vector<Value *> parts(sizes.size());
  for (size_t d = sizes.size(); d-- > 1;) {
    parts[d] = b.CreateSRem(index, sizes[d]);
    index = b.CreateSDiv(index, sizes[d]);
  }
  parts[0] = index;
  return parts;
}

/// col[(c * kH + ky) * kW + kx, (img * outH + oy) * outW + ox] = x[img, c, iy, ix], 0 in the padding.
void emitIm2col(Emitter &e, Value *i) {
  llvm::IRBuilder<> &b = e.b;
  auto at = unravel(
      b, i,
      {e.field(kChannels), e.field(kKH), e.field(kKW), e.field(kImages), e.field(kOutH), e.field(kOutW)});
  Value *c = at[0], *ky = at[1], *kx = at[2], *img = at[3], *oy = at[4], *ox = at[5];
  Value *iy = e.row(oy, ky), *ix = e.column(ox, kx);
  Value *inside = b.CreateAnd(e.within(iy, e.field(kInH)), e.within(ix, e.field(kInW)));
  Value *source = b.CreateAdd(
      b.CreateMul(
          b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(img, e.field(kChannels)), c), e.field(kInH)), iy),
          e.field(kInW)),
      ix);
  Value *value = e.load(kInput, b.CreateSelect(inside, source, e.i64(0)));
  e.store(b.CreateSelect(inside, value, e.zero()), i);
}

/// dx[img, c, iy, ix] = the sum of the col elements im2col fills from (iy, ix), window place by place.
void emitCol2im(Emitter &e, Value *i) {
  llvm::IRBuilder<> &b = e.b;
  auto at = unravel(b, i, {e.field(kImages), e.field(kChannels), e.field(kInH), e.field(kInW)});
  Value *img = at[0], *c = at[1], *iy = at[2], *ix = at[3];
  Value *columns = b.CreateMul(b.CreateMul(e.field(kImages), e.field(kOutH)), e.field(kOutW));
  llvm::AllocaInst *sum = e.local(e.element(), e.zero());
  e.loop(e.field(kKH), [&](Value *ky) {
    auto [oy, rowHit] = e.outputRow(iy, ky);
    e.loop(e.field(kKW), [&](Value *kx) {
      auto [ox, columnHit] = e.outputColumn(ix, kx);
      Value *hit = b.CreateAnd(rowHit, columnHit);
      Value *colRow =
          b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(c, e.field(kKH)), ky), e.field(kKW)), kx);
      Value *colColumn =
          b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(img, e.field(kOutH)), oy), e.field(kOutW)), ox);
      Value *place = b.CreateAdd(b.CreateMul(colRow, columns), colColumn);
      Value *value = e.load(kInput, b.CreateSelect(hit, place, e.i64(0)));
      Value *current = b.CreateLoad(e.element(), sum);
      b.CreateStore(b.CreateSelect(hit, e.add(current, value), current), sum);
    });
  });
  e.store(b.CreateLoad(e.element(), sum), i);
}

/// y[img, c, oy, ox] = the window's first maximum (max_pool), or v there (max_pool_gather); 0 for a window
/// of padding only.
void emitMaxPool(Emitter &e, Value *i, bool gather) {
  llvm::IRBuilder<> &b = e.b;
  auto at =
      unravel(b, i, {b.CreateMul(e.field(kImages), e.field(kChannels)), e.field(kOutH), e.field(kOutW)});
  Value *plane = b.CreateMul(at[0], b.CreateMul(e.field(kInH), e.field(kInW)));
  auto [best, value] = e.windowMaximum(plane, at[1], at[2]);
  Value *found = b.CreateICmpSGE(best, e.i64(0));
  if (gather) value = e.load(kSecond, b.CreateAdd(plane, b.CreateSelect(found, best, e.i64(0))));
  e.store(b.CreateSelect(found, value, e.zero()), i);
}

/// dx[img, c, iy, ix] = the sum of gy over the windows whose first maximum is (iy, ix), in the CPU's order:
/// windows by output row, then column (the kernel's places backwards).
void emitMaxPoolGrad(Emitter &e, Value *i) {
  llvm::IRBuilder<> &b = e.b;
  auto at = unravel(b, i, {b.CreateMul(e.field(kImages), e.field(kChannels)), e.field(kInH), e.field(kInW)});
  Value *planeIndex = at[0], *iy = at[1], *ix = at[2];
  Value *plane = b.CreateMul(planeIndex, b.CreateMul(e.field(kInH), e.field(kInW)));
  Value *here = b.CreateAdd(b.CreateMul(iy, e.field(kInW)), ix);
  Value *gradientPlane = b.CreateMul(planeIndex, b.CreateMul(e.field(kOutH), e.field(kOutW)));
  llvm::AllocaInst *sum = e.local(e.element(), e.zero());
  e.loop(e.field(kKH), [&](Value *a) {
    Value *ky = b.CreateSub(b.CreateSub(e.field(kKH), e.i64(1)), a);
    auto [oy, rowHit] = e.outputRow(iy, ky);
    e.when(rowHit, [&] {
      e.loop(e.field(kKW), [&](Value *c) {
        Value *kx = b.CreateSub(b.CreateSub(e.field(kKW), e.i64(1)), c);
        auto [ox, columnHit] = e.outputColumn(ix, kx);
        e.when(columnHit, [&] {
          Value *best = e.windowMaximum(plane, oy, ox).first;
          e.when(b.CreateICmpEQ(best, here), [&] {
            Value *gradient =
                e.load(kSecond, b.CreateAdd(gradientPlane, b.CreateAdd(b.CreateMul(oy, e.field(kOutW)), ox)));
            b.CreateStore(e.add(b.CreateLoad(e.element(), sum), gradient), sum);
          });
        });
      });
    });
  });
  e.store(b.CreateLoad(e.element(), sum), i);
}

GridStrideBody windowBody(WindowKernel kind, DType dtype) {
  return [=](llvm::IRBuilder<> &b, const std::vector<Value *> &in, Value *i) {
    Emitter e{b, in, dtype};
    switch (kind) {
    case WindowKernel::Im2col:
      return emitIm2col(e, i);
    case WindowKernel::Col2im:
      return emitCol2im(e, i);
    case WindowKernel::MaxPool:
      return emitMaxPool(e, i, false);
    case WindowKernel::MaxPoolGather:
      return emitMaxPool(e, i, true);
    case WindowKernel::MaxPoolGrad:
      return emitMaxPoolGrad(e, i);
    }
  };
}

} // namespace

llvm::Function *buildWindowPtxKernel(llvm::Module &module, WindowKernel kind, DType dtype,
                                     const std::string &name) {
  return buildGridStridePtxKernel(module, name, windowParameters(), kCount, windowBody(kind, dtype));
}

std::string emitWindowPtx(WindowKernel kind, DType dtype, const std::string &gpuArch) {
  std::string name = windowKernelName(kind, dtype);
  return emitPtxModule({name}, gpuArch,
                       [&](llvm::Module &module) { buildWindowPtxKernel(module, kind, dtype, name); });
}

SimWindowKernel compileSimWindowKernel(WindowKernel kind, DType dtype) {
  std::string name = windowKernelName(kind, dtype) + "_sim";
  return reinterpret_cast<SimWindowKernel>(compileHostFunction(name, [&](llvm::Module &module) {
    buildGridStrideSimKernel(module, name, windowParameters(), kCount, windowBody(kind, dtype));
  }));
}

} // namespace tg::codegen
