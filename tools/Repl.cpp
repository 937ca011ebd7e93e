#include "tools/Repl.h"

#include "api/Api.h"
#include "api/Stages.h"
#include "frontend/Diagnostics.h"
#include "frontend/ModuleLoader.h"
#include "io/Npy.h"
#include "runtime/Print.h"
#include "tools/ScalarArguments.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <editline/readline.h>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

namespace tg::tools {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char *kSource = "<repl>"; // the display name of what is typed
constexpr const char *kValueName = "repl_value_";

constexpr const char *kHelp =
    R"(Statements: import, def, let (kept for what follows), expressions (printed with their type), and a
script's input, param, update and output (a param is initialized at once; :step applies the updates).
Commands (EXPR is any expression):
  :type EXPR        its type, without running it
  :ir EXPR          its graph as built
  :opt EXPR         its graph after the optimizer (placed on the current device)
  :llvm EXPR        the LLVM IR of its host kernels
  :ptx EXPR         the PTX of its kernels, placed for a GPU (no GPU needed)
  :explain EXPR     where each of its nodes runs on a device, and why
  :time EXPR        how long it takes to compile and to run
  :device NAME      run on cpu, sim, cuda or auto from now on
  :load FILE.tg     run a script's statements here (its lets, inputs, params and updates are kept)
  :bind NAME=FILE.npy   the value of input NAME (now, or when a script declares it); a number for a scalar
  :step [N]         run N steps (default 1): apply the updates, print a loaded script's outputs
  :save FILE.npy NAME   save a let's, input's or param's value
  :reset            forget everything kept
  :help             this text
  :quit [CODE]      leave (exit code CODE, default 0)
)";

/// Adds to `open` the brackets that `line` opens and removes those it closes, outside strings and comments
/// (both end with their line, as in the grammar). Offsets in `open` count from `lineStart`'s text start.
void scanBrackets(std::string_view line, size_t lineStart, std::vector<size_t> &open) {
  bool inString = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (inString) {
      if (c == '\\')
        ++i; // an escaped character
      else
        inString = c != '"';
    } else if (c == '#') {
      return;
    } else if (c == '"') {
      inString = true;
    } else if (c == '(' || c == '[' || c == '{') {
      open.push_back(lineStart + i);
    } else if ((c == ')' || c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
    }
  }
}

/// The offsets of the brackets `text` leaves open, outermost first.
std::vector<size_t> openBrackets(std::string_view text) {
  std::vector<size_t> open;
  for (size_t begin = 0; begin <= text.size();) {
    size_t end = std::min(text.find('\n', begin), text.size());
    scanBrackets(text.substr(begin, end - begin), begin, open);
    begin = end + 1;
  }
  return open;
}

/// The first word of `text` (letters, digits, underscores, or a leading ':'), and the rest trimmed.
std::pair<std::string, std::string> splitWord(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return {"", ""};
  size_t end = begin + (text[begin] == ':' ? 1 : 0);
  while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
    ++end;
  size_t rest = text.find_first_not_of(" \t\r\n", end);
  std::string tail = rest == std::string::npos ? "" : text.substr(rest);
  while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back())))
    tail.pop_back();
  return {text.substr(begin, end - begin), tail};
}

/// Whether `line` starts a statement of its own (a keyword of the grammar's statements, or a command): inside
/// '(' or '[' such a line ends the input left open, as a statement keyword does in a script.
bool startsStatement(const std::string &line) {
  static const std::set<std::string> kKeywords{"import", "def",    "input",  "param",
                                               "let",    "output", "update", "return"};
  std::string word = splitWord(line).first;
  return kKeywords.count(word) || (!word.empty() && word[0] == ':');
}

