// .npy reading and writing. The format (numpy/lib/format.py): the magic "\x93NUMPY", a major and a minor
// version byte, the header length (2 bytes in 1.0, 4 in 2.0 and 3.0, little-endian), the header (a Python
// dict literal padded with spaces and a newline), then the raw data.
#include "io/Npy.h"

#include "ir/Assert.h"
#include "ir/SourceLoc.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <sys/stat.h>

namespace tg::io {

using namespace ir;
namespace {

static_assert(std::endian::native == std::endian::little, "TensorData bytes are assumed little-endian");

constexpr std::string_view kMagic = "\x93NUMPY";
// Longer headers are refused before they are read. NumPy's own default limit is 10,000 bytes; tgc accepts
// more so that the version 2.0 files it writes for very high ranks read back.
constexpr size_t kMaxHeaderBytes = size_t(1) << 20;
constexpr size_t kAlign = 64;
// np.save leaves room for the first dimension to grow to this many digits when the header is rewritten in
// place.
constexpr size_t kGrowthAxisMaxDigits = 21;

struct Header {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// Reads the header's Python literal: a dict with the keys 'descr' (a string), 'fortran_order' (True or
/// False) and 'shape' (a tuple of non-negative integers).
class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string &name) : text_(text), name_(name) {}

  Header parse() {
    Header header;
    bool seenDescr = false, seenOrder = false, seenShape = false;
    skipSpace();
    if (!accept('{')) fail("header is not a dict");
    for (;;) {
      skipSpace();
      if (accept('}')) break;
      std::string key = parseString();
      skipSpace();
      expect(':');
      skipSpace();
      if (key == "descr") {
        if (peek() == '[') fail("unsupported dtype: structured arrays are not supported");
        header.descr = parseString();
        seenDescr = true;
      } else if (key == "fortran_order") {
        header.fortranOrder = parseBool();
        seenOrder = true;
      } else if (key == "shape") {
        header.shape = parseShape();
        seenShape = true;
      } else {
        fail("header has an unexpected key '" + key + "'");
      }
      skipSpace();
      if (accept(',')) continue;
      expect('}');
      break;
    }
    skipSpace();
    if (pos_ != text_.size()) fail("malformed header: unexpected text after the dict");
    if (!seenDescr) fail("header has no 'descr' key");
    if (!seenOrder) fail("header has no 'fortran_order' key");
    if (!seenShape) fail("header has no 'shape' key");
    return header;
  }

private:
  [[noreturn]] void fail(const std::string &problem) const { throw UserError(name_ + ": " + problem); }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t'))
      ++pos_;
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c))
      fail("malformed header: expected '" + std::string(1, c) + "' at offset " + std::to_string(pos_));
  }

  std::string parseString() {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      fail("malformed header: expected a string at offset " + std::to_string(pos_));
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("malformed header: unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }

  bool parseBool() {
    for (bool value : {true, false}) {
      std::string_view word = value ? "True" : "False";
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail("malformed header: 'fortran_order' must be True or False");
  }

  /// A Python tuple of non-negative integers: `()`, `(3,)`, `(2, 3)`, `(2, 3,)`; `(3)` is an integer.
  std::vector<int64_t> parseShape() {
    if (!accept('(')) fail("malformed header: 'shape' must be a tuple");
    std::vector<int64_t> shape;
    skipSpace();
    if (accept(')')) return shape;
    for (;;) {
      shape.push_back(parseDimension());
      skipSpace();
      if (accept(',')) {
        skipSpace();
        if (accept(')')) return shape;
        continue;
      }
      if (shape.size() == 1 && peek() == ')')
        fail("malformed header: 'shape' must be a tuple; a one-element tuple is written (" +
             std::to_string(shape[0]) + ",)");
      expect(')');
      return shape;
    }
  }

  int64_t parseDimension() {
    if (peek() == '-') fail("shape has a negative dimension");
    if (peek() < '0' || peek() > '9')
      fail("malformed header: expected a dimension at offset " + std::to_string(pos_));
    int64_t dim = 0;
    while (peek() >= '0' && peek() <= '9') {
      if (__builtin_mul_overflow(dim, 10, &dim) || __builtin_add_overflow(dim, peek() - '0', &dim))
        fail("shape has a dimension too large");
      ++pos_;
    }
    return dim;
  }

  std::string_view text_;
  size_t pos_ = 0;
  const std::string &name_;
};

struct StoredType {
  DType dtype;
  bool byteSwapped;
};

StoredType parseDescr(const std::string &descr, const std::string &name) {
  if (descr.size() == 3 && std::strchr("<>=|", descr[0]))
    for (DType dtype : kAllDTypes)
      if (descr.compare(1, 2, dtypeInfo(dtype).npy + 1) == 0)
        return {dtype, descr[0] == '>' && dtypeSize(dtype) > 1};
  std::string supported;
  for (DType dtype : kAllDTypes)
    supported += std::string(supported.empty() ? "'" : ", '") + dtypeInfo(dtype).npy + "'";
  throw UserError(name + ": unsupported dtype '" + descr + "' (supported: " + supported +
                  ", and their big-endian forms)");
}

const char *descrOf(DType dtype) {
  return dtypeInfo(dtype).npy;
}

/// Copies Fortran-ordered elements into C order: element (i0, ..., ik) sits at sum(i_j * prod(shape[:j])) in
/// `in`.
void fortranToC(const uint8_t *in, uint8_t *out, const std::vector<int64_t> &shape, size_t elementSize,
                int64_t count) {
  size_t rank = shape.size();
  std::vector<int64_t> fortranStride(rank, 1), index(rank, 0);
  for (size_t k = 1; k < rank; ++k)
    fortranStride[k] = fortranStride[k - 1] * shape[k - 1];
  int64_t source = 0;
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(out + i * elementSize, in + source * elementSize, elementSize);
    for (size_t k = rank; k-- > 0;) {
      source += fortranStride[k];
      if (++index[k] < shape[k]) break;
      source -= fortranStride[k] * shape[k];
      index[k] = 0;
    }
  }
}

} // namespace

