#include "ir/ProgramArchive.h"

#include "ir/Assert.h"
#include "ir/Loop.h"
#include "ir/ScalarGraph.h"

#include <cstring>
#include <type_traits>
#include <unordered_map>

namespace tg::ir {

namespace {

constexpr char kMagic[8] = {'T', 'G', 'C', 'P', 'R', 'O', 'G', '\0'};
constexpr uint32_t kFormatVersion = 1;
enum Record : uint8_t { kConstant = 1, kNode = 2 };

/// FNV-1a of every op's and dtype's name in table order: archives name ops and dtypes by number.
uint64_t tableFingerprint() {
  uint64_t hash = 0xcbf29ce484222325ULL;
  auto add = [&](const char *text) {
    for (const char *c = text; *c; ++c)
      hash = (hash ^ static_cast<unsigned char>(*c)) * 0x100000001b3ULL;
    hash = (hash ^ 0xff) * 0x100000001b3ULL;
  };
#define OP(Enum, ...) add(opName(OpKind::Enum));
#include "ir/Ops.def"
  for (DType dtype : kAllDTypes)
    add(dtypeName(dtype));
  return hash;
}

class Writer {
public:
  std::string bytes;

  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes.append(reinterpret_cast<const char *>(&value), sizeof value);
  }
  void put(const std::string &text) {
    put(static_cast<uint64_t>(text.size()));
    bytes.append(text);
  }
  template <typename T>
  void putVector(const T &items) {
    put(static_cast<uint64_t>(items.size()));
    for (const auto &item : items)
      put(item);
  }
  void put(bool flag) { put(static_cast<uint8_t>(flag)); }

  void put(const SourceLoc &loc) {
    if (!loc.file) {
      put(uint32_t(0));
      return;
    }
    auto [found, added] = files_.emplace(loc.file.get(), static_cast<uint32_t>(files_.size() + 1));
    put(found->second);
    if (added) put(*loc.file);
    put(static_cast<int32_t>(loc.line));
    put(static_cast<int32_t>(loc.column));
  }

  void put(const TensorType &type) {
    put(type.dtype);
    put(type.place);
    put(static_cast<uint32_t>(type.rank()));
    for (const Dim &dim : type.shape) {
      put(dim.isStatic());
      if (dim.isStatic())
        put(dim.size());
      else
        put(dim.symbol());
    }
  }

  void put(const TensorData &data) {
    put(data.dtype);
    putVector(data.shape);
    put(static_cast<uint64_t>(data.bytes.size()));
    bytes.append(reinterpret_cast<const char *>(data.bytes.data()), data.bytes.size());
  }

  void put(const Number &number) {
    put(number.isInteger);
    put(number.intValue);
    put(number.floatValue);
  }

  void put(const SliceSpec &slice) {
    put(slice.isIndex);
    put(slice.start);
    put(slice.stop);
    put(slice.step);
    put(slice.hasStart);
    put(slice.hasStop);
  }

  void put(const ScalarGraph &body) {
    putVector(body.inputDtypes);
    put(static_cast<uint64_t>(body.body.size()));
    for (const ScalarInstr &instr : body.body) {
      put(instr.kind);
      put(instr.dtype);
      putVector(instr.operands);
      put(instr.immediate);
      put(instr.indexRank);
    }
    put(body.reduction.has_value());
    if (body.reduction) put(*body.reduction);
    putVector(body.extraOutputs);
    putVector(body.locs);
  }

  void put(const Window &window) {
    putVector(window.kernel);
    putVector(window.stride);
    putVector(window.dilation);
    putVector(window.padBefore);
    putVector(window.padAfter);
    putVector(window.outputPadding);
    put(window.groups);
  }

  void put(const Op &op) {
    put(op.kind());
    put(op.place());
    const OpAttrs &attrs = op.attrs();
    put(attrs.dtype);
    putVector(attrs.axes);
    put(attrs.keepdims);
    putVector(attrs.shape);
    putVector(attrs.scalars);
    put(attrs.seed);
    putVector(attrs.slices);
    put(attrs.body != nullptr);
    if (attrs.body) put(*attrs.body);
    put(attrs.window);
    put(attrs.loop != nullptr);
    if (attrs.loop) put(*attrs.loop);
    put(attrs.combine);
  }

  void put(const Loop &loop) {
    put(loop.body);
    put(static_cast<uint64_t>(loop.carries));
    put(static_cast<uint64_t>(loop.sequences));
    put(static_cast<uint64_t>(loop.stacked.size()));
    for (bool stacked : loop.stacked)
      put(stacked);
    put(loop.reverse);
    put(loop.length);
  }

