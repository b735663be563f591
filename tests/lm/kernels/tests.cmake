# The LM kernels (src/lm/kernels): linear() on every instruction set this CPU
# has (up to NUVEC_KERNEL_ISA: scripts/test-capped-isa.sh runs them capped),
# against the reference loops, and the thread pool. Suites are named
# Kernel* so `ctest -R Kernel` runs them.
# bench/lm/prepare_amx_carry.sh carries the first three to the AMX machine by name.
foreach(name kernel_linear_test kernel_amx_test kernel_swiglu_test)
  nuvec_test(${name} DIR lm/kernels STANDALONE)
endforeach()
foreach(name kernel_thread_pool_test kernel_roofline_test kernel_quant_test kernel_affine_test)
  nuvec_test(${name} DIR lm/kernels)
endforeach()
