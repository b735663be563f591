// The GGUF header parser behind parse_gguf and load_gguf.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

#include "nuvec/io/gguf.h"

namespace nuvec::io {

// parse_gguf, except that when `prefix` ends inside the header while the file
// goes on it throws GgufPrefixTooShort (gguf_cursor.h) with how many bytes it
// needs, so that a loader can read more and try again.
GgufFile parse_gguf_prefix(std::span<const std::byte> prefix, std::uint64_t file_size,
                           const std::filesystem::path& name);

}  // namespace nuvec::io