  void put(const Graph &graph) {
    std::unordered_map<const Value *, uint64_t> numbers;
    put(static_cast<uint64_t>(graph.inputs().size()));
    for (Value *input : graph.inputs()) {
      numbers.emplace(input, numbers.size());
      put(input->type());
      put(input->name());
    }
    auto putConstantIfNew = [&](const Value *value) {
      if (numbers.count(value)) return;
      TG_ASSERT(value->isConstant()) << "value %" << value->id() << " is read before it is computed";
      numbers.emplace(value, numbers.size());
      put(kConstant);
      put(value->constant());
      put(value->name());
    };
    for (const Node *node : graph.toposort()) {
      for (const Value *input : node->inputs())
        putConstantIfNew(input);
      put(kNode);
      put(node->op());
      put(static_cast<uint64_t>(node->inputs().size()));
      for (const Value *input : node->inputs())
        put(numbers.at(input));
      put(node->pin());
      put(node->loc());
      put(static_cast<uint64_t>(node->outputs().size()));
      for (const Value *output : node->outputs()) {
        numbers.emplace(output, numbers.size());
        put(output->type());
        put(output->name());
      }
    }
    for (const Value *output : graph.outputs())
      putConstantIfNew(output);
    put(uint8_t(0)); // end of records
    put(static_cast<uint64_t>(graph.outputs().size()));
    for (const Value *output : graph.outputs())
      put(numbers.at(output));
  }

  void put(const Program &program) {
    put(program.graph);
    put(program.init);
    put(static_cast<uint64_t>(program.inputs.size()));
    for (const Program::Input &input : program.inputs) {
      put(input.name);
      put(input.loc);
    }
    put(static_cast<uint64_t>(program.params.size()));
    for (const Program::Param &param : program.params) {
      put(param.name);
      put(param.loc);
    }
    put(static_cast<uint64_t>(program.outputs.size()));
    for (const Program::Output &output : program.outputs)
      put(output.name);
    put(static_cast<uint64_t>(program.updates.size()));
    for (const Program::Update &update : program.updates)
      put(static_cast<uint64_t>(update.param));
  }

private:
  std::unordered_map<const std::string *, uint32_t> files_;
};

class Reader {
public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  [[noreturn]] static void corrupt(const std::string &what) {
    throw UserError("the program archive is damaged: " + what);
  }

  bool atEnd() const { return position_ == bytes_.size(); }

  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    if (bytes_.size() - position_ < sizeof(T)) corrupt("it ends early");
    T value;
    std::memcpy(&value, bytes_.data() + position_, sizeof value);
    position_ += sizeof value;
    return value;
  }
  bool getBool() {
    auto flag = get<uint8_t>();
    if (flag > 1) corrupt("a flag is neither 0 nor 1");
    return flag == 1;
  }
  /// A count of the items that follow, of at least `itemBytes` bytes each, checked against what is left.
  size_t getCount(size_t itemBytes = 1) {
    auto count = get<uint64_t>();
    if (count > (bytes_.size() - position_) / std::max<size_t>(itemBytes, 1)) corrupt("a count is too large");
    return static_cast<size_t>(count);
  }
  std::string getString() {
    size_t size = getCount();
    std::string text(bytes_.substr(position_, size));
    position_ += size;
    return text;
  }
  template <typename T>
  std::vector<T> getVector() {
    size_t count = getCount(sizeof(T));
    std::vector<T> items;
    items.reserve(count);
    for (size_t i = 0; i < count; ++i)
      items.push_back(get<T>());
    return items;
  }
  DType getDType() {
    auto dtype = get<uint8_t>();
    if (dtype >= std::size(kAllDTypes)) corrupt("an unknown dtype");
    return static_cast<DType>(dtype);
  }
  Place getPlace() {
    auto place = get<uint8_t>();
    if (place > static_cast<uint8_t>(Place::Device)) corrupt("an unknown place");
    return static_cast<Place>(place);
  }
  OpKind getOpKind() {
    auto kind = get<uint16_t>();
    size_t count = 0;
#define OP(Enum, ...) ++count;
#include "ir/Ops.def"
    if (kind >= count) corrupt("an unknown op");
    return static_cast<OpKind>(kind);
  }

  SourceLoc getLoc() {
    auto index = get<uint32_t>();
    if (index == 0) return {};
    if (index == files_.size() + 1)
      files_.push_back(std::make_shared<const std::string>(getString()));
    else if (index > files_.size())
      corrupt("a location names an unknown file");
    SourceLoc loc{files_[index - 1]};
    loc.line = get<int32_t>();
    loc.column = get<int32_t>();
    return loc;
  }

