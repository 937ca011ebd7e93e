// .npy reading and writing: files written by NumPy 1.24 (tests/data/npy, made with np.save and
// numpy.lib.format.write_array), round trips, every error, and a fuzz test that mutates valid files.
#include "io/Npy.h"

#include "ir/SourceLoc.h"

#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <sstream>

namespace {

using tg::ir::DType;
using tg::ir::TensorData;
using tg::ir::UserError;

const std::string kDataDir = TGC_SOURCE_DIR "/tests/data/npy/";

std::string readBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

std::vector<double> values(const TensorData &data) {
  std::vector<double> result;
  for (int64_t i = 0; i < data.numElements(); ++i)
    result.push_back(data.get(i));
  return result;
}

/// A .npy file with a hand-written header (no padding) and data.
std::string npyFile(const std::string &header, const std::string &data = "", int major = 1) {
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  size_t width = major == 1 ? 2 : 4;
  for (size_t i = 0; i < width; ++i)
    bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + data;
}

/// The message of the UserError that parsing `bytes` throws.
std::string parseError(const std::string &bytes) {
  try {
    tg::io::parseNpy(bytes, "x.npy");
  } catch (const UserError &error) {
    return error.message;
  }
  return "(no error)";
}

TEST(NpyTest, LoadsFilesWrittenByNumpy) {
  TensorData f32 = tg::io::loadNpy(kDataDir + "f32_2x3.npy");
  EXPECT_EQ(f32.dtype, DType::F32);
  EXPECT_EQ(f32.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(f32), (std::vector<double>{-1, -0.5, 0, 0.5, 1, 1.5}));

  TensorData fortran = tg::io::loadNpy(kDataDir + "f64_fortran_3x2.npy");
  EXPECT_EQ(fortran.dtype, DType::F64);
  EXPECT_EQ(fortran.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(fortran), (std::vector<double>{1.5, -2, 3.25, 4, -5.5, 1e300}));

  TensorData bigEndian = tg::io::loadNpy(kDataDir + "i32_big_endian.npy");
  EXPECT_EQ(bigEndian.dtype, DType::I32);
  EXPECT_EQ(values(bigEndian), (std::vector<double>{1, -2, 300000, 2147483647}));

  TensorData scalar = tg::io::loadNpy(kDataDir + "f32_scalar.npy");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(values(scalar), std::vector<double>{2.5});

  TensorData empty = tg::io::loadNpy(kDataDir + "f64_empty_0x3.npy");
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(empty.bytes.empty());

  TensorData version2 = tg::io::loadNpy(kDataDir + "i64_v2_2x2x2.npy");
  EXPECT_EQ(version2.dtype, DType::I64);
  EXPECT_EQ(version2.shape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(values(version2), (std::vector<double>{0, -3, -6, -9, -12, -15, -18, -21}));

  TensorData version3 = tg::io::loadNpy(kDataDir + "bool_v3_fortran_2x3.npy");
  EXPECT_EQ(version3.dtype, DType::Bool);
  EXPECT_EQ(version3.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(version3), (std::vector<double>{1, 0, 1, 0, 0, 1}));
}

TEST(NpyTest, WritesWhatNumpyWrites) {
  for (const char *name : {"f32_2x3.npy", "f32_scalar.npy", "f64_empty_0x3.npy"}) {
    std::string bytes = readBytes(kDataDir + name);
    EXPECT_EQ(tg::io::formatNpy(tg::io::parseNpy(bytes, name)), bytes) << name;
  }
}

TEST(NpyTest, RoundTripsEveryDtypeAndShape) {
  std::string path = testing::TempDir() + "tgc_npy_round_trip.npy";
  for (DType dtype : {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64})
    for (const std::vector<int64_t> &shape :
         std::vector<std::vector<int64_t>>{{}, {3}, {2, 3}, {0, 3}, {2, 1, 2}}) {
      TensorData data(dtype, shape);
      for (int64_t i = 0; i < data.numElements(); ++i)
        data.set(i, static_cast<double>(i % 3) - 0.5 * static_cast<double>(i));
      tg::io::saveNpy(path, data);
      std::string bytes = readBytes(path);
      size_t dataStart = bytes.size() - data.bytes.size();
      EXPECT_EQ(dataStart % 64, 0u);
      EXPECT_EQ(bytes[dataStart - 1], '\n');
      EXPECT_EQ(tg::io::loadNpy(path), data) << tg::ir::dtypeName(dtype) << " of rank " << shape.size();
    }
  std::remove(path.c_str());
}

// A distributed run's rank reads its rows: those before skipped, those after never read; a Fortran-order file
// gives the same rows.
TEST(NpyTest, ReadsOnlyTheRowsAsked) {
  std::string path = testing::TempDir() + "tgc_npy_rows.npy";
  TensorData data(DType::I64, {7, 3});
  for (int64_t i = 0; i < data.numElements(); ++i)
    data.set(i, static_cast<double>(i));
  tg::io::saveNpy(path, data);
  int64_t told = -1;
  TensorData rows = tg::io::loadNpyRows(path, [&](int64_t n) {
    told = n;
    return std::pair<int64_t, int64_t>{2, 5};
  });
  EXPECT_EQ(told, 7);
  EXPECT_EQ(rows.shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(values(rows), (std::vector<double>{6, 7, 8, 9, 10, 11, 12, 13, 14}));
  TensorData none = tg::io::loadNpyRows(path, [](int64_t n) { return std::pair<int64_t, int64_t>{n, n}; });
  EXPECT_EQ(none.shape, (std::vector<int64_t>{0, 3}));
  // The same array in Fortran order (the columns one after the other).
  std::string columns;
  for (int64_t j = 0; j < 3; ++j)
    for (int64_t i = 0; i < 7; ++i) {
      int64_t value = i * 3 + j;
      columns.append(reinterpret_cast<const char *>(&value), sizeof value);
    }
  std::ofstream(path, std::ios::binary)
      << npyFile("{'descr': '<i8', 'fortran_order': True, 'shape': (7, 3), }\n", columns);
  rows = tg::io::loadNpyRows(path, [](int64_t) { return std::pair<int64_t, int64_t>{2, 5}; });
  EXPECT_EQ(values(rows), (std::vector<double>{6, 7, 8, 9, 10, 11, 12, 13, 14}));
  tg::io::saveNpy(path, TensorData::scalar(DType::F32, 1));
  try {
    tg::io::loadNpyRows(path, [](int64_t n) { return std::pair<int64_t, int64_t>{0, n}; });
    ADD_FAILURE() << "a 0-d array has no rows";
  } catch (const UserError &error) {
    EXPECT_NE(error.message.find("a 0-d array has no rows to split"), std::string::npos) << error.message;
  }
  std::remove(path.c_str());
}

TEST(NpyTest, LongHeaderUsesVersion2) {
  TensorData data(DType::F32, std::vector<int64_t>(25000, 1)); // a header of about 75000 characters
  std::string bytes = tg::io::formatNpy(data);
  EXPECT_EQ(bytes[6], 2);
  EXPECT_EQ((bytes.size() - 4) % 64, 0u);
  EXPECT_EQ(tg::io::parseNpy(bytes, "long.npy"), data);
}

TEST(NpyTest, AcceptsHandWrittenHeaders) {
  std::string twoInts("\x01\x00\x00\x00\x02\x00\x00\x00", 8);
  TensorData data = tg::io::parseNpy(
      npyFile("{\"shape\":(2,),\"fortran_order\":False,\"descr\":\"=i4\"}\n", twoInts), "x.npy");
  EXPECT_EQ(values(data), (std::vector<double>{1, 2}));
  // Trailing bytes after the data are ignored, as NumPy does.
  EXPECT_EQ(values(tg::io::parseNpy(
                npyFile("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", twoInts), "x.npy")),
            std::vector<double>{1});
}

TEST(NpyTest, ReportsEveryProblem) {
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(parseError(""), "x.npy: not a .npy file (bad magic string)");
  EXPECT_EQ(parseError("PK\x03\x04 a zip file"), "x.npy: not a .npy file (bad magic string)");
  EXPECT_EQ(parseError(std::string("\x93NUMPY", 6)), "x.npy: file is truncated: no format version");
  EXPECT_EQ(parseError(npyFile(header, "", 4)), "x.npy: unsupported .npy format version 4.0");
  EXPECT_EQ(parseError(npyFile(header).substr(0, 9)), "x.npy: file is truncated: no header length");
  EXPECT_EQ(parseError(npyFile(header).substr(0, 40)),
            "x.npy: file is truncated: expected a header of 59 bytes, found 30");
  EXPECT_EQ(parseError(npyFile(header, std::string(20, '\0'))),
            "x.npy: file is truncated: expected 24 bytes of data, found 20");
  EXPECT_EQ(parseError(
                npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", std::string(20, 'a'))),
            "x.npy: file is truncated: expected 48 bytes of data, found 20");
  EXPECT_EQ(parseError(npyFile("[1, 2]")), "x.npy: header is not a dict");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'shape': ()}")), "x.npy: header has no 'fortran_order' key");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False}")),
            "x.npy: header has no 'shape' key");
  EXPECT_EQ(parseError(npyFile("{'fortran_order': False, 'shape': ()}")), "x.npy: header has no 'descr' key");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}")),
            "x.npy: header has an unexpected key 'x'");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4' 'fortran_order': False}")),
            "x.npy: malformed header: expected '}' at offset 16");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4")), "x.npy: malformed header: unterminated string");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': 0, 'shape': ()}")),
            "x.npy: malformed header: 'fortran_order' must be True or False");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}")),
            "x.npy: malformed header: 'shape' must be a tuple");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}")),
            "x.npy: shape has a negative dimension");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}")),
            "x.npy: shape has a dimension too large");
  EXPECT_EQ(
      parseError(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000, 4000000000)}")),
      "x.npy: shape is too large");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': ()} junk")),
            "x.npy: malformed header: unexpected text after the dict");
  for (const char *descr : {"<c16", "<U3", "|O", "<f2", "|u1", "<i2", "f4"})
    EXPECT_EQ(
        parseError(npyFile(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': ()}")),
        std::string("x.npy: unsupported dtype '") + descr +
            "' (supported: '<f4', '<f8', '<i4', '<i8', '|b1', and their big-endian forms)");
  EXPECT_EQ(parseError(npyFile("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}")),
            "x.npy: unsupported dtype: structured arrays are not supported");
}

TEST(NpyTest, RefusesWhatNumpyRefuses) {
  // "(3)" is Python's integer 3, not a one-element tuple.
  EXPECT_EQ(
      parseError(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", std::string(12, 'a'))),
      "x.npy: malformed header: 'shape' must be a tuple; a one-element tuple is written (3,)");
  EXPECT_EQ(values(tg::io::parseNpy(
                npyFile("{'descr': '<i4', 'fortran_order': False, 'shape': (1 , )}", std::string(4, '\0')),
                "x.npy")),
            std::vector<double>{0});
  // NumPy refuses a shape whose non-zero dimensions overflow, even when another dimension is zero.
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (0, 9223372036854775807, 9223372036854775807)}")),
            "x.npy: shape is too large");
  EXPECT_EQ(
      parseError(npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 2305843009213693952)}")),
      "x.npy: shape is too large");
  TensorData empty = tg::io::parseNpy(
      npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 1152921504606846975)}"), "x.npy");
  EXPECT_EQ(empty.numElements(), 0);
  // A header length beyond the limit is refused before the header is read.
  std::string huge = npyFile("{}", "", 2);
  huge[8] = huge[9] = huge[10] = '\xff';
  EXPECT_EQ(parseError(huge), "x.npy: header of 16777215 bytes is longer than the limit of 1048576");
}

