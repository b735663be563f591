# The LM runtime's compute kernels (owned by the kernels work). Each
# instruction-set file (*_avx2, *_avx512*, *_amx) selects its own target
# (isa_target_begin.inc), so the library builds for generic x86-64 and picks
# a path at run time; nothing in those files runs before cpu_isa.h says the
# CPU has their set, so what must run everywhere (sizes, blockings, the
# checks themselves) lives in the plain files.
target_sources(nuvec_lm PRIVATE
  src/lm/kernels/cpu_isa.cc
  src/lm/kernels/linear.cc
  src/lm/kernels/linear_reference.cc
  src/lm/kernels/linear_workspace.cc
  src/lm/kernels/linear_avx2.cc
  src/lm/kernels/linear_avx512.cc
  src/lm/kernels/linear_avx512bf16.cc
  src/lm/kernels/linear_amx.cc
  src/lm/kernels/amx_peak.cc
  src/lm/kernels/machine_roofline.cc
  src/lm/kernels/measurement.cc
  src/lm/kernels/swiglu.cc
  src/lm/kernels/swiglu_avx2.cc
  src/lm/kernels/swiglu_avx512.cc
  src/lm/kernels/thread_pool.cc
)
# Products with ggml's quantized blocks (GGUF weights), used in place.
target_sources(nuvec_lm PRIVATE
  src/lm/kernels/quant_linear.cc
  src/lm/kernels/quant_portable.cc
  src/lm/kernels/quant_avx2.cc
  src/lm/kernels/quant_avx512.cc
  src/lm/kernels/quant_dot_avx512vnni.cc
  src/lm/kernels/quant_dot_settings.cc
)