  TensorType getType() {
    TensorType type;
    type.dtype = getDType();
    type.place = getPlace();
    auto rank = get<uint32_t>();
    for (uint32_t i = 0; i < rank; ++i) {
      if (getBool()) {
        auto size = get<int64_t>();
        if (size < 0) corrupt("a negative dimension");
        type.shape.push_back(Dim::of(size));
      } else {
        type.shape.push_back(Dim::named(getString()));
      }
    }
    return type;
  }

  TensorData getData() {
    TensorData data;
    data.dtype = getDType();
    data.shape = getVector<int64_t>();
    size_t size = getCount();
    int64_t elements = 1;
    for (int64_t d : data.shape) {
      if (d < 0) corrupt("a constant of negative size");
      elements *= d;
    }
    if (size != static_cast<size_t>(elements) * dtypeSize(data.dtype))
      corrupt("a constant of the wrong size");
    data.bytes.assign(bytes_.begin() + static_cast<ptrdiff_t>(position_),
                      bytes_.begin() + static_cast<ptrdiff_t>(position_ + size));
    position_ += size;
    return data;
  }

  Number getNumber() {
    Number number;
    number.isInteger = getBool();
    number.intValue = get<int64_t>();
    number.floatValue = get<double>();
    return number;
  }

  SliceSpec getSlice() {
    SliceSpec slice;
    slice.isIndex = getBool();
    slice.start = get<int64_t>();
    slice.stop = get<int64_t>();
    slice.step = get<int64_t>();
    slice.hasStart = getBool();
    slice.hasStop = getBool();
    return slice;
  }

  std::shared_ptr<const ScalarGraph> getScalarGraph() {
    auto body = std::make_shared<ScalarGraph>();
    size_t inputs = getCount();
    for (size_t i = 0; i < inputs; ++i)
      body->inputDtypes.push_back(getDType());
    size_t instructions = getCount();
    for (size_t i = 0; i < instructions; ++i) {
      ScalarInstr instr;
      instr.kind = getOpKind();
      instr.dtype = getDType();
      size_t operands = getCount(sizeof(uint32_t));
      for (size_t k = 0; k < operands; ++k) {
        auto operand = get<uint32_t>();
        if (operand >= inputs + i) corrupt("an instruction reads a later value");
        instr.operands.push_back(operand);
      }
      instr.immediate = get<double>();
      instr.indexRank = get<uint32_t>();
      body->body.push_back(std::move(instr));
    }
    if (getBool()) body->reduction = getOpKind();
    size_t extras = getCount(sizeof(uint32_t));
    for (size_t k = 0; k < extras; ++k) {
      auto value = get<uint32_t>();
      if (value >= body->numValues()) corrupt("an extra output of no value");
      body->extraOutputs.push_back(value);
    }
    size_t locs = getCount();
    for (size_t k = 0; k < locs; ++k)
      body->locs.push_back(getLoc());
    return body;
  }

  Window getWindow() {
    Window window;
    window.kernel = getVector<int64_t>();
    window.stride = getVector<int64_t>();
    window.dilation = getVector<int64_t>();
    window.padBefore = getVector<int64_t>();
    window.padAfter = getVector<int64_t>();
    window.outputPadding = getVector<int64_t>();
    window.groups = get<int64_t>();
    return window;
  }

  Op getOp() {
    OpKind kind = getOpKind();
    Place place = getPlace();
    OpAttrs attrs;
    attrs.dtype = getDType();
    attrs.axes = getVector<int64_t>();
    attrs.keepdims = getBool();
    attrs.shape = getVector<int64_t>();
    size_t scalars = getCount();
    for (size_t i = 0; i < scalars; ++i)
      attrs.scalars.push_back(getNumber());
    attrs.seed = get<uint64_t>();
    size_t slices = getCount();
    for (size_t i = 0; i < slices; ++i)
      attrs.slices.push_back(getSlice());
    if (getBool()) attrs.body = getScalarGraph();
    attrs.window = getWindow();
    if (getBool()) attrs.loop = getLoop();
    attrs.combine = getOpKind();
    return Op(kind, std::move(attrs), place);
  }

