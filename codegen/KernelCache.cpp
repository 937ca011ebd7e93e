// The disk cache of compiled kernels: keys, entry files, the cache directory and its counters (the format is
// in KernelCache.h).
#include "codegen/KernelCache.h"

#include "ir/ScalarGraph.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <link.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/xxhash.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace tg::codegen {

namespace {

/// Bump when the generated code or this file's format changes in a way the build ID would not show (it
/// shows any change to the executable, so this matters for builds without one).
constexpr uint32_t kFormatVersion = 1;
constexpr char kMagic[8] = {'T', 'G', 'C', 'K', 'E', 'R', 'N', '\0'};
constexpr size_t kHeaderSize = sizeof kMagic + 4 + 32 + 8 + 8;

/// The build ID (ld --build-id) of the binary that holds this code, as hex; "none" when the linker wrote
/// none.
std::string buildId() {
  static const std::string id = [] {
    static const char anchor = 0;
    struct Search {
      uintptr_t address;
      std::string id = "none";
    } search{reinterpret_cast<uintptr_t>(&anchor)};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) -> int {
          Search &search = *static_cast<Search *>(data);
          bool holdsAnchor = false;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr) &segment = info->dlpi_phdr[i];
            uintptr_t start = info->dlpi_addr + segment.p_vaddr;
            holdsAnchor |= segment.p_type == PT_LOAD && search.address >= start &&
                           search.address < start + segment.p_memsz;
          }
          if (!holdsAnchor) return 0;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr) &segment = info->dlpi_phdr[i];
            if (segment.p_type != PT_NOTE) continue;
            size_t align = segment.p_align == 8 ? 8 : 4;
            auto padded = [align](size_t size) { return (size + align - 1) / align * align; };
            const char *note = reinterpret_cast<const char *>(info->dlpi_addr + segment.p_vaddr);
            const char *end = note + segment.p_memsz;
            while (note + sizeof(ElfW(Nhdr)) <= end) {
              const auto *header = reinterpret_cast<const ElfW(Nhdr) *>(note);
              const char *name = note + sizeof(ElfW(Nhdr));
              const char *description = name + padded(header->n_namesz);
              if (description + header->n_descsz > end) break;
              if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 &&
                  std::memcmp(name, "GNU", 4) == 0) {
                search.id.clear();
                for (size_t k = 0; k < header->n_descsz; ++k) {
                  char digits[3];
                  std::snprintf(digits, sizeof digits, "%02x", static_cast<unsigned char>(description[k]));
                  search.id += digits;
                }
                return 1;
              }
              note = description + padded(header->n_descsz);
            }
          }
          return 1;
        },
        &search);
    return search.id;
  }();
  return id;
}

/// The directory in use, how it was chosen, and the counters.
struct CacheState {
  std::mutex mutex;
  bool chosen = false;   // by setKernelCacheDirectory, or from the environment on first use
  bool prepared = false; // the directory was created and found writable, or the cache turned off
  std::optional<std::string> directory;
  std::string offReason;
  KernelCacheStats stats;
};

CacheState &state() {
  static CacheState cacheState;
  return cacheState;
}

/// The cache directory, created on first use; nullopt when the cache is off. Call with the mutex held.
std::optional<std::string> activeDirectory(CacheState &cache) {
  if (!cache.chosen) {
    cache.chosen = true;
    cache.directory = defaultKernelCacheDirectory();
    if (!cache.directory) cache.offReason = "neither $XDG_CACHE_HOME nor $HOME is set";
  }
  if (cache.directory && !cache.prepared) {
    std::error_code error;
    std::filesystem::create_directories(*cache.directory, error);
    if (!error && access(cache.directory->c_str(), W_OK | X_OK) != 0)
      error = std::error_code(errno, std::generic_category());
    if (error) {
      cache.offReason = "cannot use " + *cache.directory + ": " + error.message();
      cache.directory.reset();
    }
  }
  cache.prepared = true;
  return cache.directory;
}

/// How many active KernelCacheBypass objects live on this thread.
thread_local int bypasses = 0;

/// The directory, or nullopt when the cache is off (or bypassed on this thread).
std::optional<std::string> cacheDirectory() {
  if (bypasses > 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(state().mutex);
  return activeDirectory(state());
}

void count(size_t KernelCacheStats::*field) {
  std::lock_guard<std::mutex> lock(state().mutex);
  ++(state().stats.*field);
}

void appendInteger(std::string &out, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    out += static_cast<char>(value >> (8 * i) & 0xff);
}

uint64_t readInteger(const char *in, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes; ++i)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return value;
}

/// The file at `path`, up to the first read error (which the entry's length then rejects); nullopt when it
/// cannot be opened (a miss, not a corrupt entry).
std::optional<std::string> readFile(const std::string &path) {
  int file = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file < 0) return std::nullopt;
  std::string bytes;
  struct stat info;
  if (fstat(file, &info) == 0 && info.st_size > 0) bytes.reserve(static_cast<size_t>(info.st_size));
  char buffer[1 << 16];
  ssize_t got;
  while ((got = read(file, buffer, sizeof buffer)) > 0)
    bytes.append(buffer, static_cast<size_t>(got));
  close(file);
  return bytes;
}

} // namespace

std::string KernelCacheKey::hex() const {
  std::string text;
  for (uint8_t byte : digest) {
    char digits[3];
    std::snprintf(digits, sizeof digits, "%02x", byte);
    text += digits;
  }
  return text;
}

