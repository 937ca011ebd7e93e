#include "tools/Repl.h"

#include "frontend/Diagnostics.h"
#include "frontend/ModuleLoader.h"
#include "io/Npy.h"
#include "runtime/Print.h"
#include "api/Api.h"
#include "api/Stages.h"

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
    R"(Statements: import, def, let (kept for what follows) and expressions (printed with their type).
Commands (EXPR is any expression):
  :type EXPR        its type, without running it
  :ir EXPR          its graph as built
  :opt EXPR         its graph after the optimizer (placed on the current device)
  :llvm EXPR        the LLVM IR of its host kernels
  :ptx EXPR         the PTX of its kernels, placed for a GPU (no GPU needed)
  :explain EXPR     where each of its nodes runs on a device, and why
  :time EXPR        how long it takes to compile and to run
  :device NAME      run on cpu, sim, cuda or auto from now on
  :load FILE.tg     run a script's statements here (its lets are kept, its outputs printed)
  :save FILE.npy NAME   save a let's value
  :reset            forget every import, def and let
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

class Repl {
public:
  Repl(const ReplOptions &options, std::ostream &out, std::ostream &err)
      : options_(options), out_(out), err_(err) {
    try {
      device_ = api::openDevice(options.device).device;
    } catch (const api::Error &error) {
      err_ << "tgc: " << error.message << "; using the CPU\n";
    }
  }

  /// Handles one complete input; false when the session should end.
  bool handle(const std::string &input) {
    auto [word, rest] = splitWord(input);
    size_t first = input.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || input[first] == '#') return true; // blank, or a comment
    try {
      if (std::vector<size_t> open = openBrackets(input); !open.empty()) unclosed(input, open.front());
      if (!word.empty() && word[0] == ':') return command(word, rest);
      statement(word, input);
    } catch (const api::Error &error) {
      out_.flush();
      err_ << error.text;
    } catch (const ir::UserError &error) {
      report(error);
    }
    return true;
  }

  int exitCode() const { return exitCode_; }

