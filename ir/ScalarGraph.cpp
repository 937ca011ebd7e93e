#include "ir/ScalarGraph.h"

#include "ir/Assert.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>

namespace tg::ir {

bool ScalarInstr::operator==(const ScalarInstr &other) const {
  // Immediates compare by bits, so that NaN equals NaN and 0.0 differs from -0.0, as constants merge.
  return kind == other.kind && dtype == other.dtype && operands == other.operands &&
         std::memcmp(&immediate, &other.immediate, sizeof immediate) == 0 && indexRank == other.indexRank;
}

std::vector<const ScalarInstr *> ScalarGraph::tableReaders() const {
  std::vector<const ScalarInstr *> readers(numInputs(), nullptr);
  for (const ScalarInstr &instr : body)
    if (instr.kind == OpKind::Gather) readers.at(instr.operands[0]) = &instr;
  return readers;
}

size_t ScalarGraph::gatheredAxes() const {
  size_t axes = 0;
  for (const ScalarInstr &instr : body)
    if (instr.kind == OpKind::Gather) axes += instr.operands.size() - 1;
  return axes;
}

SourceLoc ScalarGraph::gatherLoc(size_t ordinal) const {
  for (size_t i = 0; i < body.size(); ++i)
    if (body[i].kind == OpKind::Gather && ordinal-- == 0) return locOf(i);
  return {};
}

namespace {

/// NumPy's broadcast of two run-time shapes; nothing when they do not broadcast.
std::optional<std::vector<int64_t>> broadcastSizes(const std::vector<int64_t> &a,
                                                   const std::vector<int64_t> &b) {
  std::vector<int64_t> result(std::max(a.size(), b.size()));
  for (size_t i = 0; i < result.size(); ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    result[result.size() - 1 - i] = x == 1 ? y : x;
  }
  return result;
}

} // namespace

SourceLoc ScalarGraph::whereShapesDisagree(const std::vector<std::vector<int64_t>> &inputShapes) const {
  std::vector<std::vector<int64_t>> shapes(inputShapes.begin(), inputShapes.end());
  shapes.resize(numInputs());
  for (size_t i = 0; i < body.size(); ++i) {
    const ScalarInstr &instr = body[i];
    std::vector<int64_t> shape; // an immediate's: it broadcasts with anything
    for (size_t k = 0; k < instr.operands.size(); ++k) {
      const std::vector<int64_t> &operand = shapes.at(instr.operands[k]);
      std::optional<std::vector<int64_t>> met = broadcastSizes(
          shape, instr.kind == OpKind::Gather && k == 0 ? tableInSpace(instr, operand, int64_t(1)) : operand);
      if (!met) return locOf(i);
      shape = std::move(*met);
    }
    shapes.push_back(std::move(shape));
  }
  return {};
}

DType ScalarGraph::dtypeOf(uint32_t value) const {
  TG_ASSERT(value < numValues()) << "scalar value %" << value << " out of range";
  return value < numInputs() ? inputDtypes[value] : body[value - numInputs()].dtype;
}

bool ScalarGraph::operator==(const ScalarGraph &other) const {
  return inputDtypes == other.inputDtypes && body == other.body && reduction == other.reduction &&
         extraOutputs == other.extraOutputs;
}

size_t ScalarGraph::hash() const {
  size_t h = 0x9e3779b97f4a7c15ULL;
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (DType dtype : inputDtypes)
    mix(static_cast<size_t>(dtype));
  for (const ScalarInstr &instr : body) {
    mix(static_cast<size_t>(instr.kind) << 8 | static_cast<size_t>(instr.dtype));
    for (uint32_t operand : instr.operands)
      mix(operand);
    uint64_t bits;
    std::memcpy(&bits, &instr.immediate, sizeof bits);
    mix(std::hash<uint64_t>()(bits));
    mix(instr.indexRank);
  }
  if (reduction) mix(0x100 + static_cast<size_t>(*reduction));
  for (uint32_t value : extraOutputs)
    mix(0x200 + value);
  return h;
}

std::vector<std::string> ScalarGraph::memberNames() const {
  std::vector<std::string> names;
  for (const ScalarInstr &instr : body)
    if (instr.kind != OpKind::Full) names.push_back(opName(instr.kind)); // immediates are not ops
  if (reduction) names.push_back(opName(*reduction));
  return names;
}

std::string ScalarGraph::str() const {
  std::ostringstream out;
  for (size_t i = 0; i < numInputs(); ++i)
    out << "%" << i << " = input " << dtypeName(inputDtypes[i]) << "\n";
  for (size_t k = 0; k < body.size(); ++k) {
    const ScalarInstr &instr = body[k];
    out << "%" << numInputs() + k << " = ";
    if (instr.kind == OpKind::Full) {
      out << "constant " << dtypeName(instr.dtype) << " " << instr.immediate << "\n";
      continue;
    }
    out << opName(instr.kind) << " " << dtypeName(instr.dtype);
    for (size_t j = 0; j < instr.operands.size(); ++j)
      out << (j ? ", %" : " %") << instr.operands[j];
    if (instr.kind == OpKind::Gather) out << " axis " << instr.immediate << " rank " << instr.indexRank;
    out << "\n";
  }
  if (reduction) out << "reduce " << opName(*reduction) << " %" << numValues() - 1 << "\n";
  for (size_t k = 0; k < extraOutputs.size(); ++k)
    out << "output " << k + 1 << " = %" << extraOutputs[k] << "\n";
  return out.str();
}

bool isPrologueReduction(OpKind kind) {
  return isReduction(kind) && !isPositionalReduction(kind);
}

std::optional<double> fillValue(OpKind kind) {
  if (kind == OpKind::OnesLike) return 1.0;
  if (kind == OpKind::ZerosLike) return 0.0;
  return std::nullopt;
}

bool isScalarOp(OpKind kind) {
  return opInfo(kind).fusion == FusionKind::Elementwise;
}

} // namespace tg::ir
