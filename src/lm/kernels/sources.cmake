# The LM runtime's compute kernels (owned by the kernels work).
target_sources(nuvec PRIVATE src/lm/kernels/linear_reference.cc)
