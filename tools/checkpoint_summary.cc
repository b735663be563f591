#include "checkpoint_summary.h"

#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nuvec/input_file.h"

#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/io/gguf.h"
#include "nuvec/io/npy.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/lm/model.h"
#include "nuvec/memory.h"

namespace nuvec::tool {
namespace {

// The file's first n bytes (fewer if it is shorter); IoError for a path that
// is not a regular file (a FIFO is refused, not waited on).
std::string first_bytes(const std::filesystem::path& path, std::size_t n) {
  const io::InputFile file(path);
  std::string bytes(static_cast<std::size_t>(std::min<std::uint64_t>(n, file.size())), '\0');
  file.read_exact(0, std::as_writable_bytes(std::span(bytes.data(), bytes.size())), "the magic");
  return bytes;
}

std::string detect_format(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  if (std::filesystem::is_directory(path) || path.extension() == ".safetensors" || name.ends_with(".index.json")) {
    return "safetensors";
  }
  if (path.extension() == ".npy") return "npy";
  if (path.extension() == ".gguf") return "gguf";
  const std::string magic = first_bytes(path, 6);
  if (magic.starts_with("GGUF")) return "gguf";
  if (magic == "\x93NUMPY") return "npy";
  throw InvalidArgument(fmt::format(
      "{}: not a checkpoint nuvec knows (safetensors file, directory or index; .npy; .gguf)", path.string()));
}

// The figures of a footprint, and the load path they mean.
void take_footprint(CheckpointSummary& s, const io::Footprint& f, std::string how_measured) {
  s.mapped = f.mapped;
  s.active = f.active;
  s.peak_with_mapped = f.peak_with_mapped();
  s.how_measured = std::move(how_measured);
  s.load_path = f.active == 0 ? (f.mapped == 0 ? "none" : "mapped") : (f.mapped == 0 ? "read" : "mapped and read");
}

CheckpointSummary summarise_safetensors(const std::filesystem::path& path) {
  CheckpointSummary s;
  s.path = path;
  s.format = "safetensors";
  take_footprint(s, io::footprint(path), "from the headers (nuvec::io::footprint)");
  // The files of a checkpoint: the path itself, or the shards of its index.
  std::vector<std::filesystem::path> files;
  auto device = Device::create_cpu();
  const io::SafetensorsFile loaded = io::load_safetensors(*device, path, {.filter = io::TensorFilter(
                                                                             [](std::string_view) { return false; })});
  for (const io::SafetensorsSource& source : loaded.sources()) files.push_back(source.path);
  for (const std::filesystem::path& file : files) {
    const io::SafetensorsHeader header = io::read_safetensors_header(file);
    s.file_bytes += header.file_size;
    for (const io::SafetensorsTensorInfo& t : header.tensors) {
      s.tensors.push_back({files.size() > 1 ? fmt::format("{} ({})", t.name, file.filename().string()) : t.name,
                           std::string(io::dtype_name(t.dtype)), t.shape, t.byte_size(), header.data_start + t.begin,
                           header.tensor_aligned(t)});
    }
  }
  return s;
}

// "runs as a model: ..." with the config and how many tensors of each type,
// or "not runnable as a model: <why>".
std::string gguf_model_note(const io::GgufFile& header, const std::filesystem::path& path) {
  try {
    const lm::ModelConfig c = lm::check_gguf_model(header, path);
    std::map<std::string, std::size_t> types;
    for (const io::GgufTensorInfo& t : header.tensors) ++types[std::string(t.type.name)];
    std::vector<std::string> counts;
    for (const auto& [name, n] : types) counts.push_back(fmt::format("{} x{}", name, n));
    return fmt::format("runs as a model (nuvec run/profile): {}, {} layers, hidden {}, heads {}/{}, vocabulary {}{}; "
                       "tensor types {}; used in place from the mapping",
                       lm::architecture_name(c.architecture), c.num_hidden_layers, c.hidden_size,
                       c.num_attention_heads, c.num_key_value_heads, c.vocab_size,
                       c.tie_word_embeddings ? ", tied embeddings" : "", fmt::join(counts, ", "));
  } catch (const std::exception& e) {
    return fmt::format("not runnable as a model: {}", e.what());
  }
}

}  // namespace

CheckpointSummary summarise_checkpoint(const std::filesystem::path& path) {
  const std::string format = detect_format(path);
  if (format == "safetensors") return summarise_safetensors(path);
  CheckpointSummary s;
  s.path = path;
  s.format = format;
  const io::InputFile file(path);  // a regular file, or refused without blocking
  s.file_bytes = file.size();
  if (format == "gguf") {
    // Exact from the header (io::gguf_footprint), as safetensors' footprint.
    const io::GgufFile header = io::read_gguf_header(path);
    for (const io::GgufTensorInfo& t : header.tensors) {
      s.tensors.push_back({t.name, std::string(t.type.name), t.shape(), t.bytes, header.data_offset + t.offset,
                           header.tensor_aligned(t)});
    }
    take_footprint(s, io::gguf_footprint(path), "from the header (exact on a fresh device)");
    s.model_note = gguf_model_note(header, path);
    return s;
  }
  // npy: exact from the header (io::npy_footprint), as the other formats.
  const io::NpyHeader header = io::read_npy_header(path);
  const std::string dtype(io::dtype_name(header.dtype));
  if (header.fortran_order) {
    // load_npy refuses it by default: say so rather than show a transpose.
    s.tensors.push_back({path.stem().string(), dtype, header.shape, header.data_bytes, header.data_offset, false});
    s.load_path = "refused: Fortran order (load_npy loads it only with FortranOrder::load_transposed)";
    s.how_measured = "from the header";
    return s;
  }
  take_footprint(s, io::npy_footprint(path), "from the header (exact on a fresh device)");
  s.tensors.push_back({path.stem().string(), dtype, header.shape, header.data_bytes, header.data_offset, s.mapped > 0});
  return s;
}

}  // namespace nuvec::tool
