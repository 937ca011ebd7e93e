// The disk cache of compiled kernels (codegen/KernelCache.h): entries round trip, a damaged or mismatching
// entry is rejected, counted and rewritten, host kernels and PTX come back from the disk. Each test uses a
// directory of its own; every other test in this binary runs with the disk cache off, so that cold compiles
// stay cold and nothing is written to the user's cache.
#include "codegen/KernelCache.h"

#include "codegen/Kernel.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using tg::codegen::CachedCode;
using tg::codegen::KernelCacheKey;
using tg::codegen::KernelCacheStats;
using tg::codegen::Layout;
using tg::ir::DType;
using tg::ir::OpKind;
using tg::ir::ScalarGraph;

class DiskCacheOff : public ::testing::Environment {
public:
  void SetUp() override { tg::codegen::setKernelCacheDirectory(std::nullopt); }
};
const ::testing::Environment *const kDiskCacheOff = ::testing::AddGlobalTestEnvironment(new DiskCacheOff);

/// a * b + immediate over f32: each test picks an immediate no other test compiles.
ScalarGraph multiplyAdd(double immediate) {
  ScalarGraph graph;
  graph.inputDtypes = {DType::F32, DType::F32};
  graph.body.push_back({OpKind::Mul, DType::F32, {0, 1}});
  graph.body.push_back({OpKind::Full, DType::F32, {}, immediate});
  graph.body.push_back({OpKind::Add, DType::F32, {2, 3}});
  return graph;
}

