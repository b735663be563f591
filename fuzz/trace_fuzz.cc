// libFuzzer target: the trace reader (TraceReader and read_trace) on
// arbitrary bytes as a file, plain or gzip-compressed (the reader tells them
// by the magic). A FormatError naming a line is the expected refusal; a
// crash, a sanitizer report, another exception, or memory past the fuzzer's
// limit (a line or event count past the bounds) is a finding.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nuvec/error.h"
#include "nuvec/trace.h"

namespace {

// One in-memory file (memfd) reused for every input; its /proc path is a
// regular file to the reader.
const std::string& input_path() {
  static const std::string path = [] {
    const int fd = memfd_create("trace_fuzz", MFD_CLOEXEC);
    if (fd < 0) std::abort();
    return "/proc/self/fd/" + std::to_string(fd);
  }();
  return path;
}

void write_input(const std::uint8_t* data, std::size_t size) {
  const std::string& path = input_path();
  const int fd = std::stoi(path.substr(path.rfind('/') + 1));
  if (ftruncate(fd, 0) != 0) std::abort();
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  write_input(data, size);
  try {
    nuvec::TraceReader reader(input_path());
    std::uint64_t events = 0;
    while (reader.next()) {
      if (reader.line() != ++events + 1) std::abort();  // the header is line 1, events follow one a line
    }
  } catch (const nuvec::FormatError&) {
  }
  try {
    const nuvec::Trace trace = nuvec::read_trace(input_path(), 1000);
    if (trace.events.size() > 1000) std::abort();
  } catch (const nuvec::FormatError&) {
  }
  return 0;
}
