// Reading many byte ranges of one file at once: positioned reads from a few
// threads, so a cold or network file system sees several requests in flight
// and a warm page cache is copied by several cores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "nuvec/input_file.h"

namespace nuvec::io {

struct ReadJob {
  std::uint64_t file_offset = 0;
  std::span<std::byte> out;
  std::string_view what;  // for errors: "tensor \"x\""
};

// Reads every job, split into pieces of at most `piece_bytes`, on up to
// `max_threads` threads (never more than there are pieces or cores). The
// first error (FormatError if the file shrank, IoError) is raised after all
// threads have stopped.
void read_in_parallel(const InputFile& file, std::span<const ReadJob> jobs,
                      std::size_t piece_bytes = std::size_t{8} << 20, unsigned max_threads = 8);

}  // namespace nuvec::io
