#include "api/Stages.h"

#include "codegen/Kernel.h"
#include "ir/Loop.h"
#include "ir/Printers.h"
#include "ir/ScalarGraph.h"
#include "runtime/DevicePlan.h"
#include "runtime/Print.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace tg::tools {

namespace {

/// The layout a fused node's kernel is printed with: codegen::kernelLayout of its static shapes, its inputs
/// taken as C-contiguous and each symbolic dimension as a size of its own, not 1 and unlike every static
/// size and every other symbol (at run time a symbol of size 1, or inputs of other strides, may give the
/// other layout).
codegen::Layout staticLayout(const ir::Node &node) {
  ir::Shape space;
  for (const ir::Value *input : node.inputs())
    space = ir::broadcastShapes(space, input->type().shape).value_or(space);
  std::set<int64_t> taken; // the sizes that static dimensions have, and then the symbols' too
  for (const ir::Value *input : node.inputs())
    for (const ir::Dim &dim : input->type().shape)
      if (dim.isStatic()) taken.insert(dim.size());
  std::map<std::string, int64_t> symbolSizes;
  auto sizes = [&](const ir::Shape &shape) {
    std::vector<int64_t> result;
    for (const ir::Dim &dim : shape) {
      if (dim.isStatic()) {
        result.push_back(dim.size());
        continue;
      }
      auto [found, added] = symbolSizes.try_emplace(dim.symbol(), 2);
      if (added) {
        while (taken.count(found->second))
          ++found->second;
        taken.insert(found->second);
      }
      result.push_back(found->second);
    }
    return result;
  };
  std::vector<std::vector<int64_t>> inputShapes;
  for (const ir::Value *input : node.inputs())
    inputShapes.push_back(sizes(input->type().shape));
  std::vector<int64_t> spaceSizes = sizes(space);
  std::vector<codegen::LayoutInput> inputs;
  for (const std::vector<int64_t> &shape : inputShapes)
    inputs.push_back({shape});
  const ir::ScalarGraph &body = *node.op().attrs().body;
  std::span<const int64_t> reducedAxes;
  if (body.reduction) reducedAxes = node.op().attrs().axes;
  return codegen::kernelLayout(body, spaceSizes, inputs, reducedAxes);
}

/// The type of a node's output, or of its outputs as a tuple "(f32[n], bool[n])" when it has several.
std::string resultTypes(const ir::Node &node) {
  if (node.outputs().size() == 1) return node.output()->type().str();
  std::string text = "(";
  for (size_t i = 0; i < node.outputs().size(); ++i)
    text += (i ? ", " : "") + node.outputs()[i]->type().str();
  return text + ")";
}

} // namespace

/// Prints `name = value`, continuation lines aligned under the first, as NumPy aligns a repr.
void printNamed(std::ostream &out, const std::string &name, const runtime::Tensor &tensor) {
  std::string prefix = name + " = ";
  std::string text = runtime::formatArray(tensor);
  out << prefix;
  for (char c : text) {
    out << c;
    if (c == '\n') out << std::string(prefix.size(), ' ');
  }
  out << "\n";
}

/// --explain-placement: each node in order, where it runs, and why.
std::string explainPlacement(const ir::Program &program, const opt::PlacementReasons &reasons) {
  std::ostringstream out;
  const std::vector<ir::Node *> &order = program.graph.toposort();
  // Placed for a device or not: without one the lift never ran, and every node is the host's.
  bool placed = !reasons.empty();
  if (!placed)
    out << "not placed for a device: every node runs on the host (--device=sim or --device=cuda places the "
           "graph for one)\n";
  struct Row {
    std::string index, source, op, place, type, why;
  };
  std::vector<Row> rows{{"#", "source", "op", "place", "type", placed ? "why" : ""}};
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node *node = order[i];
    bool transfer = node->op().kind() == ir::OpKind::ToDevice || node->op().kind() == ir::OpKind::ToHost;
    auto reason = reasons.find(node);
    rows.push_back({std::to_string(i), ir::shortSource(*node), ir::shortOpName(node->op(), 36),
                    node->op().place() == ir::Place::Device ? "device" : "host", node->output()->type().str(),
                    !placed                   ? ""
                    : transfer                ? "transfer"
                    : reason != reasons.end() ? reason->second
                                              : "made by a later pass"});
  }
  // Columns as wide as their widest entry (a fused op's name is shortened), the reason last.
  size_t widths[5] = {0, 0, 0, 0, 0};
  for (const Row &row : rows) {
    const std::string *cells[5] = {&row.index, &row.source, &row.op, &row.place, &row.type};
    for (size_t c = 0; c < 5; ++c)
      widths[c] = std::max(widths[c], cells[c]->size());
  }
  for (const Row &row : rows) {
    std::string line = std::string(widths[0] - row.index.size(), ' ') + row.index;
    const std::string *cells[5] = {&row.source, &row.op, &row.place, &row.type, &row.why};
    for (size_t c = 0; c < 5; ++c)
      line += "  " + *cells[c] + (c < 4 ? std::string(widths[c + 1] - cells[c]->size(), ' ') : "");
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out << line << "\n";
  }
  return out.str();
}

