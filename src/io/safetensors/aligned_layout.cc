#include "io/safetensors/aligned_layout.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "io/safetensors/header_format.h"
#include "io/safetensors/json_events.h"
#include "nuvec/error.h"

namespace nuvec::io::safetensors_detail {
namespace {

// JSON text for a string or an object of strings; InvalidArgument if not
// UTF-8. nlohmann and serde_json (the reference writer's) escape alike:
// '"', '\\', \b \f \n \r \t, other control characters as \u00xx in
// lowercase hex, everything else (non-ASCII included) as it is.
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
    throw InvalidArgument(fmt::format("tensor name {} is reserved: nuvec's reader hides tensors of that name "
                                      "(the padding of files it wrote before)",
                                      in_quotes(name)));
  }
  if (!seen.insert(name).second) throw InvalidArgument(fmt::format("tensor {} is given twice", in_quotes(name)));
}

}  // namespace

int reference_dtype_rank(DType dtype) {
  // The Rust enum: BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3,
  // F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, I16, U16, F16, BF16, I32, U32, F32,
  // C64, F64, I64, U64 (nuvec has no F4, F6 or F8_E8M0/FNUZ types).
  switch (dtype) {
    case DType::BOOL: return 0;
    case DType::U8: return 4;
    case DType::I8: return 5;
    case DType::F8_E5M2: return 6;
    case DType::F8_E4M3: return 7;
    case DType::I16: return 11;
    case DType::U16: return 12;
    case DType::F16: return 13;
    case DType::BF16: return 14;
    case DType::I32: return 15;
    case DType::U32: return 16;
    case DType::F32: return 17;
    case DType::C64: return 18;
    case DType::F64: return 19;
    case DType::I64: return 20;
    case DType::U64: return 21;
    case DType::GGML_BLOCK: break;
  }
  throw InvalidArgument("ggml block types cannot be saved as safetensors");
}

AlignedLayout make_aligned_layout(std::span<const LayoutTensor> tensors,
                                  const std::map<std::string, std::string>& metadata) {
  std::unordered_set<std::string_view> seen;
  for (const LayoutTensor& t : tensors) check_name(t.name, seen);

  AlignedLayout layout;
  layout.order.resize(tensors.size());
  std::iota(layout.order.begin(), layout.order.end(), std::size_t{0});
  // As the reference: descending dtype rank, then name (byte order, as Rust's str).
  std::sort(layout.order.begin(), layout.order.end(), [&](std::size_t a, std::size_t b) {
    const int ra = reference_dtype_rank(tensors[a].dtype);
    const int rb = reference_dtype_rank(tensors[b].dtype);
    return ra != rb ? ra > rb : tensors[a].name < tensors[b].name;
  });

  std::string json = "{";
  if (!metadata.empty()) json += R"("__metadata__":)" + json_text(metadata);  // first, as the reference writer
  layout.begins.resize(tensors.size());
  std::uint64_t at = 0;
  for (const std::size_t i : layout.order) {
    const LayoutTensor& t = tensors[i];
    layout.begins[i] = at;
    append_entry(json, t.name, t.dtype, t.shape, at, at + t.byte_size);
    at += t.byte_size;
  }
  json += '}';
  layout.data_length = at;

  // Spaces after the JSON (JSON whitespace) put the data start at a multiple of 8.
  json.append(static_cast<std::size_t>(align_up(json.size(), kLengthPrefixBytes) - json.size()), ' ');
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
