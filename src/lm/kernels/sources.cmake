# The LM runtime's compute kernels (owned by the kernels work). Each
# instruction-set file selects its own target (isa_target_begin.inc), so
# the library builds for generic x86-64 and picks a path at run time.
target_sources(nuvec_lm PRIVATE
  src/lm/kernels/cpu_isa.cc
  src/lm/kernels/linear.cc
  src/lm/kernels/linear_reference.cc
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
