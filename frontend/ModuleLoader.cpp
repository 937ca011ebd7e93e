#include "frontend/ModuleLoader.h"

#include "frontend/Parser.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace tg::frontend {

std::optional<std::string> readSourceFile(const std::string &path, std::string &error) {
  std::error_code code;
  if (std::filesystem::is_directory(path, code)) {
    error = "it is a directory";
    return std::nullopt;
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  // Read in chunks up to the limit, so that a stream that never ends (a device, a pipe) is refused rather
  // than read until memory runs out.
  std::string text;
  char buffer[1 << 16];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) {
    if (text.size() + got > kMaxSourceBytes) {
      error = "it is larger than " + std::to_string(kMaxSourceBytes >> 20) + " MiB, the limit for a script";
      return std::nullopt;
    }
    text.append(buffer, got);
  }
  if (std::ferror(file.get())) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  return text;
}

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
  std::unique_ptr<Module> module = parseModule(std::move(text), file, diags_);
  if (!module) return nullptr;
  modules_.push_back(std::move(module));
  return modules_.back().get();
}

const Module *ModuleLoader::loadScript(const std::string &path, const SourceLoc &importLoc) {
  std::string error;
  std::optional<std::string> text = readSourceFile(path, error);
  if (!text) {
    diags_.error(importLoc, "cannot read '" + path + "': " + error);
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
    std::error_code code;
    if (!std::filesystem::exists(path, code)) continue;
    const Module *module = loadScript(path, loc);
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