size_t countLines(const std::string &text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

/// "f32[2, 3]" for a value.
std::string typeOf(const runtime::Tensor &tensor) {
  ir::Shape shape;
  for (int64_t size : tensor.shape())
    shape.push_back(ir::Dim::of(size));
  return ir::TensorType{tensor.dtype(), shape, ir::Place::Host}.str();
}

/// Where a session's lines come from: a terminal (editline: prompts, history) or a stream (a pipe, a script
/// given to :load).
class LineSource {
public:
  LineSource(std::istream &in, const ReplOptions *terminal) : in_(in), terminal_(terminal) {}

  /// The next line, or nothing at the end of the input; on a terminal, `continuation` picks the prompt.
  std::optional<std::string> read(bool continuation) {
    if (!terminal_) {
      std::string line;
      if (!std::getline(in_, line)) return std::nullopt;
      return line;
    }
    char *read = readline(continuation ? "... " : "tg> ");
    if (!read) return std::nullopt;
    std::string line = read;
    std::free(read);
    return line;
  }

  /// Adds a whole input to the terminal's history (and its file).
  void remember(const std::string &input) {
    if (!terminal_ || input.find_first_not_of(" \t") == std::string::npos) return;
    add_history(input.c_str());
    if (!terminal_->historyFile.empty()) write_history(terminal_->historyFile.c_str());
  }

private:
  std::istream &in_;
  const ReplOptions *terminal_;
};

/// Groups lines into inputs: one line, or several while a bracket is open. An input that never closes (the
/// lines end first, or a line inside '(' or '[' starts a statement of its own) is its first line alone, which
/// gets its error; the lines after it are read again as new inputs. So one bad line never swallows the next.
class InputAssembler {
public:
  explicit InputAssembler(LineSource &source) : source_(source) {}

  /// The next input, or nothing at the end of the lines.
  std::optional<std::string> next() {
    if (lines_.empty() && !fetch(false)) return std::nullopt;
    std::string text = lines_[0];
    std::vector<size_t> open;
    scanBrackets(text, 0, open);
    size_t used = 1;
    while (!open.empty()) {
      if (used == lines_.size() && !fetch(true)) break;
      const std::string &line = lines_[used];
      if (text[open.back()] != '{' && startsStatement(line)) break;
      text += '\n';
      scanBrackets(line, text.size(), open);
      text += line;
      ++used;
    }
    if (!open.empty()) {
      text = lines_[0];
      used = 1;
    }
    lines_.erase(lines_.begin(), lines_.begin() + static_cast<std::ptrdiff_t>(used));
    firstLine_ = nextLine_;
    nextLine_ += static_cast<int>(used);
    source_.remember(text);
    return text;
  }

  /// The number of the last input's first line (from 1).
  int firstLine() const { return firstLine_; }

private:
  bool fetch(bool continuation) {
    std::optional<std::string> line = source_.read(continuation);
    if (line) lines_.push_back(std::move(*line));
    return line.has_value();
  }

  LineSource &source_;
  std::deque<std::string> lines_;
  int firstLine_ = 0, nextLine_ = 1;
};

/// Where an input was typed or read: the file (kSource for what is typed) and the number there of its first
/// line (what is typed counts from 1 in each input, as a script's first line does).
struct Origin {
  std::string file = kSource;
  int line = 1;
};

/// Part of a compiled text: statements typed or read at `origin`; on its first line, the first `skip`
/// columns are the REPL's wrapper (`output ` before an expression).
struct Piece {
  std::string text; // ends with a newline
  Origin origin;
  int skip = 0;
};

/// The identifiers `text` names, outside strings and comments: a superset of the session's names it uses
/// (a keyword argument or a module's member may share a name with a let; declaring that let too is harmless).
std::set<std::string> mentions(std::string_view text) {
  std::set<std::string> names;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == '#') {
      i = text.find('\n', i);
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\') ++i;
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t begin = i;
      while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
        ++i;
      names.emplace(text.substr(begin, i - begin));
    } else if (std::isdigit(static_cast<unsigned char>(c))) { // a number, exponent and all (1e5 names no e5)
      while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '.'))
        ++i;
    } else {
      ++i;
    }
  }
  return names;
}

/// The name a declaration `KEYWORD NAME ...` declares, or "" when it does not read so (the parser then says
/// why).
std::string declaredName(const std::string &input) {
  static const std::regex declaration(R"(^\s*(?:input|param|update|import|def)\s+([A-Za-z_]\w*))");
  std::smatch match;
  return std::regex_search(input, match, declaration) ? match[1].str() : "";
}

class Repl {
public:
  Repl(const ReplOptions &options, std::ostream &out, std::ostream &err)
      : options_(options), out_(out), err_(err) {
    try {
      device_ = api::openDevice(options.device).device;
    } catch (const api::Error &error) {
      err_ << "tgc: " << error.message << "; using the CPU\n";
    }
    for (const auto &[name, path] : options.binds)
      handle(":bind " + name + "=" + path, Origin{});
  }

  /// Handles one complete input, typed or read at `origin`; false when the session should end.
  bool handle(const std::string &input, const Origin &origin) {
    auto [word, rest] = splitWord(input);
    size_t first = input.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || input[first] == '#') return true; // blank, or a comment
    if (word != ":step") stepProgram_.reset(); // anything else may change what a step computes
    try {
      if (std::vector<size_t> open = openBrackets(input); !open.empty()) unclosed(input, open.front());
      if (!word.empty() && word[0] == ':') return command(word, rest);
      statement(word, input, origin);
    } catch (const api::Error &error) {
      out_.flush();
      err_ << error.text;
      ++errors_;
    } catch (const ir::UserError &error) {
      report(error, input, origin);
      ++errors_;
    }
    return true;
  }

  /// `:quit CODE`'s code; otherwise 1 when a session that was not typed at a terminal had errors (as a
  /// script's run would), else 0.
  int exitCode() const { return quitCode_ ? *quitCode_ : (!options_.interactive && errors_ > 0 ? 1 : 0); }

