// parse_safetensors_header: the JSON header as hostile input. A SAX handler
// walks it as a small state machine, so that each flaw is refused where it
// is (with its byte offset) and nothing is allocated for what the schema
// does not allow: only names, strings and shapes of at most 64 dimensions,
// all bounded by the header's own (capped) length.
#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nuvec/input_file.h"
#include "io/safetensors/header_format.h"
#include "io/safetensors/json_events.h"
#include "nuvec/io/safetensors.h"

namespace nuvec::io {
namespace safetensors_detail {

namespace {

std::string shape_text(const std::vector<std::uint64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// The header's schema, one event at a time.
class HeaderHandler {
 public:
  HeaderHandler(JsonText& text, SafetensorsHeader& header) : text_(text), header_(header) {}

  // --- structure ---------------------------------------------------------
  bool start_object(std::size_t) {
    switch (where_) {
      case Where::root:
        where_ = Where::top;
        return true;
      case Where::top:
        if (key_is_metadata_) {
          where_ = Where::metadata;
        } else {
          where_ = Where::entry;
          entry_ = Entry{};
          entry_.info.name = key_;
          entry_.info.header_offset = key_offset_;
        }
        return true;
      case Where::entry:
        return nested_in_field("an object");
      case Where::skipping:
        ++skip_depth_;
        return true;
      default:
        return wrong_value("an object");
    }
  }

  bool end_object() {
    switch (where_) {
      case Where::top:
        where_ = Where::done;
        return true;
      case Where::metadata:
        where_ = Where::top;
        return true;
      case Where::entry:
        finish_entry();
        where_ = Where::top;
        return true;
      case Where::skipping:
        end_skipped();
        return true;
      default:
        return true;  // nlohmann only ends what was started
    }
  }

  bool start_array(std::size_t) {
    switch (where_) {
      case Where::entry:
        if (field_ == Field::shape) {
          where_ = Where::shape;
          return true;
        }
        if (field_ == Field::data_offsets) {
          where_ = Where::offsets;
          return true;
        }
        return nested_in_field("an array");
      case Where::skipping:
        ++skip_depth_;
        return true;
      default:
        return wrong_value("an array");
    }
  }

  bool end_array() {
    switch (where_) {
      case Where::shape:
        where_ = Where::entry;
        return true;
      case Where::offsets:
        if (entry_.offsets_count != 2) offsets_error("does not hold two offsets");
        where_ = Where::entry;
        return true;
      case Where::skipping:
        end_skipped();
        return true;
      default:
        return true;
    }
  }

  bool key(std::string& name) {
    switch (where_) {
      case Where::top:
        key_offset_ = text_.string_start();
        if (!top_keys_.insert(name).second) {
          fail(key_offset_, fmt::format("duplicate name {}: it is already in the header", in_quotes(name)));
        }
        key_is_metadata_ = name == "__metadata__";
        key_ = std::move(name);
        return true;
      case Where::metadata:
        key_offset_ = text_.string_start();
        if (header_.metadata.contains(name)) {
          fail(key_offset_, fmt::format("duplicate __metadata__ key {}", in_quotes(name)));
        }
        key_ = std::move(name);
        return true;
      case Where::entry:
        field_offset_ = text_.string_start();
        field_ = name == "dtype" ? Field::dtype
                 : name == "shape" ? Field::shape
                 : name == "data_offsets" ? Field::data_offsets
                                          : Field::unknown;
        if (field_ != Field::unknown) {
          const unsigned bit = 1u << static_cast<unsigned>(field_);
          if ((entry_.seen & bit) != 0) {
            fail(field_offset_, fmt::format("tensor {}: duplicate field \"{}\"", in_quotes(entry_.info.name), name));
          }
          entry_.seen |= bit;
          entry_.field_offsets[static_cast<std::size_t>(field_)] = field_offset_;
        }
        return true;
      default:
        return true;  // keys of skipped values
    }
  }

  // --- values ------------------------------------------------------------
  bool string(std::string& value) {
    switch (where_) {
      case Where::top:
        return wrong_value("a string");
      case Where::metadata:
        header_.metadata.emplace(std::move(key_), std::move(value));
        return true;
      case Where::entry:
        if (field_ == Field::dtype) {
          const std::optional<DType> dtype = dtype_from_name(value);
          if (!dtype) {
            fail(field_offset_, fmt::format("tensor {}: unknown dtype {}", in_quotes(entry_.info.name), in_quotes(value)));
          }
          entry_.info.dtype = *dtype;
          return true;
        }
        return scalar_in_field("a string");
      case Where::skipping:
        return true;
      default:
        return wrong_value("a string");
    }
  }

  bool number_unsigned(std::uint64_t value) {
    switch (where_) {
      case Where::shape:
        if (entry_.info.shape.size() == kMaxRank) {
          shape_error(fmt::format("has more than {} dimensions", kMaxRank));
        }
        entry_.info.shape.push_back(value);
        return true;
      case Where::offsets:
        if (entry_.offsets_count == 2) offsets_error("holds more than two offsets");
        (entry_.offsets_count++ == 0 ? entry_.info.begin : entry_.info.end) = value;
        return true;
      default:
        return other_scalar("a number");
    }
  }

  bool number_integer(std::int64_t value) {
    if (value >= 0) return number_unsigned(static_cast<std::uint64_t>(value));  // "-0"
    if (where_ == Where::shape) shape_error(fmt::format("has a negative dimension ({})", value));
    if (where_ == Where::offsets) offsets_error(fmt::format("holds a negative offset ({})", value));
    return other_scalar("a number");
  }

  bool number_float(double value, const std::string& text) {
    // Fractions, exponents and integers past 2^64 - 1 all arrive here.
    if (where_ == Where::shape) shape_error(fmt::format("has a dimension that is not a 64-bit integer ({})", text));
    if (where_ == Where::offsets) {
      offsets_error(fmt::format("holds an offset that is not a 64-bit integer ({})", text));
    }
    (void)value;
    return other_scalar("a number");
  }

  bool boolean(bool) { return other_scalar("a boolean"); }
  bool binary(nlohmann::json::binary_t&) { return other_scalar("binary data"); }

  bool null() {
    if (where_ == Where::top && key_is_metadata_) return true;  // MLX writes "__metadata__": null
    return other_scalar("null");
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::json::exception& error) {
    text_.syntax_error(position, error);
  }

  // After the parse: checks that need every tensor.
  void finish() {
    check_overlaps();
    header_.padding_tensors = std::erase_if(header_.tensors, is_padding_tensor);
  }

 private:
  enum class Where { root, top, metadata, entry, shape, offsets, skipping, done };
  enum class Field : unsigned { dtype, shape, data_offsets, unknown };

  struct Entry {
    SafetensorsTensorInfo info;
    unsigned seen = 0;  // bit per Field
    std::size_t offsets_count = 0;
    std::uint64_t field_offsets[3] = {};
  };

  [[noreturn]] void fail(std::uint64_t offset, std::string_view reason) { format_error(text_.file(), offset, reason); }

  std::uint64_t field_offset(Field field) const { return entry_.field_offsets[static_cast<std::size_t>(field)]; }

  [[noreturn]] void shape_error(std::string_view what) {
    fail(field_offset(Field::shape), fmt::format("tensor {}: shape {}", in_quotes(entry_.info.name), what));
  }
  [[noreturn]] void offsets_error(std::string_view what) {
    fail(field_offset(Field::data_offsets), fmt::format("tensor {}: data_offsets {}", in_quotes(entry_.info.name), what));
  }

  // A value of the wrong kind where the schema allows only one.
  bool wrong_value(std::string_view kind) {
    switch (where_) {
      case Where::root:
        fail(text_.value_start(), fmt::format("the header is {}, not a JSON object", kind));
      case Where::top:
        if (key_is_metadata_) fail(key_offset_, fmt::format("__metadata__ is {}, not an object of strings", kind));
        fail(key_offset_, fmt::format("entry {} is {}, not an object with dtype, shape and data_offsets",
                                      in_quotes(key_), kind));
      case Where::metadata:
        fail(key_offset_, fmt::format("__metadata__ value for {} is {}, not a string", in_quotes(key_), kind));
      case Where::shape:
        shape_error(fmt::format("holds {}, not an integer", kind));
      case Where::offsets:
        offsets_error(fmt::format("holds {}, not an integer", kind));
      default:
        fail(text_.value_start(), fmt::format("unexpected {}", kind));
    }
  }

  // A known field whose value is a container of the wrong kind; unknown
  // fields are skipped whole, as the reference implementation ignores them.
  bool nested_in_field(std::string_view kind) {
    if (field_ == Field::unknown) {
      where_ = Where::skipping;
      skip_depth_ = 1;
      return true;
    }
    return field_type_error(kind);
  }
  bool scalar_in_field(std::string_view kind) {
    if (field_ == Field::unknown) return true;
    return field_type_error(kind);
  }
  bool field_type_error(std::string_view kind) {
    static constexpr std::string_view kExpected[] = {"a dtype name", "an array of dimensions",
                                                     "an array [begin, end]"};
    static constexpr std::string_view kNames[] = {"dtype", "shape", "data_offsets"};
    const auto i = static_cast<std::size_t>(field_);
    fail(field_offset(field_), fmt::format("tensor {}: {} is {}, not {}", in_quotes(entry_.info.name), kNames[i], kind,
                                           kExpected[i]));
  }
  bool other_scalar(std::string_view kind) {
    if (where_ == Where::skipping) return true;
    if (where_ == Where::entry) return scalar_in_field(kind);
    return wrong_value(kind);
  }
  void end_skipped() {
    if (--skip_depth_ == 0) where_ = Where::entry;
  }

  void finish_entry() {
    SafetensorsTensorInfo& t = entry_.info;
    static constexpr std::string_view kNames[] = {"dtype", "shape", "data_offsets"};
    for (unsigned f = 0; f < 3; ++f) {
      if ((entry_.seen & (1u << f)) == 0) {
        fail(t.header_offset, fmt::format("tensor {} has no \"{}\"", in_quotes(t.name), kNames[f]));
      }
    }
    std::uint64_t elements = 1;
    for (std::uint64_t d : t.shape) {
      if (d != 0 && elements > std::numeric_limits<std::uint64_t>::max() / d) {
        shape_error(fmt::format("{} has more elements than 64 bits can count", shape_text(t.shape)));
      }
      elements *= d;
    }
    const std::uint64_t element_size = dtype_size(t.dtype);
    if (elements > std::numeric_limits<std::uint64_t>::max() / element_size) {
      shape_error(fmt::format("{} of {} has more bytes than 64 bits can count", shape_text(t.shape),
                              dtype_name(t.dtype)));
    }
    if (t.begin > t.end) offsets_error(fmt::format("[{}, {}] are reversed", t.begin, t.end));
    const std::uint64_t bytes = elements * element_size;
    if (bytes != t.end - t.begin) {
      fail(t.header_offset, fmt::format("tensor {}: shape {} of {} is {} bytes, but data_offsets [{}, {}] hold {}",
                                        in_quotes(t.name), shape_text(t.shape), dtype_name(t.dtype), bytes, t.begin,
                                        t.end, t.end - t.begin));
    }
    const std::uint64_t data_length = header_.file_size - header_.data_start;
    if (t.end > data_length) {
      offsets_error(fmt::format("[{}, {}] run past the data, which has {} bytes (the file ends at byte {}, "
                                "so it is truncated or the offsets are wrong)",
                                t.begin, t.end, data_length, header_.file_size));
    }
    header_.tensors.push_back(std::move(t));
  }

  void check_overlaps() {
    std::vector<const SafetensorsTensorInfo*> by_begin;
    for (const SafetensorsTensorInfo& t : header_.tensors) {
      if (t.byte_size() > 0) by_begin.push_back(&t);
    }
    std::sort(by_begin.begin(), by_begin.end(), [](const auto* a, const auto* b) {
      return a->begin != b->begin ? a->begin < b->begin : a->header_offset < b->header_offset;
    });
    const SafetensorsTensorInfo* reaching_furthest = nullptr;
    for (const SafetensorsTensorInfo* t : by_begin) {
      if (reaching_furthest != nullptr && t->begin < reaching_furthest->end) {
        const SafetensorsTensorInfo* later =
            t->header_offset > reaching_furthest->header_offset ? t : reaching_furthest;
        const SafetensorsTensorInfo* earlier = later == t ? reaching_furthest : t;
        fail(later->header_offset,
             fmt::format("tensor {} (data bytes [{}, {})) overlaps tensor {} (data bytes [{}, {}))",
                         in_quotes(later->name), later->begin, later->end, in_quotes(earlier->name), earlier->begin,
                         earlier->end));
      }
      if (reaching_furthest == nullptr || t->end > reaching_furthest->end) reaching_furthest = t;
    }
  }

  JsonText& text_;
  SafetensorsHeader& header_;
  Where where_ = Where::root;
  std::string key_;
  std::uint64_t key_offset_ = 0;
  bool key_is_metadata_ = false;
  std::unordered_set<std::string> top_keys_;
  Entry entry_;
  Field field_ = Field::unknown;
  std::uint64_t field_offset_ = 0;
  std::size_t skip_depth_ = 0;
};

}  // namespace
}  // namespace safetensors_detail

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> prefix, std::uint64_t file_size,
                                           const std::filesystem::path& name) {
  using namespace safetensors_detail;
  SafetensorsHeader header;
  header.header_length = checked_header_length(prefix, file_size, name);
  header.data_start = kLengthPrefixBytes + header.header_length;
  header.file_size = file_size;
  if (prefix.size() < header.data_start) {
    format_error(name, prefix.size(),
                 fmt::format("only {} bytes of the file were given, but its header ends at byte {}", prefix.size(),
                             header.data_start));
  }
  const std::string_view json(reinterpret_cast<const char*>(prefix.data()) + kLengthPrefixBytes,
                              static_cast<std::size_t>(header.header_length));
  // nlohmann skips a UTF-8 byte-order mark; the reference reader does not
  // (safetensors hands the header to serde_json, for which U+FEFF is not
  // whitespace: "expected value"), so a file with one is not portable.
  if (json.starts_with("\xEF\xBB\xBF")) {
    format_error(name, kLengthPrefixBytes,
                 "the header starts with a UTF-8 byte-order mark, which the safetensors reference reader refuses: "
                 "the header must be plain JSON from its first byte");
  }
  JsonText text(json, kLengthPrefixBytes, name);
  HeaderHandler handler(text, header);
  text.parse(handler);
  handler.finish();
  return header;
}

}  // namespace nuvec::io
