// ScalarGraph: the body of a fused node (Theano's Composite). A straight-line program over scalars that the
// kernel runs once per output element:
//
//   fused(a, b, c)        values: %0 = a[i]  %1 = b[i]  %2 = c[i]       (inputs, after broadcasting)
//     = relu(a * b + c)           %3 = mul %0 %1                         (instruction 0)
//                                 %4 = add %3 %2                         (instruction 1)
//                                 %5 = relu %4                           (instruction 2: the result)
//
// Values 0 .. numInputs()-1 are the fused node's inputs, value numInputs() + k is instruction k's result, and
// the last instruction's value is the kernel's output. Instructions are elementwise ops of Ops.def (unary,
// binary, where, clip, cast), plus `full` for a constant folded into the body (a 0-d constant input).
//
// A reduction with a prologue: when `reduction` is set (sum, mean, max, min, prod, any, all), the program's
// value over the inputs' broadcast shape is reduced along the fused op's `axes` (keepdims as the op says):
//
//   sum(exp(x - m), axis=1)  =  fused{sub, exp, sum}(x, m)      %2 = sub %0, %1
//                                                               %3 = exp %2      reduced: sum over axis 1
//
// Extra outputs: a value of the program that is also read outside the kernel is written as one more output
// of the fused node (extraOutputs), `output 1 = %2` in str().
//
// Gathers: a `gather` instruction reads an element of a table, an input that the kernel addresses instead of
// loading (its operand 0; no other instruction reads it), at the index values its other operands give:
//
//   relu(E[idx])  =  fused{gather, relu}(E, expand_dims(idx))     %2 = gather f32 %0, %1 axis 0 rank 2
//                                                                 %3 = relu %2
//
// The table takes part in the kernel's space as tableInSpace() places it (its gathered axes replaced by
// `indexRank` axes of size 1, which the index values span), so that an element of the space reads the table
// at its own offset there plus, for each index value j, norm(index_j) * stride of the table's axis axis + j;
// an index outside [-size, size) of its axis is the kernel's error.
#pragma once

#include "ir/DType.h"
#include "ir/Op.h"
#include "ir/SmallVector.h"
#include "ir/SourceLoc.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tg::ir {

struct ScalarInstr {
  OpKind kind;
  DType dtype;                       // the result's dtype (for cast: the target dtype)
  SmallVector<uint32_t, 3> operands; // value indices, each smaller than this instruction's own value index
  double immediate = 0;              // kind == Full: the constant, converted to dtype as a C++ cast would;
                                     // kind == Gather: the table's first gathered axis
  uint32_t indexRank = 0;            // kind == Gather: the axes of the space its index values span
  bool operator==(const ScalarInstr &other) const;
};

struct ScalarGraph {
  // One per input of the fused node; most read a few, kept inline: checking a fused node's type reads them
  // (one pointer chase less on a large graph).
  SmallVector<DType, 16> inputDtypes;
  std::vector<ScalarInstr> body;   // never empty
  std::optional<OpKind> reduction; // reduces the program's value (axes and keepdims in the op's attributes)
  // Values the kernel writes besides its result, as the fused node's outputs 1, 2, ... (multi-output
  // fusion): instruction values that are read outside the kernel. Each is written over the program's
  // iteration space (an elementwise body's result shape; a reduction's space before it is reduced), in its
  // own dtype.
  SmallVector<uint32_t, 2> extraOutputs;
  // Where each instruction's op was written (unknown for an immediate the program made): where an error in a
  // kernel is reported (an index out of range at its gather, shapes that do not broadcast at the op that
  // meets them), not at the fused node's root. One per instruction, or none; not part of the program (== and
  // hash leave it out).
  std::vector<SourceLoc> locs;

  size_t numInputs() const { return inputDtypes.size(); }
  size_t numValues() const { return inputDtypes.size() + body.size(); }
  /// The arrays a kernel of this body addresses element by element: its inputs, then its extra outputs
  /// (codegen's KernelArgs lists their pointers and strides in that order).
  size_t numArrays() const { return inputDtypes.size() + extraOutputs.size(); }
  /// Per input, the gather instruction that reads it as its table, or null: one pass over the body.
  std::vector<const ScalarInstr *> tableReaders() const;
  /// The axes the body's gathers index, over all its gathers: a kernel's arguments give each one's size and
  /// stride (codegen's KernelArgs).
  size_t gatheredAxes() const;
  /// Where instruction `index` was written (unknown when the body does not say).
  SourceLoc locOf(size_t index) const { return index < locs.size() ? locs[index] : SourceLoc{}; }
  /// Where the body's gather number `ordinal` (in the body's order) was written.
  SourceLoc gatherLoc(size_t ordinal) const;
  /// Where the body first meets shapes that do not broadcast, given its inputs' shapes: the location of the
  /// first instruction whose operands' shapes (a gather's table as it lies in the space, and its indices)
  /// do not broadcast; unknown when they all do.
  SourceLoc whereShapesDisagree(const std::vector<std::vector<int64_t>> &inputShapes) const;
  /// The dtype of array k of those: an input's, or an extra output's value's.
  DType arrayDtype(size_t k) const {
    return k < numInputs() ? inputDtypes[k] : dtypeOf(extraOutputs[k - numInputs()]);
  }
  DType dtypeOf(uint32_t value) const;
  DType resultDtype() const { return body.empty() ? inputDtypes[0] : body.back().dtype; }
  bool operator==(const ScalarGraph &other) const;
  size_t hash() const;
  /// The op names of the body in order, then the reduction's, as the JSON's "members": {"mul", "add",
  /// "relu"} (immediates are not ops and are left out).
  std::vector<std::string> memberNames() const;
  /// One line per instruction, "%4 = add f32 %3, %2", for dumps and kernel comments.
  std::string str() const;
};

/// Where a gather's table lies in the kernel's space: its axes before the gathered ones, `indexRank` axes of
/// `filler` where the index values' axes are, then its axes after the gathered ones. Of the table's shape
/// (filler 1) this is the shape it broadcasts with the space as; of its strides (filler 0), its strides
/// there.
template <typename Sizes, typename Size>
Sizes tableInSpace(const ScalarInstr &gather, const Sizes &table, Size filler) {
  auto axis = static_cast<size_t>(gather.immediate);
  size_t after = axis + gather.operands.size() - 1;
  Sizes placed(table.begin(), table.begin() + static_cast<ptrdiff_t>(axis));
  for (uint32_t i = 0; i < gather.indexRank; ++i)
    placed.push_back(filler);
  placed.insert(placed.end(), table.begin() + static_cast<ptrdiff_t>(after), table.end());
  return placed;
}

/// Whether `kind` can be an instruction of a scalar graph: every elementwise op.
bool isScalarOp(OpKind kind);
/// Whether a reduction of `kind` can take a prologue (every reduction but argmax and argmin).
bool isPrologueReduction(OpKind kind);
/// The value an op of `kind` fills its operand's shape with (ones_like 1, zeros_like 0), which a scalar graph
/// holds as an immediate (a Full instruction), reading nothing; nullopt for every other op.
std::optional<double> fillValue(OpKind kind);

} // namespace tg::ir