namespace {

/// Where an .npy file's bytes come from: memory, or a file read only as far as its header says.
class ByteSource {
public:
  virtual ~ByteSource() = default;
  /// Reads up to `size` bytes to `into`; fewer only at the end of the bytes.
  virtual size_t read(uint8_t *into, size_t size) = 0;
  /// How many bytes are left, when that is known without reading them (memory, a regular file).
  virtual std::optional<uint64_t> remaining() const = 0;
  /// Passes over `size` bytes (fewer only at the end).
  virtual void skip(uint64_t size) {
    uint8_t scratch[4096];
    while (size > 0) {
      size_t got = read(scratch, static_cast<size_t>(std::min<uint64_t>(size, sizeof scratch)));
      if (got == 0) return;
      size -= got;
    }
  }
};

class MemorySource : public ByteSource {
public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  size_t read(uint8_t *into, size_t size) override {
    size = std::min(size, bytes_.size());
    std::memcpy(into, bytes_.data(), size);
    bytes_.remove_prefix(size);
    return size;
  }
  std::optional<uint64_t> remaining() const override { return bytes_.size(); }
  void skip(uint64_t size) override {
    bytes_.remove_prefix(static_cast<size_t>(std::min<uint64_t>(size, bytes_.size())));
  }

private:
  std::string_view bytes_;
};

class FileSource : public ByteSource {
public:
  FileSource(std::FILE *file, const std::string &path) : file_(file), path_(path) {
    struct stat status;
    if (fstat(fileno(file), &status) == 0 && S_ISREG(status.st_mode))
      size_ = static_cast<uint64_t>(status.st_size);
  }
  size_t read(uint8_t *into, size_t size) override {
    size_t got = std::fread(into, 1, size, file_);
    if (got < size && std::ferror(file_))
      throw UserError("cannot read '" + path_ + "': " + std::strerror(errno));
    offset_ += got;
    return got;
  }
  std::optional<uint64_t> remaining() const override {
    if (!size_) return std::nullopt;
    return *size_ > offset_ ? *size_ - offset_ : 0;
  }
  void skip(uint64_t size) override {
    if (size_ && fseeko(file_, static_cast<off_t>(size), SEEK_CUR) == 0) {
      offset_ += size;
      return;
    }
    ByteSource::skip(size);
  }

private:
  std::FILE *file_;
  const std::string &path_;
  std::optional<uint64_t> size_;
  uint64_t offset_ = 0;
};

using RowRange = std::function<std::pair<int64_t, int64_t>(int64_t)>;

/// Reads an .npy file from `source`: the fixed part first, then the header it announces, then exactly the
/// data the header declares (bytes after it are not read, as NumPy ignores them), or the rows `rows` picks
/// of it. Data of unknown length (a pipe) is read in chunks, so memory grows only as it arrives.
TensorData readNpy(ByteSource &source, const std::string &name, const RowRange &rows = nullptr) {
  auto fail = [&](const std::string &problem) -> UserError { return UserError(name + ": " + problem); };
  uint8_t fixed[12];
  size_t got = source.read(fixed, kMagic.size());
  if (got < kMagic.size() || std::memcmp(fixed, kMagic.data(), kMagic.size()) != 0)
    throw fail("not a .npy file (bad magic string)");
  if (source.read(fixed + 6, 2) < 2) throw fail("file is truncated: no format version");
  int major = fixed[6], minor = fixed[7];
  if (major < 1 || major > 3 || minor != 0)
    throw fail("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  size_t lengthWidth = major == 1 ? 2 : 4;
  if (source.read(fixed + 8, lengthWidth) < lengthWidth) throw fail("file is truncated: no header length");
  size_t headerLength = 0;
  for (size_t i = 0; i < lengthWidth; ++i)
    headerLength |= size_t(fixed[8 + i]) << (8 * i);
  if (headerLength > kMaxHeaderBytes)
    throw fail("header of " + std::to_string(headerLength) + " bytes is longer than the limit of " +
               std::to_string(kMaxHeaderBytes));
  std::string headerText(headerLength, '\0');
  got = source.read(reinterpret_cast<uint8_t *>(headerText.data()), headerLength);
  if (got < headerLength)
    throw fail("file is truncated: expected a header of " + std::to_string(headerLength) + " bytes, found " +
               std::to_string(got));
  Header header = HeaderParser(headerText, name).parse();
  StoredType stored = parseDescr(header.descr, name);

  // As NumPy: the element size times the product of the non-zero dimensions must fit in 63 bits, even when
  // some dimension is zero.
  size_t elementSize = dtypeSize(stored.dtype);
  int64_t count = 1, nonZero = static_cast<int64_t>(elementSize);
  for (int64_t dim : header.shape) {
    if (dim != 0 && __builtin_mul_overflow(nonZero, dim, &nonZero)) throw fail("shape is too large");
    count *= dim; // at most nonZero: no overflow
  }
  uint64_t dataSize = static_cast<uint64_t>(count) * elementSize;
  if (std::optional<uint64_t> left = source.remaining(); left && *left < dataSize)
    throw fail("file is truncated: expected " + std::to_string(dataSize) + " bytes of data, found " +
               std::to_string(*left));
  std::pair<int64_t, int64_t> picked;
  if (rows) {
    if (header.shape.empty()) throw fail("a 0-d array has no rows to split");
    picked = rows(header.shape[0]);
    TG_ASSERT(0 <= picked.first && picked.first <= picked.second && picked.second <= header.shape[0])
        << "rows [" << picked.first << ", " << picked.second << ") of " << header.shape[0];
    if (!header.fortranOrder) { // rows lie one after the other: skip to ours, read only them
      uint64_t rowBytes = header.shape[0] == 0 ? 0 : dataSize / static_cast<uint64_t>(header.shape[0]);
      source.skip(rowBytes * static_cast<uint64_t>(picked.first));
      dataSize = rowBytes * static_cast<uint64_t>(picked.second - picked.first);
      count = static_cast<int64_t>(dataSize / elementSize);
      header.shape[0] = picked.second - picked.first;
    }
  }

  std::vector<uint8_t> data;
  try {
    constexpr size_t kChunk = size_t(1) << 24;
    data.reserve(source.remaining() ? dataSize : std::min<uint64_t>(dataSize, kChunk));
    while (data.size() < dataSize) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(dataSize - data.size(), kChunk));
      size_t before = data.size();
      data.resize(before + want);
      got = source.read(data.data() + before, want);
      if (got < want)
        throw fail("file is truncated: expected " + std::to_string(dataSize) + " bytes of data, found " +
                   std::to_string(before + got));
    }
  } catch (const std::bad_alloc &) {
    throw fail("the array's " + std::to_string(dataSize) + " bytes do not fit in memory");
  }

