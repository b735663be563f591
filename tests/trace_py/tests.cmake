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
# `nuvec plot --html` in headless chromium, and `nuvec export --format
# torch-snapshot` read by PyTorch's torch.cuda._memory_viz: each skipped (exit
# 77) only where chromium cannot start, or no python3 has torch
# (scripts/install-deps.sh installs Debian's chromium and python3-torch, which
# belongs to /usr/bin/python3). Not in the sanitizer builds: what they add to
# PlotTrace and the command tests is the browser's and PyTorch's reading.
if(NUVEC_COMMAND_TESTS AND NOT NUVEC_SANITIZE)
  if(EXISTS /usr/bin/python3)
    set(NUVEC_TORCH_PY /usr/bin/python3)
  else()
    set(NUVEC_TORCH_PY ${NUVEC_TRACE_PY})
  endif()
  add_test(NAME PlotHtmlBrowser
           COMMAND ${NUVEC_TRACE_PY} ${CMAKE_CURRENT_LIST_DIR}/plot_html_test.py $<TARGET_FILE:nuvec_tool>)
  add_test(NAME TorchSnapshotExport
           COMMAND ${NUVEC_TORCH_PY} ${CMAKE_CURRENT_LIST_DIR}/torch_snapshot_test.py $<TARGET_FILE:nuvec_tool>)
  set_tests_properties(PlotHtmlBrowser TorchSnapshotExport PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
