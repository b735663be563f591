# The CPU backend (nuvec_cpu): reservations, file mappings and wiring through
# the SystemCalls seam, and Device::cpu().
target_sources(nuvec_cpu PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cpu_backend.cc
  ${CMAKE_CURRENT_LIST_DIR}/cpu_device.cc
  ${CMAKE_CURRENT_LIST_DIR}/machine.cc
  ${CMAKE_CURRENT_LIST_DIR}/system_calls.cc
)
