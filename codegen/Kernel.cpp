// The parts of the kernel API that need no LLVM: kernel names, error messages, the rule that picks a kernel's
// layout, the walk over planes that runs strided host kernels, and the process's kernel supply
// (KernelSupply.h).
#include "codegen/Kernel.h"

#include "codegen/KernelSupply.h"
#include "codegen/ScalarOps.h"
#include "ir/Assert.h"
#include "ir/SmallVector.h"

#include <algorithm>
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
    return scalar::kNegativeIntegerPowerMessage;
  default:
    return code >= kIndexOutOfRange ? "an index is out of bounds for the axis it indexes"
                                    : "unknown kernel error";
  }
}

ir::UserError kernelError(const ir::ScalarGraph &body, int32_t code) {
  ir::UserError error(kernelErrorMessage(code));
  if (code >= kIndexOutOfRange) error.loc = body.gatherLoc(static_cast<size_t>(code - kIndexOutOfRange));
  return error;
}

ir::DType kernelOutputDtype(const ir::ScalarGraph &body) {
  ir::DType input = body.resultDtype();
  return body.reduction ? ir::resultDType(*body.reduction, input) : input;
}

namespace {

/// An iteration space and each input's strides along it (input-major: strides[k * rank + axis]).
struct Space {
  ir::SmallVector<int64_t, 8> shape;
  ir::SmallVector<int64_t, 64> strides;
};

/// The space of `args` with its outer size-1 axes dropped and adjacent axes merged where every input's
/// strides allow it (stride along the outer = stride along the inner times the inner's size): the same
/// elements in the same C order over as few axes as possible, so that a strided kernel's planes are as large
/// as they can be ([n, 2, 2] + [2] is one plane of n * 2 rows). The last axis keeps its strides, which the
/// kernel may be specialized for (KernelSpec::innerStrides).
Space coalesced(const KernelArgs &args, size_t numInputs) {
  auto rank = static_cast<size_t>(args.rank);
  ir::SmallVector<int64_t, 64> strides(numInputs * rank); // input-major, `rank` apart, over the axes so far
  Space space;
  for (size_t axis = 0; axis < rank; ++axis) {
    if (args.shape[axis] == 1 && axis + 1 != rank) continue;
    size_t at = space.shape.size();
    bool merges = at > 0;
    for (size_t k = 0; k < numInputs && merges; ++k)
      merges = strides[k * rank + at - 1] == args.strides[k * rank + axis] * args.shape[axis];
    if (merges) {
      space.shape.back() *= args.shape[axis];
      for (size_t k = 0; k < numInputs; ++k)
        strides[k * rank + at - 1] = args.strides[k * rank + axis];
      continue;
    }
    space.shape.push_back(args.shape[axis]);
    for (size_t k = 0; k < numInputs; ++k)
      strides[k * rank + at] = args.strides[k * rank + axis];
  }
  size_t kept = space.shape.size();
  space.strides.resize(numInputs * kept);
  for (size_t k = 0; k < numInputs; ++k)
    for (size_t axis = 0; axis < kept; ++axis)
      space.strides[k * kept + axis] = strides[k * rank + axis];
  return space;
}

} // namespace

