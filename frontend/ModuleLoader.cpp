#include "frontend/ModuleLoader.h"

#include "frontend/Parser.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tg::frontend {

namespace {

std::optional<std::string> readFile(const std::string &path, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    error = "read error";
    return std::nullopt;
  }
  return text.str();
}

} // namespace

std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

ModuleLoader::ModuleLoader(DiagnosticEngine &diags, std::vector<std::string> searchPath)
    : diags_(diags), searchPath_(std::move(searchPath)) {}

std::vector<std::string> ModuleLoader::searchPathFromEnvironment() {
  std::vector<std::string> folders;
  const char *value = std::getenv("TGC_PATH");
  if (!value) return folders;
  std::stringstream list(value);
  std::string folder;
  while (std::getline(list, folder, ':'))
    if (!folder.empty()) folders.push_back(folder);
  return folders;
}

const Module *ModuleLoader::parse(const std::string &displayName, std::string text) {
  auto file = std::make_shared<const std::string>(displayName);
  std::unique_ptr<Module> module = parseModule(text, file, diags_);
  if (!module) return nullptr;
  modules_.push_back(std::move(module));
  return modules_.back().get();
}

const Module *ModuleLoader::loadScript(const std::string &path) {
  std::string error;
  std::optional<std::string> text = readFile(path, error);
  if (!text) {
    diags_.error({}, "cannot read '" + path + "': " + error);
    return nullptr;
  }
  return parse(path, std::move(*text));
}

const Module *ModuleLoader::loadSource(const std::string &displayName, std::string text) {
  return parse(displayName, std::move(text));
}

const Module *ModuleLoader::loadModule(const std::string &name, const std::string &importerFolder,
                                       const SourceLoc &loc) {
  std::vector<std::string> folders{importerFolder};
  folders.insert(folders.end(), searchPath_.begin(), searchPath_.end());
  for (const std::string &folder : folders) {
    std::string path = folder + "/" + name + ".tg";
    if (auto cached = byName_.find(path); cached != byName_.end()) return cached->second;
    std::ifstream probe(path);
    if (!probe) continue;
    const Module *module = loadScript(path);
    byName_[path] = module;
    return module;
  }
  const auto &stdlib = embeddedStdlib();
  auto found = stdlib.find(name);
  if (found == stdlib.end()) {
    std::string searched = "searched " + importerFolder;
    for (const std::string &folder : searchPath_)
      searched += ", " + folder;
    diags_.error(loc, "no module named '" + name + "' (" + searched + ", and the standard library)");
    return nullptr;
  }
  std::string key = "<stdlib>/" + name + ".tg";
  if (auto cached = byName_.find(key); cached != byName_.end()) return cached->second;
  const Module *module = parse(key, found->second);
  byName_[key] = module;
  return module;
}

} // namespace tg::frontend
