#include "lm/kernels/cpu_isa.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "nuvec/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace nuvec::lm::kernels {
namespace {

#if defined(__x86_64__) && defined(__GNUC__)
// Features that not every compiler's __builtin_cpu_supports knows (clang 14,
// which builds the fuzzers, lacks "f16c"), read from CPUID directly. Both
// only matter once AVX2 (or AVX-512) is known to be usable by the OS.
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
}
bool has_avx512_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 5)) != 0;
}

// AMX needs three yeses: the CPU has the tile unit with bf16 products
// (CPUID.7.0:EDX bits 24 and 22), the OS saves the tile state (XCR0 bits 17
// and 18), and Linux (5.16 and later) grants this process the right to use
// the tile data, which it asks for once here; the permission holds for every
// thread of the process. Where it is refused (an older kernel, or a signal
// stack too small for the larger state) the kernels stay on AVX-512.
bool has_amx_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  if ((d & (1u << 24)) == 0 || (d & (1u << 22)) == 0) return false;
  unsigned c1 = 0;
  if (__get_cpuid(1, &a, &b, &c1, &d) == 0 || (c1 & (1u << 27)) == 0) return false;  // OSXSAVE
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  constexpr unsigned kTileState = (1u << 17) | (1u << 18);
  if ((lo & kTileState) != kTileState) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}
#endif

Isa detect() {
#if defined(__x86_64__) && defined(__GNUC__)
  // libgcc's checks include the OS's XSAVE support (xgetbv) for AVX and AVX-512.
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
  if (!avx2) return Isa::portable;
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (!avx512) return Isa::avx2;
  if (!has_avx512_bf16()) return Isa::avx512;
  if (!has_amx_bf16()) return Isa::avx512bf16;
  return Isa::amx;
#else
  return Isa::portable;
#endif
}

Isa cpu_isa() {
  static const Isa isa = detect();
  return isa;
}

}  // namespace

bool isa_supported(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(cpu_isa()); }

Isa best_isa() {
  static const Isa isa = [] {
    const char* asked = std::getenv("NUVEC_KERNEL_ISA");
    if (asked == nullptr) return cpu_isa();
    for (Isa candidate : {Isa::portable, Isa::avx2, Isa::avx512, Isa::avx512bf16, Isa::amx})
      if (std::strcmp(asked, isa_name(candidate)) == 0) return isa_supported(candidate) ? candidate : cpu_isa();
    throw InvalidArgument(std::string("NUVEC_KERNEL_ISA=") + asked +
                          " is not an instruction set the kernels know; use portable, avx2, avx512, avx512bf16 "
                          "or amx (this CPU supports up to " + isa_name(cpu_isa()) + "), or unset it");
  }();
  return isa;
}

bool isa_allowed(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(best_isa()); }

void require_isa(Isa isa, const char* caller) {
  if (isa_allowed(isa)) return;
  std::string why = std::string("this CPU supports up to ") + isa_name(cpu_isa());
  if (best_isa() != cpu_isa()) why += std::string(" and NUVEC_KERNEL_ISA caps the kernels at ") + isa_name(best_isa());
  throw InvalidArgument(std::string(caller) + ": the " + isa_name(isa) + " kernels cannot run here: " + why);
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::portable: return "portable";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512bf16: return "avx512bf16";
    case Isa::amx: return "amx";
  }
  return "?";
}

}  // namespace nuvec::lm::kernels
