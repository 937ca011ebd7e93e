// Mini-batches for `tgc run --batch B [--epochs E] [--shuffle SEED]`: the inputs that lead with the same
// symbolic dimension are cut along it into batches of B rows, the last one partial where B does not divide
// the rows (NumPy's np.array_split(x, range(B, n, B))), in the files' order or, with a seed, in an order
// shuffled anew for each epoch; the other inputs are given whole to every step.
#pragma once

#include "api/Api.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tg::tools {

class Batches {
public:
  /// Plans batches of `batch` rows of `values` (the run's inputs, by name) for the script's `inputs`. Throws
  /// ir::UserError where no input leads with a symbolic dimension, where inputs lead with different ones (the
  /// message names them), or where those inputs' files disagree on its size.
  Batches(const std::vector<api::Port> &inputs, const api::Program::Values &values, int64_t batch,
          std::optional<uint64_t> shuffleSeed);

  const std::string &dimension() const { return dimension_; }
  int64_t rows() const { return rows_; }
  int64_t perEpoch() const { return rows_ == 0 ? 0 : (rows_ + batch_ - 1) / batch_; }

  /// The inputs of batch `index` (from 0, below perEpoch()) of epoch `epoch` (from 0): a view of each batched
  /// input's rows in order, or a copy of its rows in the epoch's shuffled order; the others as they are.
  api::Program::Values batch(int64_t epoch, int64_t index);

private:
  /// The epoch's order of rows: Fisher-Yates by a 64-bit Mersenne Twister seeded with seed + epoch (the same
  /// on every machine).
  const std::vector<int64_t> &order(int64_t epoch);

  api::Program::Values values_;
  std::vector<std::string> batched_; // the inputs cut into batches
  std::string dimension_;
  int64_t rows_ = 0, batch_ = 1;
  std::optional<uint64_t> seed_;
  int64_t orderEpoch_ = -1;
  std::vector<int64_t> order_;
};

} // namespace tg::tools
