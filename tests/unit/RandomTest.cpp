// Philox-4x32-10 against Random123's known-answer vectors (kat_vectors), and the element distributions.
#include "runtime/Random.h"

#include <cmath>
#include <gtest/gtest.h>

namespace {

using tg::runtime::philox4x32_10;
using Block = std::array<uint32_t, 4>;

TEST(RandomTest, PhiloxKnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(RandomTest, ElementsComeFromTheirOwnBlock) {
  // Element i of seed s: counter (lo32(i), hi32(i), 0, 0), key (lo32(s), hi32(s)).
  uint64_t seed = 0x123456789abcdefULL, index = 0x500000007ULL;
  Block x = philox4x32_10({7, 5, 0, 0}, {0x89abcdef, 0x1234567});
  EXPECT_EQ(tg::runtime::uniformF32(seed, index), static_cast<float>(x[0] >> 8) * 0x1p-24f);
  EXPECT_EQ(tg::runtime::uniformF64(seed, index),
            static_cast<double>(((static_cast<uint64_t>(x[0]) << 32) | x[1]) >> 11) * 0x1p-53);
  EXPECT_NE(tg::runtime::uniformF64(seed, 7), tg::runtime::uniformF64(seed, index));
  EXPECT_NE(tg::runtime::uniformF64(seed + 1, index), tg::runtime::uniformF64(seed, index));
}

TEST(RandomTest, Distributions) {
  const int count = 200000;
  double sumUniform = 0, sumNormal = 0, sumSquares = 0;
  int beyondThreeSigma = 0;
  for (int i = 0; i < count; ++i) {
    float u = tg::runtime::uniformF32(7, i);
    ASSERT_TRUE(u >= 0.0f && u < 1.0f);
    double d = tg::runtime::uniformF64(7, i);
    ASSERT_TRUE(d >= 0.0 && d < 1.0);
    float z = tg::runtime::normalF32(7, i);
    ASSERT_TRUE(std::isfinite(z));
    ASSERT_TRUE(std::isfinite(tg::runtime::normalF64(7, i)));
    sumUniform += u;
    sumNormal += z;
    sumSquares += double(z) * z;
    beyondThreeSigma += std::abs(z) > 3;
  }
  EXPECT_NEAR(sumUniform / count, 0.5, 0.005);
  EXPECT_NEAR(sumNormal / count, 0.0, 0.01);
  EXPECT_NEAR(sumSquares / count, 1.0, 0.01);
  EXPECT_NEAR(beyondThreeSigma / double(count), 0.0027, 0.0005);
}

} // namespace