std::string readFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeFile(const std::filesystem::path &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// Runs `body` in a child process (fork), which has the parent's memory but not its later compiles: what the
/// child compiles, the parent must take from the disk. Returns the child's exit code.
template <typename F>
int inChildProcess(F body) {
  pid_t child = fork();
  if (child == 0) _exit(body());
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Checks that `kernel` computes a * b + immediate.
void expectMultiplyAdd(tg::codegen::HostKernel kernel, float immediate) {
  ASSERT_NE(kernel, nullptr);
  float a[5] = {1, 2, 3, -4, 0.5f}, b[5] = {2, 2, -1, 8, 4}, out[5] = {};
  const void *inputs[2] = {a, b};
  int64_t shape[1] = {5};
  tg::codegen::KernelArgs args{1, shape, inputs, nullptr, out};
  ASSERT_EQ(kernel(&args, 0, 5), tg::codegen::kKernelOk);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(out[i], a[i] * b[i] + immediate) << "element " << i;
}

class KernelCache : public ::testing::Test {
protected:
  void SetUp() override {
    directory = std::filesystem::temp_directory_path() /
                ("tgc_kernel_cache_test_" + std::to_string(static_cast<long>(getpid())));
    std::filesystem::remove_all(directory);
    tg::codegen::setKernelCacheDirectory(directory.string());
    before = tg::codegen::kernelCacheStats();
  }
  void TearDown() override {
    tg::codegen::setKernelCacheDirectory(std::nullopt);
    std::filesystem::remove_all(directory);
  }
  /// The counters since SetUp.
  KernelCacheStats counted() const {
    KernelCacheStats now = tg::codegen::kernelCacheStats();
    return {now.diskHits - before.diskHits, now.diskMisses - before.diskMisses,
            now.diskWrites - before.diskWrites, now.corruptEntries - before.corruptEntries};
  }
  std::filesystem::path entryPath(const KernelCacheKey &key) const { return directory / key.hex(); }

  std::filesystem::path directory;
  KernelCacheStats before;
};

TEST_F(KernelCache, EntryRoundTrip) {
  ScalarGraph graph = multiplyAdd(1.5);
  KernelCacheKey key =
      tg::codegen::kernelCacheKey({&graph, Layout::Contiguous}, CachedCode::HostObject, "cpu");
  EXPECT_EQ(tg::codegen::readKernelCacheEntry(key), std::nullopt);
  std::string payload("object\0code\xff", 12);
  tg::codegen::writeKernelCacheEntry(key, payload);
  EXPECT_TRUE(std::filesystem::exists(entryPath(key))) << "the directory is created on first use";
  EXPECT_EQ(tg::codegen::readKernelCacheEntry(key), payload);
  KernelCacheStats stats = counted();
  EXPECT_EQ(stats.diskMisses, 1u);
  EXPECT_EQ(stats.diskWrites, 1u);
  EXPECT_EQ(stats.diskHits, 1u);
  EXPECT_EQ(stats.corruptEntries, 0u);
  std::vector<std::string> files;
  for (const auto &file : std::filesystem::directory_iterator(directory))
    files.push_back(file.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{key.hex()}) << "no temporary file is left behind";
  EXPECT_EQ(key.hex().size(), 64u);
}

TEST_F(KernelCache, KeysSeparateWhatTheCodeDependsOn) {
  ScalarGraph graph = multiplyAdd(0.0), negativeZero = multiplyAdd(-0.0), wider = multiplyAdd(0.0);
  wider.body[2].dtype = DType::F64;
  auto key = [](const ScalarGraph &body, Layout layout, CachedCode code, const std::string &target) {
    return tg::codegen::kernelCacheKey({&body, layout}, code, target).hex();
  };
  std::string base = key(graph, Layout::Contiguous, CachedCode::HostObject, "cpu");
  ScalarGraph copy = graph;
  EXPECT_EQ(key(copy, Layout::Contiguous, CachedCode::HostObject, "cpu"), base);
  EXPECT_NE(key(negativeZero, Layout::Contiguous, CachedCode::HostObject, "cpu"), base);
  EXPECT_NE(key(wider, Layout::Contiguous, CachedCode::HostObject, "cpu"), base);
  EXPECT_NE(key(graph, Layout::Strided, CachedCode::HostObject, "cpu"), base);
  EXPECT_NE(key(graph, Layout::Contiguous, CachedCode::SimDeviceObject, "cpu"), base);
  EXPECT_NE(key(graph, Layout::Contiguous, CachedCode::HostObject, "another cpu"), base);
}

TEST_F(KernelCache, DamagedAndMismatchingEntriesAreRejected) {
  ScalarGraph graph = multiplyAdd(2.5);
  KernelCacheKey key = tg::codegen::kernelCacheKey({&graph, Layout::Contiguous}, CachedCode::Ptx, "sm_90");
  KernelCacheKey other = tg::codegen::kernelCacheKey({&graph, Layout::Strided}, CachedCode::Ptx, "sm_90");
  std::string payload(1000, 'p');
  tg::codegen::writeKernelCacheEntry(key, payload);
  std::string entry = readFile(entryPath(key));
  ASSERT_EQ(entry.size(), 60 + payload.size()) << "a 60-byte header, then the payload";

  // Another key's entry under this key's name (a file copied or renamed by hand).
  writeFile(entryPath(other), entry);
  EXPECT_EQ(tg::codegen::readKernelCacheEntry(other), std::nullopt);
  // Truncated in the payload, and in the header.
  writeFile(entryPath(key), entry.substr(0, entry.size() - 1));
  EXPECT_EQ(tg::codegen::readKernelCacheEntry(key), std::nullopt);
  writeFile(entryPath(key), entry.substr(0, 20));
  EXPECT_EQ(tg::codegen::readKernelCacheEntry(key), std::nullopt);
  // One payload byte changed (the checksum), and an empty file.
  std::string flipped = entry;
  flipped[100] ^= 1;
  writeFile(entryPath(key), flipped);
  EXPECT_EQ(tg::codegen::readKernelCacheEntry(key), std::nullopt);
  writeFile(entryPath(key), "");
  EXPECT_EQ(tg::codegen::readKernelCacheEntry(key), std::nullopt);
  KernelCacheStats stats = counted();
  EXPECT_EQ(stats.corruptEntries, 5u);
  EXPECT_EQ(stats.diskMisses, 5u);
  EXPECT_EQ(stats.diskHits, 0u);

  tg::codegen::writeKernelCacheEntry(key, payload);
  EXPECT_EQ(tg::codegen::readKernelCacheEntry(key), payload) << "a rewritten entry is used again";
}

TEST_F(KernelCache, HostKernelComesFromTheDisk) {
  ScalarGraph graph = multiplyAdd(3.75);
  tg::codegen::KernelSpec spec{&graph, Layout::Contiguous};
  // The child compiles and writes the entry; this process has never compiled the body.
  ASSERT_EQ(inChildProcess([&] {
              tg::codegen::compileHostKernel(spec);
              return tg::codegen::kernelCacheStats().diskWrites == before.diskWrites + 1 ? 0 : 1;
            }),
            0);
  expectMultiplyAdd(tg::codegen::compileHostKernel(spec), 3.75f);
  KernelCacheStats stats = counted();
  EXPECT_EQ(stats.diskHits, 1u);
  EXPECT_EQ(stats.diskWrites, 0u);
  EXPECT_EQ(stats.diskMisses, 0u);
}

TEST_F(KernelCache, DamagedObjectIsRecompiledAndRewritten) {
  ScalarGraph graph = multiplyAdd(4.75);
  tg::codegen::KernelSpec spec{&graph, Layout::Contiguous};
  ASSERT_EQ(inChildProcess([&] {
              tg::codegen::compileSimDeviceKernel(spec);
              return tg::codegen::compileHostKernel(spec) ? 0 : 1;
            }),
            0);
  size_t entries = 0;
  for (const auto &file : std::filesystem::directory_iterator(directory)) {
    std::string bytes = readFile(file.path());
    bytes.resize(bytes.size() / 2);
    writeFile(file.path(), bytes);
    ++entries;
  }
  ASSERT_EQ(entries, 2u) << "one host and one simulated-device object";
  expectMultiplyAdd(tg::codegen::compileHostKernel(spec), 4.75f);
  EXPECT_NE(tg::codegen::compileSimDeviceKernel(spec), nullptr);
  KernelCacheStats stats = counted();
  EXPECT_EQ(stats.corruptEntries, 2u);
  EXPECT_EQ(stats.diskWrites, 2u) << "both entries are rewritten";
  EXPECT_EQ(stats.diskHits, 0u);
}

TEST_F(KernelCache, PtxIsCachedAndReused) {
  // No math function: the PTX needs no libdevice, so the test runs wherever LLVM has NVPTX.
  ScalarGraph graph = multiplyAdd(5.75);
  tg::codegen::KernelSpec spec{&graph, Layout::Strided};
  std::string ptx = tg::codegen::emitPtx(spec, "sm_90");
  EXPECT_EQ(counted().diskWrites, 1u);
  EXPECT_EQ(tg::codegen::emitPtx(spec, "sm_90"), ptx);
  EXPECT_EQ(counted().diskHits, 1u);
  EXPECT_NE(tg::codegen::emitPtx(spec, "sm_80"), ptx) << "another architecture is another entry";
  EXPECT_EQ(counted().diskWrites, 2u);

  for (const auto &file : std::filesystem::directory_iterator(directory))
    writeFile(file.path(), readFile(file.path()).substr(0, 70));
  EXPECT_EQ(tg::codegen::emitPtx(spec, "sm_90"), ptx);
  KernelCacheStats stats = counted();
  EXPECT_EQ(stats.corruptEntries, 1u);
  EXPECT_EQ(stats.diskWrites, 3u);
}

TEST_F(KernelCache, OffWhereTheDirectoryCannotBeMade) {
  writeFile(directory, "a file where the directory should be"); // removed by TearDown
  tg::codegen::setKernelCacheDirectory((directory / "tgc").string());
  EXPECT_EQ(tg::codegen::describeKernelCache().rfind("off (cannot use ", 0), 0u)
      << tg::codegen::describeKernelCache();
  ScalarGraph graph = multiplyAdd(6.75);
  expectMultiplyAdd(tg::codegen::compileHostKernel({&graph, Layout::Contiguous}), 6.75f);
  KernelCacheStats stats = counted();
  EXPECT_EQ(stats.diskMisses + stats.diskWrites + stats.diskHits, 0u);
  tg::codegen::setKernelCacheDirectory(std::nullopt);
  EXPECT_EQ(tg::codegen::describeKernelCache(), "off (turned off)");
}

TEST(KernelCacheDirectory, FollowsXdgThenHome) {
  auto restore = [](const char *name, const char *value) {
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  };
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  const char *home = std::getenv("HOME");
  std::string savedXdg = xdg ? xdg : "", savedHome = home ? home : "";
  setenv("XDG_CACHE_HOME", "/somewhere/cache", 1);
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(tg::codegen::defaultKernelCacheDirectory(), "/somewhere/cache/tgc");
  setenv("XDG_CACHE_HOME", "relative/cache", 1); // the XDG specification says to ignore it
  EXPECT_EQ(tg::codegen::defaultKernelCacheDirectory(), "/home/someone/.cache/tgc");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  EXPECT_EQ(tg::codegen::defaultKernelCacheDirectory(), std::nullopt);
  restore("XDG_CACHE_HOME", xdg ? savedXdg.c_str() : nullptr);
  restore("HOME", home ? savedHome.c_str() : nullptr);
}

} // namespace
