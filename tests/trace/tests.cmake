# Trace files and replay (include/nuvec/trace.h, include/nuvec/trace/replay.h): one
# file per concern; suites are named Trace* so `ctest -R Trace` runs them.
foreach(name trace_file_test trace_replay_test trace_tag_test trace_on_failure_test)
  # The gzip test writes its file with zlib.
  nuvec_test(${name} DIR trace TIMEOUT 120 LIBRARIES ZLIB::ZLIB)
endforeach()
