// Counter-based random numbers for rand and randn: Philox-4x32-10 (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC 2011). Element i (its C-order flat index) of a tensor drawn with `seed` is a pure
// function of (seed, i): counter (lo32(i), hi32(i), 0, 0), key (lo32(seed), hi32(seed)), one Philox block per
// element. Any device that computes these functions draws the same numbers.
#pragma once

#include <array>
#include <cstdint>

namespace tg::runtime {

/// The Philox-4x32 block function with 10 rounds.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

/// rand, f32: (x0 >> 8) * 2^-24, uniform in [0, 1).
float uniformF32(uint64_t seed, uint64_t index);
/// rand, f64: ((x0 << 32 | x1) >> 11) * 2^-53, uniform in [0, 1).
double uniformF64(uint64_t seed, uint64_t index);
/// randn, f32: Box-Muller in f32 from u1 = ((x0 >> 8) + 1) * 2^-24 in (0, 1] and u2 = (x1 >> 8) * 2^-24:
/// sqrt(-2 log u1) * cos(2 pi u2).
float normalF32(uint64_t seed, uint64_t index);
/// randn, f64: Box-Muller in f64 from u1 = (((x0 << 32 | x1) >> 11) + 1) * 2^-53 and u2 = ((x2 << 32 | x3) >>
/// 11)
/// * 2^-53.
double normalF64(uint64_t seed, uint64_t index);

} // namespace tg::runtime
