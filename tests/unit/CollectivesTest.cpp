// The ranks' blocks (np.array_split's parts) and the collectives of a single rank, where each is the
// identity; tests/e2e/distributed.py runs them across ranks under mpirun.
#include "runtime/Collectives.h"

#include "ir/TensorData.h"

#include <gtest/gtest.h>

namespace {

using tg::runtime::blockOf;
using tg::runtime::Tensor;

TEST(CollectivesTest, BlocksAreNumpysArraySplit) {
  // np.array_split(range(10), 3): 4, 3, 3 elements; of 2 among 3 ranks, the last holds none.
  EXPECT_EQ(blockOf(10, 0, 3), (std::pair<int64_t, int64_t>{0, 4}));
  EXPECT_EQ(blockOf(10, 1, 3), (std::pair<int64_t, int64_t>{4, 7}));
  EXPECT_EQ(blockOf(10, 2, 3), (std::pair<int64_t, int64_t>{7, 10}));
  EXPECT_EQ(blockOf(2, 2, 3), (std::pair<int64_t, int64_t>{2, 2}));
  for (int64_t n : {0, 1, 5, 64, 1001})
    for (int size : {1, 2, 3, 7}) {
      int64_t end = 0;
      for (int rank = 0; rank < size; ++rank) {
        auto [begin, stop] = blockOf(n, rank, size);
        EXPECT_EQ(begin, end) << n << " among " << size;
        EXPECT_GE(stop - begin, n / size);
        EXPECT_LE(stop - begin, n / size + 1);
        end = stop;
      }
      EXPECT_EQ(end, n);
    }
}

TEST(CollectivesTest, OneRanksCollectivesAreTheIdentity) {
  ASSERT_EQ(tg::runtime::communicator().size(), 1);
  tg::ir::TensorData data(tg::ir::DType::F32, {2, 3});
  for (int64_t i = 0; i < data.numElements(); ++i)
    data.set(i, static_cast<double>(i) * 1.5);
  Tensor x = Tensor::fromData(data);
  tg::ir::OpAttrs attrs;
  attrs.axes = {1};
  attrs.combine = tg::ir::OpKind::Max;
  for (tg::ir::OpKind kind : {tg::ir::OpKind::Allreduce, tg::ir::OpKind::Allgather, tg::ir::OpKind::Shard,
                              tg::ir::OpKind::Broadcast})
    EXPECT_EQ(tg::runtime::collectiveKernel(tg::ir::Op(kind, attrs), x).toData(), data)
        << tg::ir::opInfo(kind).name;
  EXPECT_EQ(tg::runtime::ownBlock(x.permuted({1, 0}), 0).shape(), (std::vector<int64_t>{3, 2}));
}

} // namespace
