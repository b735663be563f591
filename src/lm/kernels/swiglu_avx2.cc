// swiglu's loop for AVX2 (swiglu_simd.inc), 32-byte vectors.
#include <cstddef>

#include "lm/kernels/swiglu_loops.h"

#define NUVEC_ISA_TARGET "avx2,fma"
#include "lm/kernels/isa_target_begin.inc"

#define NUVEC_SWIGLU_BYTES 32
#define NUVEC_SWIGLU_NAME swiglu_avx2
#include "lm/kernels/swiglu_simd.inc"
#undef NUVEC_SWIGLU_NAME
#undef NUVEC_SWIGLU_BYTES

#include "lm/kernels/isa_target_end.inc"