KernelCacheKey kernelCacheKey(const KernelSpec &spec, CachedCode code, const std::string &target) {
  // One field per line, names rather than enum values (an op added to Ops.def renumbers the enum).
  std::string text = "tgc kernel cache\nformat " + std::to_string(kFormatVersion) +
                     "\ntgc " TGC_VERSION "\nllvm " LLVM_VERSION_STRING "\nbuild " + buildId() + "\n";
  text += code == CachedCode::HostObject        ? "code host\n"
          : code == CachedCode::SimDeviceObject ? "code sim\n"
                                                : "code ptx\n";
  text += "target " + target + "\n";
  text += spec.layout == Layout::Contiguous ? "layout contiguous\n" : "layout strided\n";
  text += "inputs";
  for (ir::DType dtype : spec.body->inputDtypes)
    text += std::string(" ") + ir::dtypeName(dtype);
  for (const ir::ScalarInstr &instr : spec.body->body) {
    text += std::string("\n") + ir::opName(instr.kind) + " " + ir::dtypeName(instr.dtype);
    for (uint32_t operand : instr.operands)
      text += " %" + std::to_string(operand);
    uint64_t bits; // NaN payloads and -0.0 are constants of their own
    std::memcpy(&bits, &instr.immediate, sizeof bits);
    text += " #" + std::to_string(bits);
    if (instr.kind == ir::OpKind::Gather) text += " rank " + std::to_string(instr.indexRank);
  }
  text += std::string("\nreduction ") + (spec.body->reduction ? ir::opName(*spec.body->reduction) : "none") +
          "\n";
  if (!spec.innerStrides.empty()) {
    text += "inner strides";
    for (InnerStride stride : spec.innerStrides)
      text += stride == InnerStride::Unit ? " unit" : stride == InnerStride::Zero ? " zero" : " any";
    text += "\n";
  }
  if (spec.blockedOutputs) text += "blocked outputs\n";
  if (!spec.body->extraOutputs.empty()) {
    text += "extra outputs";
    for (uint32_t value : spec.body->extraOutputs)
      text += " %" + std::to_string(value);
    text += "\n";
  }
  return KernelCacheKey{llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(text.data()), text.size()))};
}

KernelCacheBypass::KernelCacheBypass(bool active) : active_(active) {
  bypasses += active ? 1 : 0;
}
KernelCacheBypass::~KernelCacheBypass() {
  bypasses -= active_ ? 1 : 0;
}

std::optional<std::string> readKernelCacheEntry(const KernelCacheKey &key) {
  std::optional<std::string> directory = cacheDirectory();
  if (!directory) return std::nullopt;
  std::optional<std::string> entry = readFile(*directory + "/" + key.hex());
  if (!entry) {
    count(&KernelCacheStats::diskMisses);
    return std::nullopt;
  }
  const char *header = entry->data();
  bool valid = entry->size() >= kHeaderSize && std::memcmp(header, kMagic, sizeof kMagic) == 0 &&
               readInteger(header + 8, 4) == kFormatVersion &&
               std::memcmp(header + 12, key.digest.data(), key.digest.size()) == 0 &&
               readInteger(header + 44, 8) == entry->size() - kHeaderSize &&
               readInteger(header + 52, 8) == llvm::xxh3_64bits(llvm::StringRef(*entry).substr(kHeaderSize));
  if (!valid) {
    std::lock_guard<std::mutex> lock(state().mutex);
    ++state().stats.diskMisses;
    ++state().stats.corruptEntries;
    return std::nullopt;
  }
  count(&KernelCacheStats::diskHits);
  return entry->substr(kHeaderSize);
}

void writeKernelCacheEntry(const KernelCacheKey &key, std::string_view payload) {
  std::optional<std::string> directory = cacheDirectory();
  if (!directory) return;
  std::string entry(kMagic, sizeof kMagic);
  appendInteger(entry, kFormatVersion, 4);
  entry.append(reinterpret_cast<const char *>(key.digest.data()), key.digest.size());
  appendInteger(entry, payload.size(), 8);
  appendInteger(entry, llvm::xxh3_64bits(llvm::StringRef(payload.data(), payload.size())), 8);
  entry.append(payload);

  std::string path = *directory + "/" + key.hex();
  // Unique among processes (mkstemp), and in the same directory so that the rename is atomic. mkstemp makes
  // it readable by the user only, which suits a per-user cache.
  std::string temporary = path + ".tmp.XXXXXX";
  int file = mkstemp(temporary.data());
  if (file < 0) return;
  size_t written = 0;
  while (written < entry.size()) {
    ssize_t put = write(file, entry.data() + written, entry.size() - written);
    if (put <= 0) break;
    written += static_cast<size_t>(put);
  }
  bool complete = close(file) == 0 && written == entry.size();
  if (!complete || std::rename(temporary.c_str(), path.c_str()) != 0) {
    unlink(temporary.c_str());
    return;
  }
  count(&KernelCacheStats::diskWrites);
}

std::optional<std::string> defaultKernelCacheDirectory() {
  // The XDG base directory specification says to ignore a relative path.
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/tgc";
  const char *home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/tgc";
  return std::nullopt;
}

void setKernelCacheDirectory(std::optional<std::string> directory) {
  std::lock_guard<std::mutex> lock(state().mutex);
  CacheState &cache = state();
  cache.chosen = true;
  cache.prepared = false;
  cache.directory = std::move(directory);
  cache.offReason = cache.directory ? "" : "turned off";
}

KernelCacheStats kernelCacheStats() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().stats;
}

std::string describeKernelCache() {
  std::lock_guard<std::mutex> lock(state().mutex);
  std::optional<std::string> directory = activeDirectory(state());
  return directory ? "in " + *directory : "off (" + state().offReason + ")";
}

} // namespace tg::codegen