int32_t runHostKernel(const KernelSpec &spec, HostKernel kernel, const KernelArgs &args, int64_t begin,
                      int64_t end) {
  if (spec.layout == Layout::Contiguous || spec.body->reduction) return kernel(&args, begin, end);
  if (begin >= end) return kKernelOk;        // also every range of an empty space
  size_t numInputs = spec.body->numArrays(); // the extra outputs are walked like inputs
  Space space = coalesced(args, numInputs);
  size_t rank = space.shape.size();
  auto stride = [&](size_t k, size_t axis) { return space.strides[k * rank + axis]; };
  // The kernel sees one plane, the last two axes, as a rank-2 space; below rank 2 the missing axes have size
  // 1 and stride 0.
  int64_t planeShape[2] = {rank >= 2 ? space.shape[rank - 2] : 1, rank >= 1 ? space.shape[rank - 1] : 1};
  size_t gatherWords = 2 * spec.body->gatheredAxes(); // after the strides, as they follow args'
  ir::SmallVector<int64_t, 32> planeStrides(2 * numInputs + gatherWords, 0);
  for (size_t k = 0; k < numInputs; ++k) {
    if (rank >= 2) planeStrides[2 * k] = stride(k, rank - 2);
    if (rank >= 1) planeStrides[2 * k + 1] = stride(k, rank - 1);
  }
  const int64_t *words = args.strides + numInputs * static_cast<size_t>(args.rank);
  std::copy(words, words + gatherWords, planeStrides.begin() + static_cast<ptrdiff_t>(2 * numInputs));
  int64_t planeSize = planeShape[0] * planeShape[1];
  // The outer multi-index of begin's plane, and each input's element offset of that plane's start.
  ir::SmallVector<int64_t, 8> index(rank > 2 ? rank - 2 : 0);
  ir::SmallVector<int64_t, 16> offsets(numInputs, 0);
  int64_t plane = begin / planeSize, planeStart = begin % planeSize;
  for (size_t axis = index.size(); axis-- > 0;) {
    index[axis] = plane % space.shape[axis];
    plane /= space.shape[axis];
    for (size_t k = 0; k < numInputs; ++k)
      offsets[k] += index[axis] * stride(k, axis);
  }
  ir::SmallVector<const void *, 16> planeInputs(numInputs);
  KernelArgs planeArgs = args;
  planeArgs.rank = 2;
  planeArgs.shape = planeShape;
  planeArgs.strides = planeStrides.data();
  planeArgs.inputs = planeInputs.data();
  auto outputBytes = static_cast<int64_t>(ir::dtypeSize(kernelOutputDtype(*spec.body)));
  for (int64_t position = begin; position < end;) {
    int64_t length = std::min(planeSize - planeStart, end - position);
    for (size_t k = 0; k < numInputs; ++k)
      planeInputs[k] = static_cast<const char *>(args.inputs[k]) +
                       offsets[k] * static_cast<int64_t>(ir::dtypeSize(spec.body->arrayDtype(k)));
    planeArgs.output = static_cast<char *>(args.output) + (position - planeStart) * outputBytes;
    if (int32_t code = kernel(&planeArgs, planeStart, planeStart + length); code != kKernelOk) return code;
    position += length;
    planeStart = 0;
    // The next plane: the outer index advances like an odometer, its last axis fastest.
    for (size_t axis = index.size(); axis-- > 0;) {
      for (size_t k = 0; k < numInputs; ++k)
        offsets[k] += stride(k, axis);
      if (++index[axis] < space.shape[axis]) break;
      for (size_t k = 0; k < numInputs; ++k)
        offsets[k] -= stride(k, axis) * space.shape[axis];
      index[axis] = 0;
    }
  }
  return kKernelOk;
}

