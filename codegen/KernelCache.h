// KernelCache: the on-disk cache of compiled kernels, so that a new process skips optimization and machine
// code for every kernel an earlier one compiled. One file per kernel in the cache directory (Kernel.h's
// setKernelCacheDirectory; by default $XDG_CACHE_HOME/tgc, else ~/.cache/tgc), named by the hex digits of its
// key, holding host or simulated-device object code or PTX text:
//
//   entry   = header | payload
//   header  = magic "TGCKERN\0" (8 bytes) | format version (u32) | key (32 bytes)
//             | payload length (u64) | payload checksum (u64, xxh3)          integers little-endian, 60 bytes
//
// The key is a SHA-256 over everything the code depends on: the scalar program (op and dtype names, operands,
// immediates by bits), the layout, the kind of code, the target, LLVM's version, tgc's version, this format's
// version and the executable's build ID (so that a rebuilt code generator never runs a stale kernel).
//
// A writer writes a temporary file in the same directory and renames it over the entry, so that readers
// (other tgc processes too) see a whole entry or none. A reader checks every header field and the checksum;
// an entry that fails is counted as corrupt and treated as missing, and the compile that follows overwrites
// it.
//
// Internal to codegen and its tests; LLVM stays in the .cpp.
#pragma once

#include "codegen/Kernel.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tg::codegen {

/// The kinds of code the cache holds (part of the key).
enum class CachedCode : uint8_t { HostObject, SimDeviceObject, Ptx };

struct KernelCacheKey {
  std::array<uint8_t, 32> digest;
  /// 64 hex digits: the entry's file name.
  std::string hex() const;
  bool operator==(const KernelCacheKey &other) const { return digest == other.digest; }
};

/// The key of `spec`'s code of kind `code` for `target`, a description of everything else the code depends
/// on (host: triple, CPU, features, whether libmvec is used; PTX: the GPU architecture and libdevice's file).
KernelCacheKey kernelCacheKey(const KernelSpec &spec, CachedCode code, const std::string &target);

/// The payload stored under `key`; nullopt when the cache is off, has no such entry, or the entry is corrupt.
/// Counted in kernelCacheStats(): a hit, or a miss (and a corrupt entry). Thread-safe.
std::optional<std::string> readKernelCacheEntry(const KernelCacheKey &key);

/// Stores `payload` under `key`, replacing any entry, unless the cache is off. A write that fails (a full
/// disk, a directory gone) leaves the cache as it was and is not reported: the kernel is compiled anyway.
/// Counted in kernelCacheStats() when it succeeds. Thread-safe.
void writeKernelCacheEntry(const KernelCacheKey &key, std::string_view payload);

} // namespace tg::codegen
