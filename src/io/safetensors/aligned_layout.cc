#include "io/safetensors/aligned_layout.h"

#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "io/safetensors/header_format.h"
#include "io/safetensors/json_events.h"
#include "nuvec/error.h"

namespace nuvec::io::safetensors_detail {
namespace {

// JSON text for a string or an object of strings; InvalidArgument if not UTF-8.
std::string json_text(const nlohmann::json& value) {
  try {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::type_error& e) {
    throw InvalidArgument(fmt::format("cannot write a safetensors header: a tensor name or metadata string is "
                                      "not valid UTF-8 ({})",
                                      e.what()));
  }
}

// The header is written by hand, entry by entry, as the reference writer
// lays it out (compact, keys dtype, shape, data_offsets): a JSON object that
// keeps insertion order would cost a linear search per tensor.
void append_entry(std::string& json, const std::string& name, DType dtype, const std::vector<std::uint64_t>& shape,
                  std::uint64_t begin, std::uint64_t end) {
  if (json.size() > 1) json += ',';
  json += json_text(name);
  json += fmt::format(R"(:{{"dtype":"{}","shape":[{}],"data_offsets":[{},{}]}})", dtype_name(dtype),
                      fmt::join(shape, ","), begin, end);
}

void check_name(const std::string& name, std::unordered_set<std::string_view>& seen) {
  if (name == "__metadata__") throw InvalidArgument("a tensor cannot be called \"__metadata__\": safetensors reserves it");
  if (name.starts_with("__nuvec_padding_")) {
    throw InvalidArgument(fmt::format("tensor name {} is reserved for nuvec's padding tensors", in_quotes(name)));
  }
  if (!seen.insert(name).second) throw InvalidArgument(fmt::format("tensor {} is given twice", in_quotes(name)));
}

}  // namespace

AlignedLayout make_aligned_layout(std::span<const LayoutTensor> tensors,
                                  const std::map<std::string, std::string>& metadata) {
  AlignedLayout layout;
  std::string json = "{";
  if (!metadata.empty()) json += R"("__metadata__":)" + json_text(metadata);  // first, as the reference writer

  std::unordered_set<std::string_view> seen;
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const LayoutTensor& t = tensors[i];
    check_name(t.name, seen);
    layout.begins.push_back(at);
    append_entry(json, t.name, t.dtype, t.shape, at, at + t.byte_size);
    at += t.byte_size;
    const bool last = i + 1 == tensors.size();
    if (const std::uint64_t next = align_up(at, kSafetensorsAlignment); !last && next != at) {
      append_entry(json, padding_tensor_name(at), DType::U8, {next - at}, at, next);
      at = next;
    }
  }
  json += '}';
  layout.data_length = at;

  // Spaces after the JSON (JSON whitespace) put the data start on a boundary.
  const std::uint64_t data_start = align_up(kLengthPrefixBytes + json.size(), kSafetensorsAlignment);
  json.append(data_start - kLengthPrefixBytes - json.size(), ' ');
  if (json.size() > kSafetensorsMaxHeaderLength) {
    throw InvalidArgument(fmt::format("the header would be {} bytes, over the 100 MB that readers accept",
                                      json.size()));
  }

  const std::uint64_t length = json.size();
  layout.prefix.reserve(kLengthPrefixBytes + json.size());
  for (int i = 0; i < 8; ++i) layout.prefix.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  layout.prefix += json;
  return layout;
}

}  // namespace nuvec::io::safetensors_detail
