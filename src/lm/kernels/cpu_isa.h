// Which vector instruction sets the kernels may use on this CPU, decided at
// run time so that one build runs on any x86-64 (and elsewhere, portably).
#pragma once

namespace nuvec::lm::kernels {

// Ordered: each level includes the ones before it.
enum class Isa {
  portable,    // plain C++ loops
  avx2,        // AVX2 + FMA + F16C (Haswell, Zen 1 and later)
  avx512,      // AVX-512 F/BW/VL/DQ + FMA + F16C (Skylake-SP, Zen 4)
  avx512bf16,  // the above + AVX512_BF16's vdpbf16ps (Cooper Lake, Sapphire Rapids, Zen 4)
  amx,         // the above + AMX-TILE and AMX-BF16 (Sapphire Rapids and later Xeons), with the
               // kernel's permission for the tile data (arch_prctl ARCH_REQ_XCOMP_PERM)
};

// The best level this CPU (and its OS, which must save the vector state)
// supports; NUVEC_KERNEL_ISA=portable|avx2|avx512|avx512bf16|amx lowers it (to
// measure or test a narrower path), never raises it past what the CPU has.
Isa best_isa();
bool isa_supported(Isa isa);
const char* isa_name(Isa isa);

}  // namespace nuvec::lm::kernels