Layout kernelLayout(const ir::ScalarGraph &body, std::span<const int64_t> space,
                    std::span<const LayoutInput> inputs, std::span<const int64_t> reducedAxes) {
  bool reduction = body.reduction.has_value();
  TG_ASSERT(reduction || reducedAxes.empty()) << "only a reduction kernel reduces axes";
  if (body.gatheredAxes() > 0) return Layout::Strided;
  auto rank = static_cast<int64_t>(space.size());
  ir::SmallVector<bool, 8> reduced(space.size(), false);
  for (int64_t axis : reducedAxes) {
    TG_ASSERT(axis >= -rank && axis < rank) << "axis " << axis << " out of range for rank " << rank;
    reduced[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = true;
  }
  // The order the kernel walks the axes in, innermost first: the reduced ones, then the kept ones.
  ir::SmallVector<size_t, 8> innermostFirst;
  for (bool group : {true, false})
    for (size_t axis = space.size(); axis-- > 0;)
      if (reduced[axis] == group) innermostFirst.push_back(axis);
  for (const LayoutInput &input : inputs) {
    TG_ASSERT(input.shape.size() <= space.size() &&
              (input.strides.empty() || input.strides.size() == input.shape.size()))
        << "a kernel input of rank " << input.shape.size() << " over a space of rank " << rank;
    if (!reduction && !std::ranges::equal(input.shape, space)) return Layout::Strided;
    size_t lead = space.size() - input.shape.size();
    // The input's stride along an axis of the space: 0 where it is broadcast.
    auto stride = [&](size_t axis) -> int64_t {
      if (axis < lead || input.shape[axis - lead] != space[axis]) return 0;
      size_t own = axis - lead;
      if (!input.strides.empty()) return input.strides[own];
      uint64_t cStride = 1;
      for (size_t later = own + 1; later < input.shape.size(); ++later)
        cStride *= static_cast<uint64_t>(input.shape[later]);
      return static_cast<int64_t>(cStride);
    };
    uint64_t expected = 1; // the product of the sizes of the axes walked so far
    for (size_t axis : innermostFirst) {
      if (!reduction && space[axis] == 0) break;
      if (space[axis] != 1 && stride(axis) != static_cast<int64_t>(expected)) return Layout::Strided;
      expected *= static_cast<uint64_t>(space[axis]);
    }
  }
  // A reduction's extra outputs are C-contiguous over the space: in the walk's order only where it is C
  // order (the reduced axes trailing), as an elementwise kernel's always are.
  if (reduction && !body.extraOutputs.empty()) {
    size_t outer = space.size();
    for (size_t axis : innermostFirst) {
      if (space[axis] == 1) continue;
      if (axis > outer) return Layout::Strided;
      outer = axis;
    }
  }
  return Layout::Contiguous;
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
    if (instr.kind == ir::OpKind::Gather) hash.add(instr.indexRank);
  }
  hash.add(
      static_cast<uint16_t>(spec.body->reduction ? static_cast<uint16_t>(*spec.body->reduction) + 1 : 0));
  for (InnerStride stride : spec.innerStrides) // nothing when empty: names of unspecialized kernels stay
    hash.add(static_cast<uint8_t>(stride));
  if (spec.blockedOutputs) hash.add(static_cast<uint8_t>(0xb1)); // likewise nothing for the usual order
  for (uint32_t value : spec.body->extraOutputs) {               // and for a single output
    hash.add(static_cast<uint8_t>(0xe0));
    hash.add(value);
  }
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(hash.value()));
  return std::string("tgc_fused_") + digits;
}

std::string creationKernelName(ir::OpKind kind, ir::DType dtype) {
  return std::string("tgc_") + ir::opName(kind) + "_" + ir::dtypeName(dtype);
}

bool hasCreationKernel(ir::OpKind kind, ir::DType dtype) {
  switch (kind) {
  case ir::OpKind::Eye:
  case ir::OpKind::Arange:
  case ir::OpKind::Rand:
  case ir::OpKind::Randn:
    return ir::takes(kind, dtype);
  default:
    return false;
  }
}

std::string indexKernelName(IndexKernel kind, ir::DType dtype) {
  switch (kind) {
  case IndexKernel::Offsets:
    return "tgc_index_offsets";
  case IndexKernel::Gather:
    return std::string("tgc_gather_") + ir::dtypeName(dtype);
  case IndexKernel::ScatterAdd:
    return std::string("tgc_scatter_add_") + ir::dtypeName(dtype);
  case IndexKernel::ScatterSet:
    return std::string("tgc_scatter_set_") + ir::dtypeName(dtype);
  }
  return {};
}

std::string matmulKernelName(ir::DType dtype) {
  return std::string("tgc_matmul_") + ir::dtypeName(dtype);
}

std::string windowKernelName(WindowKernel kind, ir::DType dtype) {
  const char *names[] = {"tgc_im2col_", "tgc_col2im_", "tgc_max_pool_", "tgc_max_pool_grad_",
                         "tgc_max_pool_gather_"};
  return names[static_cast<int>(kind)] + std::string(ir::dtypeName(dtype));
}

namespace {
KernelSupply *scopedSupply = nullptr;
} // namespace

KernelSupply &kernelSupply() {
  return scopedSupply ? *scopedSupply : defaultKernelSupply();
}

ScopedKernelSupply::ScopedKernelSupply(KernelSupply &supply) : previous_(scopedSupply) {
  scopedSupply = &supply;
}

ScopedKernelSupply::~ScopedKernelSupply() {
  scopedSupply = previous_;
}

} // namespace tg::codegen
