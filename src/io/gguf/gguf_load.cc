// load_gguf: read the header (growing the read until it holds the whole
// header), then map the file and slice a view per tensor, or, when some
// tensor is misaligned for its element, read the tensors into one buffer.
#include <algorithm>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "memory/input_file.h"
#include "io/gguf/gguf_cursor.h"
#include "io/gguf/gguf_parse.h"
#include "io/read_ranges.h"
#include "nuvec/buffer.h"
#include "nuvec/device.h"
#include "nuvec/io/gguf.h"
#include "nuvec/memory.h"

namespace nuvec::io {
namespace {

// Enough for most headers in one read; larger ones (big vocabularies) double.
constexpr std::uint64_t kFirstRead = std::uint64_t{1} << 20;
// Where each tensor starts in the buffer of the read path, as safetensors'.
constexpr std::uint64_t kBufferAlignment = 256;

GgufFile read_header(const InputFile& file) {
  std::vector<std::byte> prefix;
  std::uint64_t want = std::min(file.size(), kFirstRead);
  for (;;) {
    const std::size_t have = prefix.size();
    prefix.resize(static_cast<std::size_t>(want));
    file.read_exact(have, std::span(prefix).subspan(have), "GGUF header");
    try {
      return parse_gguf_prefix(prefix, file.size(), file.path());
    } catch (const GgufPrefixTooShort& more) {
      // The cursor checked `needed` against the file and the header cap, so
      // this grows to at most their smaller, and by at least a byte.
      want = std::min(std::max<std::uint64_t>(more.needed, 2 * prefix.size()),
                      std::min(file.size(), kGgufMaxHeaderSize));
    }
  }
}

// The largest power of two dividing a block (capped at 8): what ggml's block
// structs need their address aligned to.
std::uint64_t element_alignment(const GgmlType& type) {
  return std::min<std::uint64_t>(type.type_size & (~type.type_size + 1), 8);
}

bool all_aligned(const GgufFile& header) {
  return std::all_of(header.tensors.begin(), header.tensors.end(), [&](const GgufTensorInfo& t) {
    return (header.data_offset + t.offset) % element_alignment(t.type) == 0;
  });
}

TensorView view_of(const GgufTensorInfo& t, std::span<const std::byte> bytes, Storage storage) {
  TensorView view;
  view.name = t.name;
  view.dtype = t.type.dtype;
  view.shape = t.shape();
  view.bytes = bytes;
  view.storage = std::move(storage);
  return view;
}

bool has_tensor_data(const GgufFile& header) {
  return std::any_of(header.tensors.begin(), header.tensors.end(), [](const GgufTensorInfo& t) { return t.bytes != 0; });
}

// The read path's buffer: every tensor at a 256-byte boundary.
std::uint64_t read_buffer_bytes(const GgufFile& header) {
  std::uint64_t total = 0;
  for (const GgufTensorInfo& t : header.tensors) total += (t.bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  return total;
}

std::vector<TensorView> map_tensors(Device& device, const InputFile& file, const GgufFile& header) {
  file.check_unchanged();
  MappedFile mapped = device.map_file(file.fd(), file.path());
  if (mapped.file_size() != file.size()) {
    format_error(file.path(), std::min<std::uint64_t>(file.size(), mapped.file_size()),
                 fmt::format("the file changed size while being loaded ({} bytes, now {})", file.size(),
                             mapped.file_size()));
  }
  const std::span<const std::byte> all = mapped.bytes();
  const Storage storage = mapped.share();
  std::vector<TensorView> views;
  for (const GgufTensorInfo& t : header.tensors) {
    views.push_back(view_of(t, all.subspan(static_cast<std::size_t>(header.data_offset + t.offset),
                                           static_cast<std::size_t>(t.bytes)),
                            storage));
  }
  return views;
}

std::vector<TensorView> read_tensors(Device& device, const InputFile& file, const GgufFile& header) {
  std::vector<std::uint64_t> starts;
  std::uint64_t total = 0;
  for (const GgufTensorInfo& t : header.tensors) {
    starts.push_back(total);
    // Each tensor lies inside the file, so these sums stay below twice its size.
    total += (t.bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  }
  std::vector<RangeRead> ranges;
  ranges.reserve(header.tensors.size());
  for (std::size_t i = 0; i < header.tensors.size(); ++i) {
    const GgufTensorInfo& t = header.tensors[i];
    ranges.push_back({header.data_offset + t.offset, static_cast<std::size_t>(t.bytes),
                      static_cast<std::size_t>(starts[i]), fmt::format("tensor '{}'", t.name)});
  }
  auto buffer = std::make_shared<Buffer>(read_ranges(device, file, static_cast<std::size_t>(total), ranges));
  std::vector<TensorView> views;
  for (std::size_t i = 0; i < header.tensors.size(); ++i) {
    const GgufTensorInfo& t = header.tensors[i];
    views.push_back(view_of(
        t, buffer->bytes().subspan(static_cast<std::size_t>(starts[i]), static_cast<std::size_t>(t.bytes)), buffer));
  }
  return views;
}

}  // namespace

GgufFile read_gguf_header(const std::filesystem::path& path) { return read_header(InputFile(path)); }

Footprint gguf_footprint(const std::filesystem::path& path) {
  const InputFile file(path);
  const GgufFile header = read_header(file);
  Footprint f;
  if (!has_tensor_data(header)) return f;
  if (all_aligned(header)) {
    f.mapped = mapping_size(file.size());
  } else {
    f.active = allocation_size(static_cast<std::size_t>(read_buffer_bytes(header))).value_or(0);
  }
  return f;
}

GgufModel load_gguf(Device& device, const std::filesystem::path& path) {
  const InputFile file(path);
  GgufModel model;
  model.header = read_header(file);
  if (!has_tensor_data(model.header)) {
    // A vocabulary-only file, or empty tensors: nothing worth mapping.
    for (const GgufTensorInfo& t : model.header.tensors) model.tensors.push_back(view_of(t, {}, nullptr));
  } else if (all_aligned(model.header)) {
    model.tensors = map_tensors(device, file, model.header);
  } else {
    model.tensors = read_tensors(device, file, model.header);
  }
  return model;
}

const TensorView* GgufModel::find(std::string_view name) const {
  for (const TensorView& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace nuvec::io