/// --emit=llvm: the LLVM IR of every host kernel; --emit=ptx: one PTX module holding the kernels the device
/// plan (runtime/DevicePlan.h) gives the device nodes, or every fused kernel when nothing runs on a device:
/// generated kernels and reductions (of fused nodes, or of unfused ops), the generated matmul kernel for each
/// device matmul (what a GPU without cuBLAS runs; integer and bool matmuls always), the creation kernels of
/// device eye, arange, rand and randn, the index kernels of gathers and scatters, the window kernels of
/// convolutions and poolings. A comment names each kernel's node and source line (PTX: all of them first,
/// then the module, whose entries are the names they give).
std::string printKernels(const ir::Program &program, bool ptx, const std::string &gpuArch) {
  struct Kernel {
    const ir::Node *node;
    std::optional<runtime::DeviceStep> step; // a device node's
  };
  using Kind = runtime::DeviceStep::Kind;
  std::vector<Kernel> kernels;
  bool anyDevice = false;
  for (const ir::Node *node : ir::nodesWithLoopBodies(program.graph)) {
    bool transfer = node->op().kind() == ir::OpKind::ToDevice || node->op().kind() == ir::OpKind::ToHost;
    if (ptx && node->op().place() == ir::Place::Device && !transfer) {
      runtime::DeviceStep step = runtime::planDeviceStep(*node);
      if (step.kind == Kind::Kernel || step.kind == Kind::Reduction || step.kind == Kind::Matmul ||
          step.kind == Kind::Creation || step.kind == Kind::Index || step.kind == Kind::Window) {
        kernels.push_back({node, step});
        anyDevice = true;
      }
    } else if (node->op().kind() == ir::OpKind::Fused) {
      kernels.push_back({node, std::nullopt});
    }
  }
  std::ostringstream out;
  const char *comment = ptx ? "//" : ";";
  size_t index = 0;
  codegen::PtxModuleKernels module;
  for (const auto &[node, step] : kernels) {
    bool device = node->op().place() == ir::Place::Device;
    if (ptx ? anyDevice && !device : device) continue;
    if (step && step->kind == Kind::Matmul) {
      ir::DType dtype = node->output()->type().dtype;
      bool floating = dtype == ir::DType::F32 || dtype == ir::DType::F64;
      module.matmuls.push_back(dtype);
      out << comment << " kernel " << index++ << ": matmul -> " << node->output()->type().str()
          << ", the generated kernel" << (floating ? " (used without cuBLAS)" : "") << ", at "
          << node->loc().str() << ": " << codegen::matmulKernelName(dtype) << "\n";
      continue;
    }
    // A kernel of its own family: its node, and the kernels' names.
    auto heading = [&] {
      out << comment << " kernel " << index++ << ": " << node->op().str() << " -> "
          << node->output()->type().str() << ", at " << node->loc().str() << ":";
    };
    if (step && step->kind == Kind::Creation) {
      ir::DType dtype = node->output()->type().dtype;
      module.creations.emplace_back(node->op().kind(), dtype);
      heading();
      out << " " << codegen::creationKernelName(node->op().kind(), dtype) << "\n";
      continue;
    }
    if (step && step->kind == Kind::Index) {
      heading();
      for (auto [kernel, dtype] : runtime::indexKernels(*node)) {
        module.indexing.emplace_back(kernel, dtype);
        out << " " << codegen::indexKernelName(kernel, dtype);
      }
      out << "\n";
      continue;
    }
    if (step && step->kind == Kind::Window) {
      heading();
      for (auto [kernel, dtype] : runtime::windowKernels(*node)) {
        module.windows.emplace_back(kernel, dtype);
        out << " " << codegen::windowKernelName(kernel, dtype);
      }
      out << (ir::isConvolution(node->op().kind()) ? " and a gemm per channel group" : "") << "\n";
      continue;
    }
    codegen::Layout layout = staticLayout(*node);
    const ir::Op &fused = step ? *step->fused : node->op();
    codegen::KernelSpec spec{fused.attrs().body.get(), layout};
    out << comment << " kernel " << index++ << ": " << node->op().str() << " -> " << resultTypes(*node)
        << ", " << (layout == codegen::Layout::Contiguous ? "contiguous" : "strided") << ", at "
        << node->loc().str();
    if (ptx) {
      out << ": " << codegen::kernelName(spec) << "\n";
      module.fused.push_back(spec);
    } else {
      out << "\n" << codegen::emitHostLlvm(spec) << "\n";
    }
  }
  if (index == 0)
    out << comment << " no " << (ptx ? "device " : "host ") << "kernels\n";
  else if (ptx)
    out << "\n" << codegen::emitPtx(module, gpuArch);
  return out.str();
}

} // namespace tg::tools