  TensorData result;
  result.dtype = stored.dtype;
  result.shape = header.shape;
  if (header.fortranOrder) {
    result.bytes.resize(data.size());
    fortranToC(data.data(), result.bytes.data(), header.shape, elementSize, count);
  } else {
    result.bytes = std::move(data);
  }
  if (stored.byteSwapped)
    for (size_t i = 0; i < result.bytes.size(); i += elementSize)
      std::reverse(result.bytes.begin() + i, result.bytes.begin() + i + elementSize);
  if (stored.dtype == DType::Bool)
    for (uint8_t &b : result.bytes)
      b = b != 0;
  if (rows && header.fortranOrder) { // read whole: keep the rows picked
    size_t rowBytes = header.shape[0] == 0 ? 0 : result.bytes.size() / static_cast<size_t>(header.shape[0]);
    result.bytes =
        std::vector<uint8_t>(result.bytes.begin() + static_cast<ptrdiff_t>(rowBytes * picked.first),
                             result.bytes.begin() + static_cast<ptrdiff_t>(rowBytes * picked.second));
    result.shape[0] = picked.second - picked.first;
  }
  return result;
}

} // namespace

TensorData parseNpy(std::string_view bytes, const std::string &nameForErrors) {
  MemorySource source(bytes);
  return readNpy(source, nameForErrors);
}

