// swiglu's loop for AVX512 (swiglu_simd.inc), 64-byte vectors.
#include <cstddef>

#include "lm/kernels/swiglu_loops.h"

#define NUVEC_ISA_TARGET "avx2,fma,avx512f,avx512bw,avx512vl,avx512dq"
#include "lm/kernels/isa_target_begin.inc"

#define NUVEC_SWIGLU_BYTES 64
#define NUVEC_SWIGLU_NAME swiglu_avx512
#include "lm/kernels/swiglu_simd.inc"
#undef NUVEC_SWIGLU_NAME
#undef NUVEC_SWIGLU_BYTES

#include "lm/kernels/isa_target_end.inc"
