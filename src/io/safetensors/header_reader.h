// Reading a header from an open file: 8 + N bytes, N checked before any
// allocation is sized by it.
#pragma once

#include "nuvec/input_file.h"
#include "nuvec/io/safetensors.h"

namespace nuvec::io::safetensors_detail {

SafetensorsHeader read_header(const InputFile& file);

}  // namespace nuvec::io::safetensors_detail
