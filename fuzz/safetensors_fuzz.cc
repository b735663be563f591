// libFuzzer target: parse_safetensors_header on arbitrary bytes, taken as a
// whole file. A FormatError is the expected answer to a bad file; anything
// else (another exception, a crash, a sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <span>

#include "nuvec/error.h"
#include "nuvec/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  try {
    const nuvec::io::SafetensorsHeader header = nuvec::io::parse_safetensors_header(file, size, "fuzz.safetensors");
    // What the loader relies on: every tensor inside the data, none overlapping.
    for (const auto& t : header.tensors) {
      if (t.begin > t.end || t.end > header.file_size - header.data_start) __builtin_trap();
    }
  } catch (const nuvec::FormatError&) {
  }
  return 0;
}