TensorData loadNpy(const std::string &path) {
  return loadNpyRows(path, nullptr); // every row
}

TensorData loadNpyRows(const std::string &path, const RowRange &rows) {
  std::error_code code;
  if (std::filesystem::is_directory(path, code))
    throw UserError("cannot read '" + path + "': it is a directory");
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw UserError("cannot open '" + path + "': " + std::strerror(errno));
  FileSource source(file.get(), path);
  return readNpy(source, path, rows);
}

std::string formatNpy(const TensorData &data) {
  std::string shape = "(";
  for (size_t i = 0; i < data.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(data.shape[i]);
  shape += data.shape.size() == 1 ? ",)" : ")";
  std::string dict = std::string("{'descr': '") + descrOf(data.dtype) +
                     "', 'fortran_order': False, 'shape': " + shape + ", }";
  if (!data.shape.empty()) dict.append(kGrowthAxisMaxDigits - std::to_string(data.shape[0]).size(), ' ');

  // Pad with spaces and end with a newline so that the data starts at a multiple of kAlign (a whole kAlign of
  // padding when it already would, as NumPy does).
  size_t lengthWidth = 2;
  size_t padding = kAlign - (kMagic.size() + 2 + lengthWidth + dict.size() + 1) % kAlign;
  if (dict.size() + padding + 1 > 0xffff) {
    lengthWidth = 4;
    padding = kAlign - (kMagic.size() + 2 + lengthWidth + dict.size() + 1) % kAlign;
  }
  size_t headerLength = dict.size() + padding + 1;
  std::string bytes(kMagic);
  bytes += static_cast<char>(lengthWidth == 2 ? 1 : 2);
  bytes += '\0';
  for (size_t i = 0; i < lengthWidth; ++i)
    bytes += static_cast<char>((headerLength >> (8 * i)) & 0xff);
  bytes += dict;
  bytes.append(padding, ' ');
  bytes += '\n';
  bytes.append(reinterpret_cast<const char *>(data.bytes.data()), data.bytes.size());
  return bytes;
}

void saveNpy(const std::string &path, const TensorData &data) {
  std::string bytes = formatNpy(data);
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file || std::fwrite(bytes.data(), 1, bytes.size(), file.get()) != bytes.size() ||
      std::fflush(file.get()) != 0)
    throw UserError("cannot write '" + path + "': " + std::strerror(errno));
}

} // namespace tg::io
