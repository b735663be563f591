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
// Whether this CPU has the level: nothing compiled for an instruction set
// (an *_avx2.cc, *_avx512*.cc or *_amx.cc file, a region between
// isa_target_begin.inc and isa_target_end.inc, a target attribute) may run
// before this says yes; the kernels ask isa_allowed(), which implies it.
// Even a function there that only does arithmetic may use the set's
// registers once the optimizer or a sanitizer touches it (ASan's stack
// poisoning does, in AVX-512 encodings), so sizes and blockings live in
// plain files (linear_workspace.cc).
bool isa_supported(Isa isa);
// Whether the kernels may run the level in this process: the CPU has it and
// NUVEC_KERNEL_ISA does not cap below it (isa <= best_isa()). The entry
// points that take a level (linear_with, quant_linear_with, attend_with,
// swiglu_with) refuse one not allowed, so that a run capped below the
// machine (scripts/test.sh runs the kernel and LM tests capped at avx2 and
// at portable) fails wherever a test or a library path assumes a wider set
// than it checked for, even on a CPU that has it.
bool isa_allowed(Isa isa);
// Throws InvalidArgument, naming `caller`, where !isa_allowed(isa).
void require_isa(Isa isa, const char* caller);
const char* isa_name(Isa isa);

}  // namespace nuvec::lm::kernels
