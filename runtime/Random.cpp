#include "runtime/Random.h"

#include <cmath>
#include <numbers>

namespace tg::runtime {

namespace {

constexpr uint32_t kMultiplier0 = 0xD2511F53, kMultiplier1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85; // the key schedule's increments

std::array<uint32_t, 4> block(uint64_t seed, uint64_t index) {
  return philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

uint64_t top53(uint32_t high, uint32_t low) {
  return ((static_cast<uint64_t>(high) << 32) | low) >> 11;
}

} // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    uint64_t product0 = static_cast<uint64_t>(kMultiplier0) * counter[0];
    uint64_t product1 = static_cast<uint64_t>(kMultiplier1) * counter[2];
    counter = {static_cast<uint32_t>(product1 >> 32) ^ counter[1] ^ key[0], static_cast<uint32_t>(product1),
               static_cast<uint32_t>(product0 >> 32) ^ counter[3] ^ key[1], static_cast<uint32_t>(product0)};
  }
  return counter;
}

float uniformF32(uint64_t seed, uint64_t index) {
  return static_cast<float>(block(seed, index)[0] >> 8) * 0x1p-24f;
}

double uniformF64(uint64_t seed, uint64_t index) {
  std::array<uint32_t, 4> x = block(seed, index);
  return static_cast<double>(top53(x[0], x[1])) * 0x1p-53;
}

float normalF32(uint64_t seed, uint64_t index) {
  std::array<uint32_t, 4> x = block(seed, index);
  float u1 = static_cast<float>((x[0] >> 8) + 1) * 0x1p-24f; // (0, 1]: log(u1) is finite
  float u2 = static_cast<float>(x[1] >> 8) * 0x1p-24f;
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * std::numbers::pi_v<float> * u2);
}

double normalF64(uint64_t seed, uint64_t index) {
  std::array<uint32_t, 4> x = block(seed, index);
  double u1 = static_cast<double>(top53(x[0], x[1]) + 1) * 0x1p-53;
  double u2 = static_cast<double>(top53(x[2], x[3])) * 0x1p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

} // namespace tg::runtime
