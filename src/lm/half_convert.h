// f32 <-> f16 (IEEE binary16) for the KV cache: f16 values are held as their
// bits (uint16) so that no header needs the compiler's _Float16.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nuvec::lm::half {

// dst[i] = src[i] rounded to the nearest f16 (ties to even; past 65504: inf),
// with F16C where the CPU has it (cpu_isa.h's AVX2 level), else portably.
void from_f32(const float* src, std::uint16_t* dst, std::size_t n);
// Portable single conversions (the reference the vector paths are tested against).
std::uint16_t from_f32(float x);
float to_f32(std::uint16_t bits);

}  // namespace nuvec::lm::half
