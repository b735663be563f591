// GGUF metadata values: scalars, strings and (nested) arrays, read into
// GgufValue with every type, count and length checked first.
#pragma once

#include <cstdint>

#include "io/gguf/gguf_cursor.h"
#include "nuvec/io/gguf.h"

namespace nuvec::io {

// Reads a value type (uint32) and a value of that type. FormatError for an
// unknown type, a bool that is neither 0 nor 1, arrays nested deeper than
// kGgufMaxArrayDepth, or anything that runs past the file.
GgufValue read_gguf_typed_value(GgufCursor& cursor);

}  // namespace nuvec::io
