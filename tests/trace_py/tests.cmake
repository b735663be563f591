# The Python tools around traces: tools/trace_from_torch.py on a checked-in
# PyTorch snapshot, and tools/plot_trace.py drawing a tiny trace (skipped,
# exit 77, where matplotlib is missing; scripts/install-deps.sh installs it).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  set(NUVEC_TRACE_PY ${Python3_EXECUTABLE})
else()
  set(NUVEC_TRACE_PY python3)
endif()
add_test(NAME TraceFromTorch
         COMMAND ${NUVEC_TRACE_PY} ${CMAKE_CURRENT_LIST_DIR}/trace_from_torch_test.py)
add_test(NAME PlotTrace
         COMMAND ${NUVEC_TRACE_PY} ${CMAKE_CURRENT_LIST_DIR}/plot_trace_test.py)
set_tests_properties(TraceFromTorch PlotTrace PROPERTIES TIMEOUT 120)
set_tests_properties(PlotTrace PROPERTIES SKIP_RETURN_CODE 77)
