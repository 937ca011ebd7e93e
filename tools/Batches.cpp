#include "tools/Batches.h"

#include "ir/SourceLoc.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <random>

namespace tg::tools {

Batches::Batches(const std::vector<api::Port> &inputs, const api::Program::Values &values, int64_t batch,
                 std::optional<uint64_t> shuffleSeed)
    : values_(values), batch_(batch), seed_(shuffleSeed) {
  std::map<std::string, std::vector<std::string>> byDimension; // leading symbolic dimension -> its inputs
  for (const api::Port &input : inputs)
    if (input.type.rank() > 0 && !input.type.shape[0].isStatic())
      byDimension[input.type.shape[0].symbol()].push_back(input.name);
  if (byDimension.empty())
    throw ir::UserError("--batch: no input leads with a symbolic dimension to cut into batches (declare one "
                        "as f32[n, ...])");
  if (byDimension.size() > 1) {
    std::string found;
    for (const auto &[name, names] : byDimension) {
      found += (found.empty() ? "" : ", ") + name + " (";
      for (size_t i = 0; i < names.size(); ++i)
        found += (i ? ", " : "") + names[i];
      found += ")";
    }
    throw ir::UserError("--batch: the inputs lead with different symbolic dimensions, " + found +
                        "; batches cut one of them: give the inputs one leading dimension");
  }
  dimension_ = byDimension.begin()->first;
  batched_ = byDimension.begin()->second;
  const std::string &first = batched_.front();
  rows_ = values_.at(first).shape().at(0);
  for (const std::string &name : batched_) {
    runtime::Tensor &value = values_.at(name);
    if (value.shape().at(0) != rows_)
      throw ir::UserError("--batch: inputs " + first + " and " + name + " share the dimension " + dimension_ +
                          " but their files have " + std::to_string(rows_) + " and " +
                          std::to_string(value.shape()[0]) + " rows");
    if (seed_) value = value.contiguous(); // shuffled batches copy rows
  }
}

const std::vector<int64_t> &Batches::order(int64_t epoch) {
  if (orderEpoch_ == epoch) return order_;
  order_.resize(static_cast<size_t>(rows_));
  std::iota(order_.begin(), order_.end(), 0);
  std::mt19937_64 random(*seed_ + static_cast<uint64_t>(epoch));
  for (size_t i = order_.size(); i > 1; --i)
    std::swap(order_[i - 1], order_[random() % i]);
  orderEpoch_ = epoch;
  return order_;
}

api::Program::Values Batches::batch(int64_t epoch, int64_t index) {
  int64_t start = index * batch_, count = std::min(batch_, rows_ - start);
  api::Program::Values inputs = values_;
  for (const std::string &name : batched_) {
    const runtime::Tensor &all = values_.at(name);
    std::vector<int64_t> shape = all.shape();
    shape[0] = count;
    if (!seed_) {
      inputs[name] = all.view(shape, all.strides(), all.offset() + start * all.strides()[0]);
      continue;
    }
    runtime::Tensor rows = runtime::Tensor::empty(all.dtype(), shape);
    size_t rowBytes = ir::dtypeSize(all.dtype());
    for (size_t d = 1; d < shape.size(); ++d)
      rowBytes *= static_cast<size_t>(shape[d]);
    const std::vector<int64_t> &permutation = order(epoch);
    for (int64_t r = 0; r < count; ++r)
      std::memcpy(static_cast<std::byte *>(rows.rawData()) + r * static_cast<int64_t>(rowBytes),
                  static_cast<const std::byte *>(all.rawData()) +
                      permutation[static_cast<size_t>(start + r)] * static_cast<int64_t>(rowBytes),
                  rowBytes);
    inputs[name] = rows;
  }
  return inputs;
}

} // namespace tg::tools
