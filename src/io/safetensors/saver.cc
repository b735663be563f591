// save_safetensors and align_safetensors: both write the reference layout
// (aligned_layout.h), one from tensors in memory, the other from an existing
// file, a piece at a time.
#include <algorithm>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "nuvec/input_file.h"
#include "io/safetensors/aligned_layout.h"
#include "io/safetensors/atomic_file.h"
#include "io/safetensors/header_format.h"
#include "io/safetensors/header_reader.h"
#include "io/safetensors/json_events.h"
#include "nuvec/error.h"

namespace nuvec::io {
namespace safetensors_detail {
namespace {

// The bytes a view must hold: its shape's element count times the dtype's size.
std::uint64_t expected_bytes(const TensorView& t) {
  if (t.dtype == DType::GGML_BLOCK) {
    throw InvalidArgument(fmt::format("tensor {}: ggml block types cannot be saved as safetensors", in_quotes(t.name)));
  }
  if (t.shape.size() > kMaxRank) {
    throw InvalidArgument(fmt::format("tensor {}: {} dimensions, more than {}", in_quotes(t.name), t.shape.size(),
                                      kMaxRank));
  }
  std::uint64_t n = dtype_size(t.dtype);
  for (std::uint64_t d : t.shape) {
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / d) {
      throw InvalidArgument(fmt::format("tensor {}: its shape overflows 64 bits", in_quotes(t.name)));
    }
    n *= d;
  }
  return n;
}

void write_prefix(AtomicFile& out, const AlignedLayout& layout) {
  out.write(std::as_bytes(std::span(layout.prefix)));
}

}  // namespace
}  // namespace safetensors_detail

void save_safetensors(const std::filesystem::path& path, std::span<const TensorView> tensors,
                      const std::map<std::string, std::string>& metadata) {
  using namespace safetensors_detail;
  std::vector<LayoutTensor> entries;
  entries.reserve(tensors.size());
  for (const TensorView& t : tensors) {
    const std::uint64_t bytes = expected_bytes(t);
    if (bytes != t.bytes.size()) {
      throw InvalidArgument(fmt::format("tensor {}: shape and {} make {} bytes, but the view holds {}",
                                        in_quotes(t.name), dtype_name(t.dtype), bytes, t.bytes.size()));
    }
    entries.push_back({t.name, t.dtype, t.shape, bytes});
  }
  const AlignedLayout layout = make_aligned_layout(entries, metadata);

  AtomicFile out(path);
  write_prefix(out, layout);
  for (const std::size_t i : layout.order) out.write(tensors[i].bytes);  // back to back: no gaps
  out.commit();
}

void align_safetensors(const std::filesystem::path& in, const std::filesystem::path& out_path) {
  using namespace safetensors_detail;
  const InputFile file(in);
  const SafetensorsHeader header = read_header(file);
  std::vector<LayoutTensor> entries;
  entries.reserve(header.tensors.size());
  for (const SafetensorsTensorInfo& t : header.tensors) entries.push_back({t.name, t.dtype, t.shape, t.byte_size()});
  const AlignedLayout layout = make_aligned_layout(entries, header.metadata);

  AtomicFile out(out_path);
  write_prefix(out, layout);
  // Streamed: a piece at a time, so a file of any size costs this much memory.
  std::uint64_t largest = 0;
  for (const SafetensorsTensorInfo& t : header.tensors) largest = std::max(largest, t.byte_size());
  std::vector<std::byte> piece(static_cast<std::size_t>(std::min<std::uint64_t>(largest, std::size_t{8} << 20)));
  for (const std::size_t i : layout.order) {
    const SafetensorsTensorInfo& t = header.tensors[i];
    for (std::uint64_t done = 0; done < t.byte_size();) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), t.byte_size() - done));
      file.read_exact(header.data_start + t.begin + done, std::span(piece).first(n),
                      fmt::format("tensor {}", in_quotes(t.name)));
      out.write(std::span(piece).first(n));
      done += n;
    }
  }
  file.check_unchanged();
  out.commit();
}

}  // namespace nuvec::io
