// The parts of the kernel API that need no LLVM: kernel names and error messages.
#include "codegen/Kernel.h"

#include <cstdio>
#include <cstring>

namespace tg::codegen {

namespace {

/// FNV-1a over the bytes the name depends on. Not ScalarGraph::hash: that one may change with the standard
/// library, while a kernel name must be the same on every run and machine (it keys disk caches).
class StableHash {
public:
  template <typename T>
  void add(T value) {
    unsigned char bytes[sizeof value];
    std::memcpy(bytes, &value, sizeof value);
    for (unsigned char byte : bytes)
      state = (state ^ byte) * 0x100000001b3ULL;
  }
  uint64_t value() const { return state; }

private:
  uint64_t state = 0xcbf29ce484222325ULL;
};

} // namespace

const char *kernelErrorMessage(int32_t code) {
  switch (code) {
  case kKernelOk:
    return "no error";
  case kNegativeIntegerPower:
    return "integers to negative integer powers are not allowed";
  default:
    return "unknown kernel error";
  }
}

ir::DType kernelOutputDtype(const ir::ScalarGraph &body) {
  ir::DType input = body.resultDtype();
  if (!body.reduction) return input;
  switch (*body.reduction) {
  case ir::OpKind::Sum:
  case ir::OpKind::Prod:
    return ir::isFloat(input) ? input : ir::DType::I64;
  case ir::OpKind::Mean:
    return ir::isFloat(input) ? input : ir::DType::F64;
  case ir::OpKind::Any:
  case ir::OpKind::All:
    return ir::DType::Bool;
  default:
    return input;
  }
}

std::vector<InnerStride> innerStridePattern(const std::vector<int64_t> &strides, size_t numInputs,
                                            size_t rank) {
  std::vector<InnerStride> pattern(numInputs, InnerStride::Zero);
  if (rank == 0) return pattern;
  for (size_t k = 0; k < numInputs; ++k) {
    int64_t stride = strides[k * rank + rank - 1];
    pattern[k] = stride == 1 ? InnerStride::Unit : stride == 0 ? InnerStride::Zero : InnerStride::Any;
  }
  return pattern;
}

std::string kernelName(const KernelSpec &spec) {
  StableHash hash;
  hash.add(static_cast<uint8_t>(spec.layout));
  hash.add(static_cast<uint64_t>(spec.body->numInputs()));
  for (ir::DType dtype : spec.body->inputDtypes)
    hash.add(static_cast<uint8_t>(dtype));
  for (const ir::ScalarInstr &instr : spec.body->body) {
    hash.add(static_cast<uint16_t>(instr.kind));
    hash.add(static_cast<uint8_t>(instr.dtype));
    hash.add(static_cast<uint64_t>(instr.operands.size()));
    for (uint32_t operand : instr.operands)
      hash.add(operand);
    hash.add(instr.immediate); // by bits: NaN and -0.0 are constants of their own
  }
  hash.add(
      static_cast<uint16_t>(spec.body->reduction ? static_cast<uint16_t>(*spec.body->reduction) + 1 : 0));
  for (InnerStride stride : spec.innerStrides) // nothing when empty: names of unspecialized kernels stay
    hash.add(static_cast<uint8_t>(stride));
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(hash.value()));
  return std::string("tgc_fused_") + digits;
}

} // namespace tg::codegen
