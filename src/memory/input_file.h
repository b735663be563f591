// The system side of nuvec/input_file.h, for the core itself: opening a
// regular file without blocking, positioned reads that report errno, and the
// early check of an output path (NUVEC_TRACE).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

#include "nuvec/input_file.h"

namespace nuvec::io {

// Opens `path` read-only if it is a regular file, without ever blocking (a
// FIFO, a device or a directory is refused at once with an IoError that says
// what the path is); returns the descriptor (close-on-exec) and, if `size` is
// given, the file's size. InputFile opens its files through this.
int open_regular_file(const std::filesystem::path& path, std::uint64_t* size = nullptr);

// What a stat mode is, for messages: "a FIFO (named pipe)", "a directory", ...
const char* file_kind(unsigned mode);

// IoError unless `path` can be written as a regular file (created if
// missing, left as it is otherwise); never blocks. For outputs written
// later, such as NUVEC_TRACE, so that the error comes at once.
void check_writable_regular_file(const std::filesystem::path& path);

// Positioned reads into `out` at `offset` until it is full, the file ends or
// the system refuses (EINTR is retried): the bytes read, or -errno.
std::int64_t read_fully(int fd, std::uint64_t offset, std::span<std::byte> out) noexcept;

}  // namespace nuvec::io
