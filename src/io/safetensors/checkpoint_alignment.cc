// align_checkpoint: which files of a checkpoint need rewriting, what loading
// each costs before and after, and the rewrite itself, file by file.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nuvec/input_file.h"
#include "io/safetensors/aligned_layout.h"
#include "io/safetensors/atomic_file.h"
#include "io/safetensors/checkpoint_files.h"
#include "io/safetensors/header_reader.h"
#include "nuvec/error.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/memory.h"

namespace nuvec::io {
namespace safetensors_detail {
namespace {

constexpr std::string_view kPaddingPrefix = "__nuvec_padding_";

LoadPath load_path_of(const Footprint& f) {
  return f.active > 0 ? LoadPath::read : (f.mapped > 0 ? LoadPath::mapped : LoadPath::none);
}

// What loading the file would cost, from its header; and, if it needs
// rewriting, why and what the rewrite would cost instead.
FileAlignment check_file(const std::filesystem::path& path) {
  FileAlignment f;
  f.path = path;
  const InputFile file(path);
  const SafetensorsHeader header = read_header(file);
  f.bytes_before = header.file_size;
  f.before = footprint(path);
  f.load_before = load_path_of(f.before);

  std::size_t unaligned = 0;
  std::uint64_t tensor_bytes = 0;
  for (const SafetensorsTensorInfo& t : header.tensors) {
    unaligned += header.tensor_aligned(t) ? 0 : 1;
    tensor_bytes += t.byte_size();
  }
  if (unaligned > 0) {
    f.reasons.push_back(fmt::format("{} of its {} tensors are not at a multiple of their element size, so loading "
                                    "reads a copy instead of mapping the file",
                                    unaligned, header.tensors.size()));
  }
  if (header.padding_tensors > 0) {
    f.reasons.push_back(fmt::format("it declares {} {}* tensors (nuvec's old padding to 256-byte boundaries), which "
                                    "other readers list as tensors: strict loads fail on them",
                                    header.padding_tensors, kPaddingPrefix));
  } else if (const std::uint64_t data = header.file_size - header.data_start; tensor_bytes < data) {
    // The parser refuses overlaps, so this is exactly the bytes no tensor covers.
    f.reasons.push_back(fmt::format("{} bytes of its data belong to no tensor, which the reference reader refuses",
                                    data - tensor_bytes));
  }

  if (!f.changes()) {
    f.bytes_after = f.bytes_before;
    f.after = f.before;
  } else {
    std::vector<LayoutTensor> entries;
    entries.reserve(header.tensors.size());
    for (const SafetensorsTensorInfo& t : header.tensors) entries.push_back({t.name, t.dtype, t.shape, t.byte_size()});
    f.bytes_after = make_aligned_layout(entries, header.metadata).file_size();
    // The reference layout is aligned: a load maps the whole file, if it has any tensor bytes.
    if (tensor_bytes > 0) f.after = {mapping_size(f.bytes_after), 0};
  }
  f.load_after = load_path_of(f.after);
  return f;
}

// The index as it should be once the shards are aligned: without the
// padding tensors an old tool may have copied into its weight_map. Empty
// text when it needs no change.
struct IndexCheck {
  FileAlignment alignment;
  std::string new_text;
};

IndexCheck check_index(const std::filesystem::path& index) {
  IndexCheck check;
  check.alignment.path = index;
  const InputFile file(index);  // resolve_checkpoint has read and checked it, size capped
  std::string text(static_cast<std::size_t>(file.size()), '\0');
  file.read_exact(0, std::as_writable_bytes(std::span(text)), "the index");
  check.alignment.bytes_before = check.alignment.bytes_after = file.size();

  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object()) {
    format_error(index, 0, "the index is not a JSON object with a \"weight_map\" object");
  }
  nlohmann::ordered_json& map = doc["weight_map"];
  std::size_t padding = 0;
  for (auto it = map.begin(); it != map.end();) {
    if (it.key().starts_with(kPaddingPrefix)) {
      it = map.erase(it);
      ++padding;
    } else {
      ++it;
    }
  }
  if (padding > 0) {
    check.alignment.reasons.push_back(fmt::format(
        "its weight_map lists {} {}* tensors, which the aligned shards no longer declare", padding, kPaddingPrefix));
    check.new_text = doc.dump(2) + "\n";  // as transformers writes an index: indented by 2, a final newline
    check.alignment.bytes_after = check.new_text.size();
  }
  return check;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  AtomicFile out(path);
  out.write(std::as_bytes(std::span(text)));
  out.commit();
}

}  // namespace
}  // namespace safetensors_detail

std::size_t CheckpointAlignment::changed_files() const {
  const auto n = std::count_if(files.begin(), files.end(), [](const FileAlignment& f) { return f.changes(); });
  return static_cast<std::size_t>(n) + (index && index->changes() ? 1 : 0);
}

CheckpointAlignment align_checkpoint(const std::filesystem::path& path, const AlignOptions& options) {
  using namespace safetensors_detail;
  const CheckpointFiles files = resolve_checkpoint(path);
  CheckpointAlignment result;
  result.dry_run = options.dry_run;
  // Everything is checked before anything is written.
  for (const CheckpointShard& shard : files.shards) result.files.push_back(check_file(shard.path));
  IndexCheck index;
  if (!files.index.empty()) {
    index = check_index(files.index);
    result.index = index.alignment;
  }
  if (options.dry_run) return result;

  for (const FileAlignment& f : result.files) {
    if (f.changes()) align_safetensors(f.path, f.path);
  }
  if (!index.new_text.empty()) write_text(files.index, index.new_text);
  return result;
}

}  // namespace nuvec::io
