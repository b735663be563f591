// load_gguf: read the header (growing the read until it holds the whole
// header), then place the tensors (io/tensor_placement.h): the file mapped
// and a view sliced per tensor, or, when some tensor is misaligned for its
// element, the tensors read into one buffer.
#include <algorithm>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "nuvec/input_file.h"
#include "io/gguf/gguf_cursor.h"
#include "io/gguf/gguf_parse.h"
#include "io/tensor_placement.h"
#include "nuvec/buffer.h"
#include "nuvec/device.h"
#include "nuvec/io/gguf.h"
#include "nuvec/memory.h"

namespace nuvec::io {
namespace {

// Enough for most headers in one read; larger ones (big vocabularies) double.
constexpr std::uint64_t kFirstRead = std::uint64_t{1} << 20;

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

std::vector<TensorExtent> tensor_extents(const GgufFile& header) {
  std::vector<TensorExtent> extents;
  extents.reserve(header.tensors.size());
  for (const GgufTensorInfo& t : header.tensors) {
    extents.push_back({header.data_offset + t.offset, t.bytes, t.type.address_alignment(), fmt::format("tensor '{}'", t.name)});
  }
  return extents;
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

}  // namespace

GgufFile read_gguf_header(const std::filesystem::path& path) { return read_header(InputFile(path)); }

Footprint gguf_footprint(const std::filesystem::path& path) {
  const InputFile file(path);
  const GgufFile header = read_header(file);
  return plan_placement(file, tensor_extents(header)).footprint();
}

GgufModel load_gguf(Device& device, const std::filesystem::path& path) {
  const InputFile file(path);
  GgufModel model;
  model.header = read_header(file);
  // A vocabulary-only file (or empty tensors) places nothing: no mapping.
  const std::vector<TensorExtent> extents = tensor_extents(model.header);
  PlacedTensors placed = place_tensors(device, file, plan_placement(file, extents), extents);
  model.tensors.reserve(extents.size());
  for (std::size_t i = 0; i < extents.size(); ++i) {
    model.tensors.push_back(view_of(model.header.tensors[i], placed.bytes[i], placed.storage));
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