TEST(NpyTest, ReadsOnlyWhatTheHeaderDeclares) {
  // /dev/zero never ends: the magic string is checked before anything else is read.
  EXPECT_THROW(
      {
        try {
          tg::io::loadNpy("/dev/zero");
        } catch (const UserError &error) {
          EXPECT_EQ(error.message, "/dev/zero: not a .npy file (bad magic string)");
          throw;
        }
      },
      UserError);
  // A declared size beyond the file's is reported without allocating it.
  std::string path = ::testing::TempDir() + "npy_declares_too_much.npy";
  {
    std::ofstream file(path, std::ios::binary);
    file << npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,)}", "12345678");
  }
  try {
    tg::io::loadNpy(path);
    ADD_FAILURE() << "no error";
  } catch (const UserError &error) {
    EXPECT_EQ(error.message, path + ": file is truncated: expected 8796093022208 bytes of data, found 8");
  }
  std::remove(path.c_str());
  try {
    tg::io::loadNpy(::testing::TempDir());
    ADD_FAILURE() << "no error";
  } catch (const UserError &error) {
    EXPECT_EQ(error.message, "cannot read '" + ::testing::TempDir() + "': it is a directory");
  }
}

TEST(NpyTest, MissingFile) {
  try {
    tg::io::loadNpy("/nonexistent/x.npy");
    FAIL() << "no error";
  } catch (const UserError &error) {
    EXPECT_EQ(error.message, "cannot open '/nonexistent/x.npy': No such file or directory");
  }
  EXPECT_THROW(tg::io::saveNpy("/nonexistent/x.npy", TensorData(DType::F32, {})), UserError);
}

TEST(NpyTest, TruncatedAndMutatedFilesNeverCrash) {
  std::mt19937 random(1234);
  for (const char *name :
       {"f32_2x3.npy", "f64_fortran_3x2.npy", "i64_v2_2x2x2.npy", "bool_v3_fortran_2x3.npy"}) {
    std::string valid = readBytes(kDataDir + name);
    for (size_t length = 0; length < valid.size(); ++length)
      EXPECT_THROW(tg::io::parseNpy(valid.substr(0, length), name), UserError)
          << name << " cut at " << length;
    for (int trial = 0; trial < 3000; ++trial) {
      std::string mutated = valid;
      for (int edits = 1 + trial % 4; edits > 0; --edits)
        mutated[random() % mutated.size()] = static_cast<char>(random() % 256);
      try {
        TensorData data = tg::io::parseNpy(mutated, name);
        EXPECT_EQ(static_cast<int64_t>(data.bytes.size()),
                  data.numElements() * int64_t(tg::ir::dtypeSize(data.dtype)));
      } catch (const UserError &) {
      }
    }
  }
}

} // namespace
