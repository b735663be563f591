// Reading checkpoint bytes into a GPU device's buffer. The loaders' read
// path (tensors not aligned for use in place) reads into one allocator
// buffer; on a CUDA device that buffer is device memory, which a positioned
// read cannot write (the kernel would answer EFAULT), so the bytes go
// through the upload path instead: pread into page-locked staging, then DMA
// (cuda::read_file; docs/cuda.md, "Uploads").
#pragma once

#include <cstddef>
#include <span>

#include "io/file.h"
#include "nuvec/buffer.h"
#include "nuvec/cuda_upload.h"
#include "nuvec/device.h"
#include "nuvec/error.h"

namespace nuvec::io {

// Whether `device`'s buffers are GPU memory, which the host cannot write.
inline bool buffers_are_gpu_memory(const Device& device) {
  return !device.host_addressable();
}

// A new buffer of `length` bytes on `gpu` holding `reads` of `file`.
// OutOfMemory (nothing changed) past the memory limit or without room for
// staging under the wired limit; FormatError if the file changed size
// meanwhile (it ended early), IoError if it cannot be read.
inline Buffer read_into_gpu_buffer(Device& gpu, const InputFile& file, std::size_t length,
                                   std::span<const cuda::FileRead> reads) {
  try {
    return cuda::read_file(gpu, file.fd(), length, reads).buffer;
  } catch (const IoError&) {
    file.check_unchanged();  // a file that shrank is a FormatError, as on the CPU
    throw;
  }
}

}  // namespace nuvec::io
