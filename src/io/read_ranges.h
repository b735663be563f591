// The read path every loader shares (safetensors, npy, GGUF): byte ranges of
// a checkpoint file into one new buffer, for tensors that cannot be used in
// place from a mapping (unaligned, or in the other byte order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "nuvec/input_file.h"
#include "nuvec/buffer.h"
#include "nuvec/device.h"

namespace nuvec::io {

struct RangeRead {
  std::uint64_t file_offset = 0;
  std::size_t length = 0;
  std::size_t buffer_offset = 0;
  std::string what;  // for errors: "tensor \"x\""
};

// A new buffer of `length` bytes on `device` holding every range of `file`.
// Where the host addresses the device's memory (the CPU), parallel
// positioned reads straight into the buffer (parallel_read.h); elsewhere (a
// GPU) the device's own path, Device::read_file (page-locked staging, then
// copies). OutOfMemory (nothing changed) past a limit; FormatError if the
// file changed size meanwhile; IoError if it cannot be read.
Buffer read_ranges(Device& device, const InputFile& file, std::size_t length, std::span<const RangeRead> ranges);

}  // namespace nuvec::io
