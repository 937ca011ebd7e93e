# Writes a C++ file defining tg::frontend::embeddedStdlib(): module name -> source text.
string(REPLACE "|" ";" MODULES "${MODULES}") # the files, joined by '|' (stdlib/CMakeLists.txt)
set(body "")
foreach(module ${MODULES})
  get_filename_component(name ${module} NAME_WE)
  file(READ ${module} text)
  string(APPEND body "      {\"${name}\", R\"TGSTDLIB(${text})TGSTDLIB\"},\n")
endforeach()
file(WRITE ${OUTPUT} "// Generated from stdlib/*.tg by stdlib/Embed.cmake; do not edit.
#include <map>
#include <string>

namespace tg::frontend {

const std::map<std::string, std::string> &embeddedStdlib() {
  static const std::map<std::string, std::string> modules{
${body}  };
  return modules;
}

} // namespace tg::frontend
")
