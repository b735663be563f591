#include "io/read_ranges.h"

#include <vector>

#include "io/parallel_read.h"
#include "nuvec/error.h"

namespace nuvec::io {

Buffer read_ranges(Device& device, const InputFile& file, std::size_t length, std::span<const RangeRead> ranges) {
  file.check_unchanged();  // before allocating: a changed file costs nothing
  if (!device.host_addressable()) {
    std::vector<FileRead> reads;
    reads.reserve(ranges.size());
    for (const RangeRead& r : ranges) reads.push_back({r.file_offset, r.length, r.buffer_offset});
    try {
      Buffer buffer = device.read_file(file.fd(), length, reads);
      file.check_unchanged();
      return buffer;
    } catch (const IoError&) {
      file.check_unchanged();  // a file that shrank is a FormatError, as on the CPU
      throw;
    }
  }
  Buffer buffer = device.new_buffer(length);
  std::vector<ReadJob> jobs;
  jobs.reserve(ranges.size());
  for (const RangeRead& r : ranges) jobs.push_back({r.file_offset, buffer.bytes().subspan(r.buffer_offset, r.length), r.what});
  read_in_parallel(file, jobs);
  file.check_unchanged();
  return buffer;
}

}  // namespace nuvec::io