  std::shared_ptr<const Loop> getLoop() {
    auto loop = std::make_shared<Loop>();
    getProgram(loop->body);
    loop->carries = static_cast<size_t>(get<uint64_t>());
    loop->sequences = static_cast<size_t>(get<uint64_t>());
    size_t stacked = getCount();
    for (size_t i = 0; i < stacked; ++i)
      loop->stacked.push_back(getBool());
    loop->reverse = getBool();
    loop->length = get<int64_t>();
    if (loop->carries + loop->sequences > loop->body.graph.inputs().size() ||
        loop->carries > loop->body.graph.outputs().size() || stacked != loop->carries)
      corrupt("a loop whose body does not fit it");
    return loop;
  }

  void getGraph(Graph &graph) {
    std::vector<Value *> values;
    size_t inputs = getCount();
    for (size_t i = 0; i < inputs; ++i) {
      TensorType type = getType();
      values.push_back(graph.addInput(std::move(type), getString()));
    }
    auto valueAt = [&](uint64_t number) {
      if (number >= values.size()) corrupt("a node reads a value not yet computed");
      return values[static_cast<size_t>(number)];
    };
    for (auto record = get<uint8_t>(); record != 0; record = get<uint8_t>()) {
      if (record == kConstant) {
        TensorData data = getData();
        values.push_back(graph.addConstant(std::move(data), getString()));
        continue;
      }
      if (record != kNode) corrupt("an unknown record");
      Op op = getOp();
      size_t count = getCount(sizeof(uint64_t));
      std::vector<Value *> operands;
      for (size_t i = 0; i < count; ++i)
        operands.push_back(valueAt(get<uint64_t>()));
      auto pin = get<uint8_t>();
      if (pin > static_cast<uint8_t>(Pin::Device)) corrupt("an unknown pin");
      SourceLoc loc = getLoc();
      Node *node = graph.addNode(std::move(op), std::move(operands), loc, static_cast<Pin>(pin));
      size_t outputs = getCount();
      if (outputs != node->outputs().size()) corrupt("a node with another number of outputs");
      for (Value *output : node->outputs()) {
        if (getType() != output->type()) corrupt("a node whose type differs from its op's");
        output->setName(getString());
        values.push_back(output);
      }
    }
    size_t outputs = getCount(sizeof(uint64_t));
    for (size_t i = 0; i < outputs; ++i)
      graph.addOutput(valueAt(get<uint64_t>()));
    // The writer's order (the original's topological order), which the executor then follows as it did.
    graph.assumeToposort(graph.nodes(), {});
  }

  void getProgram(Program &program) {
    getGraph(program.graph);
    getGraph(program.init);
    const std::vector<Value *> &graphInputs = program.graph.inputs();
    size_t inputs = getCount();
    for (size_t i = 0; i < inputs; ++i) {
      std::string name = getString();
      program.inputs.push_back({std::move(name), nullptr, getLoc()});
    }
    size_t params = getCount();
    if (inputs + params != graphInputs.size() || params != program.init.outputs().size())
      corrupt("a program whose inputs and params do not fit its graphs");
    for (size_t i = 0; i < params; ++i) {
      std::string name = getString();
      program.params.push_back({std::move(name), nullptr, program.init.outputs()[i], getLoc()});
    }
    size_t outputs = getCount();
    for (size_t i = 0; i < outputs; ++i)
      program.outputs.push_back({getString(), nullptr});
    size_t updates = getCount();
    if (outputs + updates != program.graph.outputs().size())
      corrupt("a program whose outputs and updates do not fit its graph");
    for (size_t i = 0; i < updates; ++i) {
      auto param = get<uint64_t>();
      if (param >= params) corrupt("an update of no param");
      program.updates.push_back({static_cast<size_t>(param), nullptr});
    }
    program.syncWithGraph();
  }

private:
  std::string_view bytes_;
  size_t position_ = 0;
  std::vector<std::shared_ptr<const std::string>> files_;
};

} // namespace

std::string writeProgram(const Program &program) {
  Writer writer;
  writer.bytes.append(kMagic, sizeof kMagic);
  writer.put(kFormatVersion);
  writer.put(tableFingerprint());
  writer.put(program);
  return std::move(writer.bytes);
}

std::unique_ptr<Program> readProgram(std::string_view archive) {
  if (archive.size() < sizeof kMagic || std::memcmp(archive.data(), kMagic, sizeof kMagic) != 0)
    throw UserError("not a tgc program archive");
  Reader reader(archive.substr(sizeof kMagic));
  if (reader.get<uint32_t>() != kFormatVersion || reader.get<uint64_t>() != tableFingerprint())
    throw UserError("the program archive was written by another version of tgc");
  auto program = std::make_unique<Program>();
  reader.getProgram(*program);
  if (!reader.atEnd()) Reader::corrupt("bytes follow the program");
  return program;
}

} // namespace tg::ir