private:
  /// Reports the bracket at `offset` of `input` as never closed (the input ended, or another began).
  [[noreturn]] void unclosed(const std::string &input, size_t offset) {
    static const auto file = std::make_shared<const std::string>(kSource);
    lastSource_ = input;
    lastOffset_ = 0;
    throw ir::UserError("'" + std::string(1, input[offset]) + "' is never closed",
                        ir::locationOfOffset(input, offset, file));
  }

  /// Refuses the words after a command that takes none.
  static void noArguments(const std::string &word, const std::string &rest) {
    if (!rest.empty()) throw ir::UserError("'" + word + "' takes no arguments, got '" + rest + "'");
  }

  /// What the session keeps: the source of an import or a def, or one let's value, which later statements
  /// read as an input of that name and type (so they compile to kernels, not to folded constants).
  struct Entry {
    enum Kind { Import, Def, Value } kind;
    std::string name;
    std::string text;      // ends with a newline
    runtime::Tensor value; // Value only
  };

  std::map<std::string, runtime::Tensor> keptValues() const {
    std::map<std::string, runtime::Tensor> values;
    for (const Entry &entry : entries_)
      if (entry.kind == Entry::Value) values[entry.name] = entry.value;
    return values;
  }

  std::string prefix() const {
    std::string text;
    for (const Entry &entry : entries_)
      text += entry.text;
    return text;
  }

  void report(const ir::UserError &error) {
    out_.flush();
    frontend::DiagnosticEngine diags(err_);
    diags.addSource(kSource, lastSource_);
    diags.setLineOffset(kSource, lastOffset_);
    diags.report(error);
  }

  /// How a statement is compiled: as built (to check it, or to print it), or optimized and placed on the
  /// session's device (to run it), or placed for a device whether one is open or not (:ptx, :explain).
  enum class Purpose { Check, Run, PlaceForDevice };

  /// Compiles the kept entries followed by `body`, whose first line is reported as line 1 of what was typed
  /// plus `bodyLineOffset`. An error is thrown as api::Error with its diagnostics.
  api::Program compile(const std::string &body, Purpose purpose, int bodyLineOffset = 0) {
    std::string kept = prefix();
    lastSource_ = kept + body;
    lastOffset_ = static_cast<int>(countLines(kept)) + bodyLineOffset;
    api::Source source = api::Source::string(lastSource_, kSource);
    source.preludeLines = lastOffset_;
    api::Options options;
    options.optimizer = options_.optimizer;
    options.gpuArch = options_.gpuArch;
    options.optimize = options_.optimize && purpose != Purpose::Check;
    options.device = device_;
    options.placeForDevice = purpose == Purpose::PlaceForDevice;
    for (const Entry &entry : entries_)
      if (entry.kind == Entry::Value) options.inputShapes[entry.name] = entry.value.shape();
    out_.flush();
    return api::Program::compile(source, options);
  }

  /// The program that computes `expression` as its one output.
  api::Program compileExpression(const std::string &expression, Purpose purpose) {
    if (expression.empty()) throw ir::UserError("this command needs an expression, e.g. :type exp(1.0)");
    return compile(std::string("let ") + kValueName + " = (\n" + expression + "\n)\noutput " + kValueName +
                       "\n",
                   purpose, 1);
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

  void statement(const std::string &word, const std::string &input) {
    std::string text = input + "\n";
    if (word == "input" || word == "param" || word == "update")
      throw ir::UserError("'" + word +
                          "' is for scripts run with tgc run; in the REPL, bind data with let, e.g. let x = "
                          "load(\"x.npy\")");
    if (word == "import" || word == "def") {
      std::string name = splitWord(splitWord(input).second).first;
      std::vector<Entry> saved = entries_;
      forget(name);
      try {
        compile(text, Purpose::Check);
      } catch (const api::Error &) {
        entries_ = saved;
        throw;
      }
      entries_.push_back({word == "import" ? Entry::Import : Entry::Def, name, text, {}});
      return;
    }
    if (word == "let") return let(input);
    if (word == "output") {
      api::Program program = compile(text, Purpose::Run);
      std::vector<runtime::Tensor> values = program.run(keptValues());
      for (size_t i = 0; i < values.size(); ++i)
        printValue(program.outputs()[i].name, values[i]);
      return;
    }
    printValue("", compileExpression(input, Purpose::Run).run(keptValues()).at(0));
  }

  void let(const std::string &input) {
    static const std::regex names(R"(^\s*let\s+([A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*)\s*=)");
    std::smatch match;
    if (!std::regex_search(input, match, names)) { // not a let the parser accepts: let it say why
      compile(input + "\n", Purpose::Check);
      return;
    }
    std::vector<std::string> bound;
    std::stringstream list(match[1].str());
    for (std::string name; std::getline(list, name, ',');) {
      name.erase(std::remove_if(name.begin(), name.end(), ::isspace), name.end());
      bound.push_back(name);
    }
    // A let of a kept name computes from the old value: the right-hand side is bound to fresh names, read
    // as one expression (its own line), and replaces the old value afterwards.
    bool rebinds = std::any_of(bound.begin(), bound.end(), [&](const std::string &name) {
      return std::any_of(entries_.begin(), entries_.end(),
                         [&](const Entry &entry) { return entry.name == name; });
    });
    std::string targets, outputs;
    for (size_t i = 0; i < bound.size(); ++i) {
      std::string target = rebinds ? std::string(kValueName) + std::to_string(i) : bound[i];
      targets += (i ? ", " : "") + target;
    }
    api::Program program =
        rebinds ? compile("let " + targets + " = (\n" + input.substr(static_cast<size_t>(match.length(0))) +
                              "\n)\noutput " + targets + "\n",
                          Purpose::Run, 1)
                : compile(input + "\noutput " + targets + "\n", Purpose::Run);
    std::vector<runtime::Tensor> values = program.run(keptValues());
    for (size_t i = 0; i < bound.size(); ++i) {
      forget(bound[i]);
      entries_.push_back(
          {Entry::Value, bound[i], "input " + bound[i] + " : " + typeOf(values[i]) + "\n", values[i]});
      if (loading_.empty()) printValue(bound[i], values[i]);
    }
  }

  /// `text` with locations in what was compiled last ("<repl>:9:8") as lines of what was typed.
  std::string relocate(const std::string &text) const {
    static const std::regex location("<repl>:(\\d+):(\\d+)");
    std::string result;
    auto begin = std::sregex_iterator(text.begin(), text.end(), location);
    size_t copied = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      int line = std::stoi((*it)[1].str());
      result += text.substr(copied, static_cast<size_t>(it->position()) - copied);
      result += std::string(kSource) + ":" + std::to_string(line > lastOffset_ ? line - lastOffset_ : line) +
                ":" + (*it)[2].str();
      copied = static_cast<size_t>(it->position() + it->length());
    }
    return result + text.substr(copied);
  }

  /// Drops what defined `name` before (a let or def bound again replaces the old one).
  void forget(const std::string &name) {
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [&](const Entry &entry) { return entry.name == name; }),
                   entries_.end());
  }

  bool command(const std::string &word, const std::string &rest) {
    if (word == ":quit" || word == ":q") {
      int code = 0;
      auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), code);
      if (!rest.empty() &&
          (error != std::errc() || end != rest.data() + rest.size() || code < 0 || code > 255))
        throw ir::UserError("'" + word + "' expects an exit code from 0 to 255, got '" + rest + "'");
      exitCode_ = code;
      return false;
    }
    if (word == ":help") {
      noArguments(word, rest);
      out_ << kHelp;
    } else if (word == ":reset") {
      noArguments(word, rest);
      entries_.clear();
      out_ << "forgot every import, def and let\n";
    } else if (word == ":device") {
      if (rest != "cpu" && rest != "sim" && rest != "cuda" && rest != "auto")
        throw ir::UserError(":device expects cpu, sim, cuda or auto, got '" + rest + "'");
      api::OpenedDevice opened = api::openDevice(rest);
      device_ = opened.device;
      out_ << "device " << (device_ ? device_->describe() : "cpu") << " (" << opened.why << ")\n";
    } else if (word == ":load") {
      if (rest.empty()) throw ir::UserError("':load' expects a script: :load FILE.tg");
      return load(rest);
    } else if (word == ":save") {
      save(rest);
    } else if (word == ":type") {
      out_ << compileExpression(rest, Purpose::Check).outputs().at(0).type.str() << "\n";
    } else if (word == ":ir") {
      out_ << compileExpression(rest, Purpose::Check).emit("ir");
    } else if (word == ":opt" || word == ":llvm") {
      out_ << relocate(compileExpression(rest, Purpose::Run).emit(word.substr(1)));
    } else if (word == ":ptx") {
      out_ << relocate(compileExpression(rest, Purpose::PlaceForDevice).emit("ptx"));
    } else if (word == ":explain") {
      out_ << relocate(compileExpression(rest, Purpose::PlaceForDevice).explainPlacement());
    } else if (word == ":time") {
      time(rest);
    } else {
      throw ir::UserError("unknown command '" + word + "'; :help lists them");
    }
    return true;
  }

  void time(const std::string &expression) {
    auto start = Clock::now();
    api::Program program = compileExpression(expression, Purpose::Run);
    std::map<std::string, runtime::Tensor> inputs = keptValues();
    program.run(inputs); // kernels compiled (or read from the cache) here
    double first = std::chrono::duration<double>(Clock::now() - start).count();
    double best = 1e30, total = 0;
    int runs = 0;
    while (runs < 3 || (total < 0.5 && runs < 1000)) {
      auto begin = Clock::now();
      program.run(inputs);
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

  /// Runs a script's statements; false when one of them ends the session (:quit).
  bool load(const std::string &path) {
    std::string error;
    std::optional<std::string> text = frontend::readSourceFile(path, error);
    if (!text) throw ir::UserError(":load: cannot read '" + path + "': " + error);
    if (std::count(loading_.begin(), loading_.end(), path))
      throw ir::UserError(":load: '" + path + "' is already being loaded (it loads itself)");
    std::istringstream lines(*text);
    LineSource source(lines, nullptr);
    InputAssembler inputs(source);
    loading_.push_back(path); // a script's lets are kept quietly; its outputs print
    bool goOn = true;
    while (goOn) {
      std::optional<std::string> input = inputs.next();
      if (!input) break;
      std::string word = splitWord(*input).first;
      if (word == "input" || word == "param" || word == "update")
        err_ << path << ":" << inputs.firstLine() << ": note: skipped '" << word
             << "': not available in the REPL\n";
      else
        goOn = handle(*input);
    }
    loading_.pop_back();
    return goOn;
  }

  void save(const std::string &arguments) {
    std::string file, name, extra;
    std::istringstream words(arguments);
    words >> file >> name >> extra;
    if (file.empty() || name.empty() || !extra.empty())
      throw ir::UserError("':save' expects a file and a let's name: :save FILE.npy NAME");
    for (const Entry &entry : entries_)
      if (entry.kind == Entry::Value && entry.name == name) {
        io::saveNpy(file, entry.value.toData());
        out_ << "saved " << name << " to " << file << "\n";
        return;
      }
    throw ir::UserError(":save: no let named '" + name + "'");
  }

  ReplOptions options_;
  std::ostream &out_;
  std::ostream &err_;
  std::shared_ptr<runtime::Device> device_;
  std::vector<Entry> entries_;
  std::string lastSource_;
  int lastOffset_ = 0;
  int exitCode_ = 0;
  std::vector<std::string> loading_; // the scripts being loaded, outermost first
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
    if (!repl.handle(*input)) break;
    out.flush();
  }
  out.flush();
  return repl.exitCode();
}

} // namespace tg::tools
