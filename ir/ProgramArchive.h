// ProgramArchive: a compiled program (ir/Program.h) as bytes and back, so that a library made ahead of time
// (`tgc compile --emit=lib`) carries its optimized graphs and runs them without the front end or the
// optimizer, as TVM's exported modules carry their graph.
//
//   archive = magic "TGCPROG\0" | format version (u32) | op table fingerprint (u64) | program
//   program = graph (the step) | graph (init) | inputs, params (name, place in the script) | output names
//             | updates (param index)
//   graph   = inputs (type, name) | records in topological order | outputs (value numbers)
//   record  = constant (data, name) | node (op, inputs by value number, pin, location, each output's type
//             and name)
//
// Records come in the graph's topological order, which the graph read back keeps (assumeToposort), so that
// it runs in the same order. Values are numbered as they are written: inputs, then each constant and node
// output where it first appears. Ops are written by kind number with all their attributes (a fused node's
// scalar program, a scan's body graph, recursively), so an archive is read only by a tgc of the same op
// table: the fingerprint of Ops.def's names and DTypes.def's is checked. The loop attributes that only the
// optimizer reads (`unplaced`, `extends`) are left out. Integers are in this machine's byte order (the
// archive is read where it is linked).
#pragma once

#include "ir/Program.h"

#include <memory>
#include <string>
#include <string_view>

namespace tg::ir {

/// The program as an archive.
std::string writeProgram(const Program &program);

/// The program an archive holds, its graphs rebuilt node by node (types inferred again and checked against
/// the archive's). Throws UserError saying what is wrong for bytes that are not an archive of this tgc.
std::unique_ptr<Program> readProgram(std::string_view archive);

} // namespace tg::ir