private:
  static constexpr const char *kInput = "<input>"; // the display name of an input in the REPL's own errors
  inline static const Origin kNowhere{kSource, 0}; // text the REPL wrote: not shown as a place

  /// A value the session keeps under a name: a let's, an input's (bound by :bind, or none yet) or a param's
  /// (initialized by its `param` statement, changed by :step).
  struct Bound {
    enum Kind { Let, Input, Param } kind = Let;
    runtime::Tensor value;   // undefined: an input that has no value yet
    std::string declaration; // how later statements see it: an input's own statement (its symbolic
                             // dimensions kept), else "input NAME : TYPE" of the value
    Origin origin;           // an input's statement; line 0 (not shown) for the others
    long order = 0;          // what the session keeps is compiled in the order it was made
  };

  /// An import, a def, or a let kept as its statement: one that reads an input or a param (directly or
  /// through such a let), so that later statements compute it from their current values, and `grad` and
  /// the updates see how it depends on them. Kept as its text, with the names it mentions.
  struct Definition {
    std::string text;
    std::set<std::string> mentions;
    Origin origin;
    long order = 0;
  };
  using DefinitionPtr = std::shared_ptr<const Definition>; // a let of several names is one definition

  /// A program compiled from the session: with the values of the names it reads.
  struct Compiled {
    api::Program program;
    api::Program::Values inputs;
  };

  /// How a statement is compiled: as built (to check it, or to print it), or optimized and placed on the
  /// session's device (to run it), or placed for a device whether one is open or not (:ptx, :explain).
  enum class Purpose { Check, Run, PlaceForDevice };

  /// Reports the bracket at `offset` of `input` as never closed (the input ended, or another began).
  [[noreturn]] void unclosed(const std::string &input, size_t offset) {
    static const auto file = std::make_shared<const std::string>(kInput);
    throw ir::UserError("'" + std::string(1, input[offset]) + "' is never closed",
                        ir::locationOfOffset(input, offset, file));
  }

  /// Refuses the words after a command that takes none.
  static void noArguments(const std::string &word, const std::string &rest) {
    if (!rest.empty()) throw ir::UserError("'" + word + "' takes no arguments, got '" + rest + "'");
  }

  /// An error the REPL found in `input` (located in it, as kInput, or elsewhere, or nowhere).
  void report(const ir::UserError &error, const std::string &input, const Origin &origin) {
    out_.flush();
    frontend::DiagnosticEngine diags(err_);
    diags.addSource(kInput, input);
    diags.setLineOrigins(kInput, {{1, origin.file, origin.line, 0}});
    if (auto script = scripts_.find(origin.file); script != scripts_.end())
      diags.addSource(origin.file, script->second);
    else if (origin.file == kSource)
      diags.addSource(kSource, std::string(static_cast<size_t>(std::max(origin.line - 1, 0)), '\n') + input);
    diags.report(error);
  }

  /// The names `body` reads, with those of the definitions it uses, transitively; and those definitions.
  std::set<std::string> namesUsed(const std::vector<Piece> &body, std::set<DefinitionPtr> *used) const {
    std::set<std::string> names;
    std::vector<std::string> work;
    for (const Piece &piece : body)
      for (const std::string &name : mentions(piece.text))
        if (names.insert(name).second) work.push_back(name);
    while (!work.empty()) {
      auto found = definitions_.find(work.back());
      work.pop_back();
      if (found == definitions_.end()) continue;
      if (used) used->insert(found->second);
      for (const std::string &name : found->second->mentions)
        if (names.insert(name).second) work.push_back(name);
    }
    return names;
  }

  /// Whether `body` reads an input or a param, directly or through a let kept as its statement.
  bool readsState(const std::vector<Piece> &body) const {
    std::set<DefinitionPtr> used;
    for (const std::string &name : namesUsed(body, &used))
      if (auto found = values_.find(name); found != values_.end() && found->second.kind != Bound::Let)
        return true;
    for (const DefinitionPtr &definition : used)
      if (lets_.count(definition)) return true;
    return false;
  }

  /// The session's inputs that `body` reads but that have no value yet.
  std::vector<std::string> unbound(const std::vector<Piece> &body) const {
    std::vector<std::string> names;
    for (const std::string &name : namesUsed(body, nullptr))
      if (auto found = values_.find(name);
          found != values_.end() && found->second.kind == Bound::Input && !found->second.value.defined())
        names.push_back(name);
    return names;
  }

  /// Compiles `body` after what the session keeps that it reads: every import, the values it names (as
  /// inputs: the params too, unless `withParams` declares them as params, to be stepped) and the defs it
  /// uses. So a statement costs the same however long the session has run. Errors are thrown as api::Error
  /// with their diagnostics, at the lines and files the pieces came from.
  Compiled compile(const std::vector<Piece> &body, Purpose purpose, bool withParams = false) {
    std::set<DefinitionPtr> used;
    std::set<std::string> names = namesUsed(body, &used);
    // What the body reads, in the order the session made it: a later binding of a name shadows an earlier.
    struct Line {
      long order;
      const std::string *text;
      const Origin *origin;
    };
    std::vector<Line> kept;
    std::vector<std::string> paramLines;
    paramLines.reserve(names.size());
    api::Options options;
    api::Program::Values inputs;
    for (const std::string &name : names) {
      auto found = values_.find(name);
      if (found == values_.end()) continue;
      const Bound &bound = found->second;
      if (!bound.value.defined() && purpose != Purpose::Check)
        throw ir::UserError(
            "input '" + name + "' has no value yet; give it one with :bind " + name +
                "=FILE.npy (or tgc repl --in " + name + "=FILE.npy)",
            {std::make_shared<const std::string>(body.front().origin.file), body.front().origin.line, 1});
      if (withParams && bound.kind == Bound::Param) {
        paramLines.push_back(paramDeclaration(name, bound.value));
        kept.push_back({bound.order, &paramLines.back(), &kNowhere});
        continue;
      }
      kept.push_back({bound.order, &bound.declaration, &bound.origin});
      if (!bound.value.defined()) continue;
      inputs[name] = bound.value;
      options.inputShapes[name] = bound.value.shape();
    }
    for (const auto &[name, import] : imports_)
      used.insert(import);
    for (const DefinitionPtr &definition : used)
      kept.push_back({definition->order, &definition->text, &definition->origin});
    std::sort(kept.begin(), kept.end(), [](const Line &a, const Line &b) { return a.order < b.order; });
    std::string text;
    std::vector<ir::LineOrigin> origins;
    int line = 1;
    auto add = [&](const std::string &piece, const Origin &origin, int skip) {
      origins.push_back({line, origin.file, origin.line, skip});
      text += piece;
      line += static_cast<int>(countLines(piece));
    };
    for (const Line &keptLine : kept)
      add(*keptLine.text, *keptLine.origin, 0);
    for (const Piece &piece : body)
      add(piece.text, piece.origin, piece.skip);
    api::Source source = api::Source::string(std::move(text), body.front().origin.file);
    source.origins = origins;
    options.optimizer = options_.optimizer;
    options.gpuArch = options_.gpuArch;
    options.optimize = options_.optimize && purpose != Purpose::Check;
    options.device = device_;
    options.placeForDevice = purpose == Purpose::PlaceForDevice;
    options.rebinding = true;
    lastName_ = source.name;
    lastOrigins_ = std::move(origins);
    out_.flush();
    return {api::Program::compile(source, options), std::move(inputs)};
  }

  /// A param's declaration in a program that steps it: its value is set before the steps.
  static std::string paramDeclaration(const std::string &name, const runtime::Tensor &value) {
    std::string shape;
    for (int64_t size : value.shape())
      shape += (shape.empty() ? "" : ", ") + std::to_string(size);
    const char *dtype = ir::dtypeName(value.dtype());
    return "param " + name + " : " + typeOf(value) + " = zeros([" + shape + "], dtype=" + dtype + ")\n";
  }

  /// The program that computes `expression` as its outputs (typed at `origin`).
  Compiled compileExpression(const std::string &expression, Purpose purpose, const Origin &origin = {}) {
    if (expression.empty()) throw ir::UserError("this command needs an expression, e.g. :type exp(1.0)");
    return compile({{"output " + expression + "\n", origin, 7}}, purpose);
  }

  void printValue(const std::string &name, const runtime::Tensor &value) {
    std::ostringstream text;
    if (name.empty())
      text << runtime::formatArray(value) << "\n";
    else
      printNamed(text, name, value);
    std::string printed = text.str();
    printed.pop_back();
    out_ << printed << "  # " << typeOf(value) << "\n";
  }

  /// Prints a program's outputs: an expression's value alone, several named.
  void printOutputs(const api::Program &program, const std::vector<runtime::Tensor> &values, bool named,
                    const std::string &prefix = "") {
    for (size_t i = 0; i < values.size(); ++i)
      printValue(named || values.size() > 1 ? prefix + program.outputs()[i].name : "", values[i]);
  }

  bool loading() const { return !loading_.empty(); }

  void statement(const std::string &word, const std::string &input, const Origin &origin) {
    std::string text = input + "\n";
    if (word == "import" || word == "def") return define(word, input, origin);
    if (word == "let") return let(input, origin);
    if (word == "input") return declareInput(input, origin);
    if (word == "param") return param(input, origin);
    if (word == "update") return update(input, origin);
    if (word == "output") {
      if (loading()) {
        outputs_.push_back({text, origin});
        if (!unbound({{text, origin}}).empty()) return; // printed by :step once the inputs are bound
      }
      Compiled compiled = compile({{text, origin}}, Purpose::Run);
      printOutputs(compiled.program, compiled.program.run(compiled.inputs), true);
      return;
    }
    Compiled compiled = compileExpression(input, Purpose::Run, origin);
    printOutputs(compiled.program, compiled.program.run(compiled.inputs), false);
  }

  void define(const std::string &word, const std::string &input, const Origin &origin) {
    std::string name = declaredName(input), text = input + "\n";
    compile({{text, origin}}, Purpose::Check); // the parser says what is wrong with a bad one
    forget(name);
    auto definition = std::make_shared<const Definition>(
        Definition{text, word == "def" ? mentions(text) : std::set<std::string>{}, origin, nextOrder_++});
    (word == "import" ? imports_ : definitions_)[name] = std::move(definition);
  }

  /// Refuses to bind `name` again by a let when it is an input or a param: those change by :bind and :step.
  void refuseRebinding(const std::string &name) const {
    auto found = values_.find(name);
    if (found == values_.end() || found->second.kind == Bound::Let) return;
    throw ir::UserError(found->second.kind == Bound::Input
                            ? "'" + name + "' is an input; :bind " + name + "=FILE.npy gives it another value"
                            : "'" + name + "' is a param; its updates change it (:step), :reset forgets it");
  }

  void let(const std::string &input, const Origin &origin) {
    static const std::regex names(R"(^\s*let\s+([A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*)\s*=)");
    std::smatch match;
    if (!std::regex_search(input, match, names)) { // not a let the parser accepts: let it say why
      compile({{input + "\n", origin}}, Purpose::Check);
      return;
    }
    std::vector<std::string> bound;
    std::stringstream list(match[1].str());
    for (std::string name; std::getline(list, name, ',');) {
      name.erase(std::remove_if(name.begin(), name.end(), ::isspace), name.end());
      refuseRebinding(name);
      bound.push_back(name);
    }
    std::string outputs;
    for (const std::string &name : bound)
      outputs += (outputs.empty() ? "" : ", ") + name;
    std::vector<Piece> body{{input + "\noutput " + outputs + "\n", origin}};
    // A let that reads an input or a param is kept as its statement (unless it binds again a name it reads
    // from another such let, whose statement it replaces): computed when used, from their values then.
    bool symbolic =
        readsState(body) && std::none_of(bound.begin(), bound.end(), [&](const std::string &name) {
          auto found = definitions_.find(name);
          return found != definitions_.end() && lets_.count(found->second);
        });
    bool runs = !symbolic || (!loading() && unbound(body).empty());
    // A let of a kept name computes from the old value: the compiled program binds the name again.
    Compiled compiled = compile(body, runs ? Purpose::Run : Purpose::Check);
    std::vector<runtime::Tensor> values;
    if (runs) values = compiled.program.run(compiled.inputs);
    auto definition = symbolic ? std::make_shared<const Definition>(
                                     Definition{input + "\n", mentions(input), origin, nextOrder_++})
                               : nullptr;
    for (size_t i = 0; i < bound.size(); ++i) {
      forget(bound[i]);
      if (symbolic) {
        definitions_[bound[i]] = definition;
        lets_.insert(definition);
      } else {
        values_[bound[i]] = {Bound::Let, values[i], "input " + bound[i] + " : " + typeOf(values[i]) + "\n",
                             kNowhere, nextOrder_++};
      }
      if (runs && !loading()) printValue(bound[i], values[i]);
    }
  }

  /// `input NAME : TYPE`: a name whose value :bind gives (or gave before the statement).
  void declareInput(const std::string &input, const Origin &origin) {
    std::string name = declaredName(input), text = input + "\n";
    compile({{text, origin}}, Purpose::Check);
    // Declared again (a script loaded again): the value it had is checked against the new declaration.
    if (auto found = values_.find(name);
        found != values_.end() && found->second.kind == Bound::Input && found->second.value.defined())
      waiting_[name] = found->second.value;
    forget(name);
    values_[name] = {Bound::Input, {}, text, origin, nextOrder_++};
    if (auto waiting = waiting_.find(name); waiting != waiting_.end()) {
      runtime::Tensor value = waiting->second;
      waiting_.erase(waiting);
      bind(name, value);
    } else if (auto number = waitingNumbers_.find(name); number != waitingNumbers_.end()) {
      std::string text = number->second;
      waitingNumbers_.erase(number);
      bind(name, numberFor(name, text));
    } else if (!loading()) {
      out_ << name << " has no value yet; :bind " << name << "=FILE.npy gives it one\n";
    }
  }

  /// Gives input `name` a value, checked against its declaration (an error there when it does not fit).
  void bind(const std::string &name, const runtime::Tensor &value) {
    Bound &bound = values_.at(name);
    runtime::Tensor previous = bound.value;
    bound.value = value;
    try {
      Compiled compiled = compile({{"output " + name + "\n", Origin{kSource, 0}}}, Purpose::Check);
      compiled.program.run(compiled.inputs);
    } catch (...) {
      values_.at(name).value = previous;
      throw;
    }
    if (!loading()) out_ << name << " : " << typeOf(value) << "\n";
  }

  /// `param NAME : TYPE = INIT`: a value initialized now, which the updates change at each :step.
  void param(const std::string &input, const Origin &origin) {
    std::string name = declaredName(input); // declared again: initialized again
    Compiled compiled = compile({{input + "\n", origin}}, Purpose::Run);
    runtime::Tensor value = compiled.program.param(name); // initialized here
    forget(name);
    values_[name] = {Bound::Param, value, "input " + name + " : " + typeOf(value) + "\n", kNowhere,
                     nextOrder_++};
    if (!loading()) printValue(name, value);
  }

  /// `update NAME = EXPR`: how :step changes a param.
  void update(const std::string &input, const Origin &origin) {
    std::string name = declaredName(input), text = input + "\n";
    auto found = values_.find(name);
    if (!name.empty() && (found == values_.end() || found->second.kind != Bound::Param)) {
      static const auto file = std::make_shared<const std::string>(kInput);
      throw ir::UserError("'" + name +
                              "' is not a param; an update gives a param its value for the next step",
                          ir::locationOfOffset(input, input.find(name, input.find("update") + 6), file));
    }
    if (unbound({{text, origin}}).empty()) compile({{text, origin}}, Purpose::Check, true);
    updates_[name] = {text, origin};
    if (!loading()) out_ << "update of " << name << " kept; :step applies the updates\n";
  }

  /// Drops what defined `name` before (a let or def bound again replaces the old one).
  void forget(const std::string &name) {
    values_.erase(name);
    if (auto found = definitions_.find(name); found != definitions_.end()) {
      if (found->second.use_count() == 2) lets_.erase(found->second); // its last name (lets_ holds one too)
      definitions_.erase(found);
    }
    imports_.erase(name);
    updates_.erase(name);
  }

  /// `text` with locations in what was compiled last ("<repl>:9:8") as the lines they came from.
  std::string relocate(const std::string &text) const {
    static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
    std::regex location(std::regex_replace(lastName_, special, R"(\$&)") + ":(\\d+):(\\d+)");
    auto file = std::make_shared<const std::string>(lastName_);
    std::string result;
    size_t copied = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), location); it != std::sregex_iterator();
         ++it) {
      ir::SourceLoc loc{file, std::stoi((*it)[1].str()), std::stoi((*it)[2].str())};
      result += text.substr(copied, static_cast<size_t>(it->position()) - copied) +
                ir::shownAs(loc, lastOrigins_).str();
      copied = static_cast<size_t>(it->position() + it->length());
    }
    return result + text.substr(copied);
  }

  bool command(const std::string &word, const std::string &rest) {
    if (word == ":quit" || word == ":q") {
      int code = 0;
      auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), code);
      if (!rest.empty() &&
          (error != std::errc() || end != rest.data() + rest.size() || code < 0 || code > 255))
        throw ir::UserError("'" + word + "' expects an exit code from 0 to 255, got '" + rest + "'");
      quitCode_ = code;
      return false;
    }
    if (word == ":help") {
      noArguments(word, rest);
      out_ << kHelp;
    } else if (word == ":reset") {
      noArguments(word, rest);
      values_.clear();
      definitions_.clear();
      lets_.clear();
      imports_.clear();
      updates_.clear();
      outputs_.clear();
      steps_ = 0;
      out_ << "forgot every import, def, let, input, param and update\n";
    } else if (word == ":device") {
      if (rest != "cpu" && rest != "sim" && rest != "cuda" && rest != "auto")
        throw ir::UserError(":device expects cpu, sim, cuda or auto, got '" + rest + "'");
      api::OpenedDevice opened = api::openDevice(rest);
      device_ = opened.device;
      out_ << "device " << (device_ ? device_->describe() : "cpu") << " (" << opened.why << ")\n";
    } else if (word == ":load") {
      if (rest.empty()) throw ir::UserError("':load' expects a script: :load FILE.tg");
      return load(rest);
    } else if (word == ":bind") {
      bindCommand(rest);
    } else if (word == ":step") {
      step(rest);
    } else if (word == ":save") {
      save(rest);
    } else if (word == ":type") {
      out_ << compileExpression(rest, Purpose::Check).program.outputs().at(0).type.str() << "\n";
    } else if (word == ":ir") {
      out_ << compileExpression(rest, Purpose::Check).program.emit("ir");
    } else if (word == ":opt" || word == ":llvm") {
      out_ << relocate(compileExpression(rest, Purpose::Run).program.emit(word.substr(1)));
    } else if (word == ":ptx") {
      out_ << relocate(compileExpression(rest, Purpose::PlaceForDevice).program.emit("ptx"));
    } else if (word == ":explain") {
      out_ << relocate(compileExpression(rest, Purpose::PlaceForDevice).program.explainPlacement());
    } else if (word == ":time") {
      time(rest);
    } else {
      throw ir::UserError("unknown command '" + word + "'; :help lists them");
    }
    return true;
  }

  /// `:bind NAME=FILE.npy`: the value of an input, now or when a script declares it.
  void bindCommand(const std::string &rest) {
    size_t equals = rest.find('=');
    std::string name = rest.substr(0, std::min(equals, rest.size()));
    std::string path = equals == std::string::npos ? "" : rest.substr(equals + 1);
    static const std::regex identifier(R"([A-Za-z_]\w*)");
    if (!std::regex_match(name, identifier) || path.empty())
      throw ir::UserError("':bind' expects an input's name and a file or a number: :bind NAME=FILE.npy");
    auto found = values_.find(name);
    if (found != values_.end() && found->second.kind != Bound::Input)
      throw ir::UserError(":bind gives inputs their values, and '" + name + "' is a " +
                          (found->second.kind == Bound::Param ? "param" : "let"));
    bool number = looksLikeScalar(path);
    if (found == values_.end()) {
      if (number) {
        waitingNumbers_[name] = path;
        out_ << name << " = " << path << ", for the 'input " << name << "' to come\n";
        return;
      }
      runtime::Tensor value = runtime::Tensor::fromData(io::loadNpy(path));
      waiting_[name] = value;
      out_ << name << " : " << typeOf(value) << ", for the 'input " << name << "' to come\n";
      return;
    }
    bind(name, number ? numberFor(name, path) : runtime::Tensor::fromData(io::loadNpy(path)));
  }

  /// The value `text` (a number, or true or false) gives declared input `name`, typed as it declares.
  runtime::Tensor numberFor(const std::string &name, const std::string &text) {
    Compiled compiled = compile({{"output " + name + "\n", kNowhere}}, Purpose::Check);
    for (api::Port port : compiled.program.inputs()) {
      if (port.name != name) continue;
      const Origin &origin = values_.at(name).origin; // the declaration, where a loaded script has it
      port.loc = origin.file == kSource
                     ? ir::SourceLoc{}
                     : ir::SourceLoc{std::make_shared<const std::string>(origin.file), origin.line, 1};
      return runtime::Tensor::fromData(commandLineScalar(port, text, ":bind " + name + "=" + text));
    }
    throw ir::UserError(":bind: no input named '" + name + "'");
  }

  /// `:step [N]`: N steps (1 by default) of the kept updates, all at once after each step as `tgc run`
  /// applies them; then prints the outputs a loaded script named, as the last step computed them.
  void step(const std::string &rest) {
    long count = 1;
    if (!rest.empty()) {
      auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), count);
      if (error != std::errc() || end != rest.data() + rest.size() || count < 1)
        throw ir::UserError("':step' expects a number of steps, at least 1, got '" + rest + "'");
    }
    if (updates_.empty())
      throw ir::UserError(":step: no update to apply; a script's 'update' statements (or typed ones) say how "
                          "its params change");
    if (!stepProgram_) {
      std::vector<Piece> body;
      for (const auto &[name, update] : updates_)
        body.push_back(update);
      body.insert(body.end(), outputs_.begin(), outputs_.end());
      stepProgram_ = compile(body, Purpose::Run, true);
    }
    api::Program &program = stepProgram_->program;
    for (const api::Port &param : program.params())
      program.setParam(param.name, values_.at(param.name).value);
    std::vector<runtime::Tensor> results;
    for (long i = 0; i < count; ++i)
      results = program.step(stepProgram_->inputs);
    for (const api::Port &param : program.params())
      values_.at(param.name).value = program.param(param.name);
    steps_ += count;
    if (results.empty()) out_ << "step " << steps_ << "\n";
    printOutputs(program, results, true, "step " + std::to_string(steps_) + ": ");
  }

  void time(const std::string &expression) {
    auto start = Clock::now();
    Compiled compiled = compileExpression(expression, Purpose::Run);
    compiled.program.run(compiled.inputs); // kernels compiled (or read from the cache) here
    double first = std::chrono::duration<double>(Clock::now() - start).count();
    double best = 1e30, total = 0;
    int runs = 0;
    while (runs < 3 || (total < 0.5 && runs < 1000)) {
      auto begin = Clock::now();
      compiled.program.run(compiled.inputs);
      double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
      best = std::min(best, seconds);
      total += seconds;
      ++runs;
    }
    char line[160];
    std::snprintf(line, sizeof line,
                  "first run %.3f ms (compile included); then best %.3f ms, mean %.3f ms of %d\n",
                  first * 1e3, best * 1e3, total / runs * 1e3, runs);
    out_ << line;
  }

  /// Runs a script's statements here, each located in the script; stops at its first error. False when one
  /// of them ends the session (:quit).
  bool load(const std::string &path) {
    std::string error;
    std::optional<std::string> text = frontend::readSourceFile(path, error);
    if (!text) throw ir::UserError(":load: cannot read '" + path + "': " + error);
    if (std::count(loading_.begin(), loading_.end(), path))
      throw ir::UserError(":load: '" + path + "' is already being loaded (it loads itself)");
    std::istringstream lines(*text);
    LineSource source(lines, nullptr);
    InputAssembler inputs(source);
    scripts_[path] = *text;   // to show the line of an error
    loading_.push_back(path); // a script's lets are kept quietly; its outputs print
    bool goOn = true;
    unsigned errorsBefore = errors_;
    while (goOn && errors_ == errorsBefore) {
      std::optional<std::string> input = inputs.next();
      if (!input) break;
      goOn = handle(*input, Origin{path, inputs.firstLine()});
    }
    loading_.pop_back();
    if (errors_ != errorsBefore) {
      err_ << path << ": note: stopped loading at its first error\n";
      return goOn;
    }
    std::vector<std::string> waiting;
    for (const auto &[name, bound] : values_)
      if (bound.kind == Bound::Input && !bound.value.defined() && bound.origin.file == path)
        waiting.push_back(name);
    if (!waiting.empty()) {
      out_ << path << ": its inputs need values:";
      for (const std::string &name : waiting)
        out_ << " :bind " << name << "=FILE.npy";
      out_ << "\n";
    }
    if (!updates_.empty() && loading_.empty())
      out_ << path << ": " << updates_.size() << (updates_.size() == 1 ? " update" : " updates")
           << "; :step [N] applies them\n";
    return goOn;
  }

  void save(const std::string &arguments) {
    std::string file, name, extra;
    std::istringstream words(arguments);
    words >> file >> name >> extra;
    if (file.empty() || name.empty() || !extra.empty())
      throw ir::UserError("':save' expects a file and a let's name: :save FILE.npy NAME");
    auto found = values_.find(name);
    if (found == values_.end() || !found->second.value.defined())
      throw ir::UserError(":save: no let, input or param named '" + name + "' has a value");
    io::saveNpy(file, found->second.value.toData());
    out_ << "saved " << name << " to " << file << "\n";
  }

  ReplOptions options_;
  std::ostream &out_;
  std::ostream &err_;
  std::shared_ptr<runtime::Device> device_;
  std::map<std::string, Bound> values_;
  std::map<std::string, DefinitionPtr> definitions_, imports_; // defs and lets kept as statements; imports
  std::set<DefinitionPtr> lets_;                               // the lets among definitions_
  std::map<std::string, runtime::Tensor> waiting_;             // :bind values for inputs not declared yet
  std::map<std::string, std::string> waitingNumbers_;          // and numbers, typed when declared
  std::map<std::string, Piece> updates_;                       // by param
  std::vector<Piece> outputs_;          // a loaded script's outputs, which :step prints
  std::optional<Compiled> stepProgram_; // what :step ran last, while nothing else was done
  long nextOrder_ = 0, steps_ = 0;
  std::string lastName_;                    // the source name of what was compiled last
  std::vector<ir::LineOrigin> lastOrigins_; // and where its lines came from
  unsigned errors_ = 0;
  std::optional<int> quitCode_;
  std::vector<std::string> loading_;           // the scripts being loaded, outermost first
  std::map<std::string, std::string> scripts_; // the text of each script loaded
};

} // namespace

std::string defaultHistoryFile() {
  if (const char *file = std::getenv("TGC_HISTORY"); file && *file) return file;
  if (const char *home = std::getenv("HOME"); home && *home) return std::string(home) + "/.tgc_history";
  return "";
}

int runRepl(const ReplOptions &options, std::istream &in, std::ostream &out, std::ostream &err) {
  if (options.interactive) {
    using_history();
    if (!options.historyFile.empty()) read_history(options.historyFile.c_str());
    out << "tgc " << TGC_VERSION_STRING << " REPL: statements and expressions; :help lists the commands"
        << std::endl;
  }
  Repl repl(options, out, err);
  LineSource source(in, options.interactive ? &options : nullptr);
  InputAssembler inputs(source);
  while (std::optional<std::string> input = inputs.next()) {
    if (!repl.handle(*input, {kSource, 1})) break;
    out.flush();
  }
  out.flush();
  return repl.exitCode();
}

} // namespace tg::tools
