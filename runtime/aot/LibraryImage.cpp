#include "runtime/aot/LibraryImage.h"

#include "ir/SourceLoc.h"

#include <cstdint>
#include <cstring>

namespace tg::runtime::aot {

namespace {

constexpr char kMagic[8] = {'T', 'G', 'C', 'L', 'I', 'B', '\0', '\0'};
constexpr uint32_t kFormatVersion = 1;

void putCount(std::string &out, uint64_t count) {
  out.append(reinterpret_cast<const char *>(&count), sizeof count);
}
void putString(std::string &out, const std::string &text) {
  putCount(out, text.size());
  out += text;
}

class Reader {
public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  uint64_t count() {
    if (bytes_.size() < sizeof(uint64_t)) damaged();
    uint64_t value;
    std::memcpy(&value, bytes_.data(), sizeof value);
    bytes_.remove_prefix(sizeof value);
    return value;
  }
  std::string string() {
    uint64_t size = count();
    if (size > bytes_.size()) damaged();
    std::string text(bytes_.substr(0, size));
    bytes_.remove_prefix(size);
    return text;
  }
  bool atEnd() const { return bytes_.empty(); }
  [[noreturn]] static void damaged() { throw ir::UserError("the library's image is damaged"); }

private:
  std::string_view bytes_;
};

} // namespace

std::string LibraryImage::write() const {
  std::string out(kMagic, sizeof kMagic);
  out.append(reinterpret_cast<const char *>(&kFormatVersion), sizeof kFormatVersion);
  putString(out, device);
  putString(out, gpuArch);
  putString(out, hostProgram);
  putString(out, deviceProgram);
  putCount(out, hostKernels.size());
  for (const std::string &name : hostKernels)
    putString(out, name);
  putCount(out, ptx.size());
  for (const auto &[name, text] : ptx) {
    putString(out, name);
    putString(out, text);
  }
  return out;
}

LibraryImage LibraryImage::read(std::string_view bytes) {
  uint32_t version = 0;
  if (bytes.size() < sizeof kMagic + sizeof version || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw ir::UserError("not a library made by tgc compile --emit=lib");
  std::memcpy(&version, bytes.data() + sizeof kMagic, sizeof version);
  if (version != kFormatVersion)
    throw ir::UserError("the library was made by another version of tgc (image format " +
                        std::to_string(version) + ", this runtime reads " + std::to_string(kFormatVersion) +
                        ")");
  Reader reader(bytes.substr(sizeof kMagic + sizeof version));
  LibraryImage image;
  image.device = reader.string();
  image.gpuArch = reader.string();
  image.hostProgram = reader.string();
  image.deviceProgram = reader.string();
  for (uint64_t i = 0, count = reader.count(); i < count; ++i)
    image.hostKernels.push_back(reader.string());
  for (uint64_t i = 0, count = reader.count(); i < count; ++i) {
    std::string name = reader.string();
    image.ptx.emplace_back(std::move(name), reader.string());
  }
  if (!reader.atEnd()) Reader::damaged();
  return image;
}

} // namespace tg::runtime::aot
