// SmallVector (inline elements, then the heap) and the one-word Dim that shapes keep inline.
#include "ir/SmallVector.h"

#include "ir/Type.h"

#include <gtest/gtest.h>
#include <utility>
#include <vector>

namespace tg::ir {
namespace {

using Small = SmallVector<int, 2>;

std::vector<int> items(const Small &v) {
  return {v.begin(), v.end()};
}

TEST(SmallVectorTest, GrowsPastItsInlineCapacityKeepingTheElements) {
  Small v;
  EXPECT_TRUE(v.empty());
  for (int i = 0; i < 9; ++i)
    v.push_back(i * i);
  EXPECT_EQ(items(v), (std::vector<int>{0, 1, 4, 9, 16, 25, 36, 49, 64}));
  EXPECT_GE(v.capacity(), 9u);
  v.push_back(v[8]); // an element of the vector itself, while it reallocates or not
  EXPECT_EQ(v.back(), 64);
}

TEST(SmallVectorTest, CopiesAndMovesInlineAndHeapStorage) {
  for (int count : {1, 2, 5}) {
    Small source;
    for (int i = 0; i < count; ++i)
      source.push_back(i + 1);
    Small copy = source;
    EXPECT_EQ(copy, source);
    Small moved = std::move(copy);
    EXPECT_EQ(moved, source);
    EXPECT_TRUE(copy.empty()); // NOLINT(bugprone-use-after-move): moved-from is empty, documented
    Small assigned{7, 8, 9, 10};
    assigned = moved;
    EXPECT_EQ(assigned, source);
    assigned = Small{3};
    EXPECT_EQ(items(assigned), (std::vector<int>{3}));
  }
}

TEST(SmallVectorTest, InsertsErasesAndResizes) {
  Small v{1, 2, 3};
  v.insert(v.begin() + 1, 9);
  EXPECT_EQ(items(v), (std::vector<int>{1, 9, 2, 3}));
  std::vector<int> more{5, 6};
  v.insert(v.begin(), more.begin(), more.end());
  EXPECT_EQ(items(v), (std::vector<int>{5, 6, 1, 9, 2, 3}));
  v.erase(v.begin() + 2, v.begin() + 4);
  EXPECT_EQ(items(v), (std::vector<int>{5, 6, 2, 3}));
  v.erase(v.end() - 1);
  v.resize(5, 0);
  EXPECT_EQ(items(v), (std::vector<int>{5, 6, 2, 0, 0}));
  v.assign(2, 4);
  EXPECT_EQ(items(v), (std::vector<int>{4, 4}));
  EXPECT_NE(v, (Small{4, 4, 4}));
}

TEST(SmallVectorTest, DimIsOneWordAndTellsSizesFromSymbols) {
  static_assert(sizeof(Dim) == 8);
  Dim n = Dim::named("n"), four = Dim::of(4), one = Dim::of(1);
  EXPECT_FALSE(n.isStatic());
  EXPECT_EQ(n.symbol(), "n");
  EXPECT_EQ(n.size(), 0);
  EXPECT_EQ(n, Dim::named("n"));
  EXPECT_NE(n, Dim::named("m"));
  EXPECT_TRUE(four.isStatic());
  EXPECT_EQ(four.size(), 4);
  EXPECT_EQ(four.symbol(), "");
  EXPECT_TRUE(one.isOne());
  EXPECT_FALSE(n.isOne());
  EXPECT_EQ(Dim::of(int64_t(1) << 40).size(), int64_t(1) << 40);
  EXPECT_EQ(Dim::of(-1).size(), -1);  // reshape's "inferred" placeholder survives the encoding
  Shape shape{n, four, one, four, n}; // rank 5: past the inline four
  EXPECT_EQ(shapeString(shape), "[n, 4, 1, 4, n]");
}

} // namespace
} // namespace tg::ir
