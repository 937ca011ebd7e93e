// shard: the step of a distributed run, split along its batch dimension (a symbolic dimension, `n` of
// f32[n, 4]) across the ranks. Every input with that dimension holds only this rank's block of it (rank r's
// part of np.array_split); everything else is whole on every rank. The pass follows "split along axis k" or
// "whole" through every node, as GSPMD propagates a sharding, and changes the graph only where the ranks'
// parts must meet, so that each output equals the single process's (up to the order of floating-point sums):
//   - elementwise ops, matmul's rows, views that keep the axis, convolution and pooling over the batch, sorts
//     and cumsums along other axes stay local; a whole operand that spans the axis is cut to this rank's
//     block (shard);
//   - a reduction over the axis reduces locally and then across the ranks (allreduce): sum, prod, max, min,
//     any and all directly; mean as a sum over a count, both across the ranks; a product that contracts the
//     axis (transpose(X) @ G, a gradient's sum) and conv_filter_grad likewise; dim_size counts every rank's
//     block;
//   - a loop over the rows of the split dimension (an RNN over a batch) runs split, its body split as a
//     graph of its own;
//   - an op that needs the whole axis and is no reduction (argmax along it, a sort or cumsum along it, a
//     reshape that merges it, indexing into it, a loop over it) gets its operands whole first (allgather);
//   - arange, rand and randn of the axis's length are made whole, every element the one a single process
//     makes (arange's length gathered without its data), and cut where they meet split values;
//   - outputs split along the axis are gathered whole.
#pragma once

#include "ir/Program.h"
#include "opt/Rewrite.h"

#include <string>

namespace tg::opt {

/// Splits `graph` (a program's step) along the symbolic dimension `dimension` as above. Inputs carry it on
/// one axis at most (the caller checks). Does not verify.
void shardAlong(ir::Graph &graph, const std::string &dimension, PassProfile &profile);

/// Makes every param's initial value rank 0's (a broadcast after each of program.init's outputs), so that
/// the ranks begin equal whatever their initializers compute.
void broadcastInitialValues(ir::Program &program);

} // namespace tg::opt
