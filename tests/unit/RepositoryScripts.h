// The .tg scripts of the repository (examples/, stdlib/, tests/) that are valid UTF-8, for the tests that
// check the hand-written lexer and parser against ANTLR's, generated from grammar/Tg.g4.
#pragma once

#include "frontend/Lexer.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace tg::frontend {

/// Each script's path and text. The few of invalid UTF-8 are left out: they never reach a lexer
/// (frontend/Parser.cpp reports the byte first).
inline std::vector<std::pair<std::string, std::string>> repositoryScripts() {
  std::vector<std::pair<std::string, std::string>> scripts;
  for (const char *folder : {"examples", "stdlib", "tests"})
    for (const auto &entry :
         std::filesystem::recursive_directory_iterator(std::string(TGC_SOURCE_DIR) + "/" + folder)) {
      if (entry.path().extension() != ".tg") continue;
      std::ifstream file(entry.path(), std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
      try {
        CodePointStream probe(text); // throws on invalid UTF-8
      } catch (const std::exception &) {
        continue;
      }
      scripts.emplace_back(entry.path().string(), std::move(text));
    }
  return scripts;
}

} // namespace tg::frontend
