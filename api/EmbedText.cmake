# Writes a C++ file defining `const char *tg::api::FUNCTION()`: the text of INPUT (api/CMakeLists.txt).
file(READ ${INPUT} text)
file(WRITE ${OUTPUT} "// Generated from ${INPUT} by api/EmbedText.cmake; do not edit.
namespace tg::api {

const char *${FUNCTION}() {
  return R\"TGCTEXT(${text})TGCTEXT\";
}

} // namespace tg::api
")
