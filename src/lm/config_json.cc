#include "lm/config_json.h"

#include <vector>

#include <fmt/format.h>

#include "nuvec/input_file.h"
#include "io/safetensors/json_events.h"  // CountingIterator: the lexer's read position

namespace nuvec::lm::detail {
namespace {

using Json = nlohmann::json;
using io::safetensors_detail::CountingIterator;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Builds the DOM as nlohmann's own DOM parser does, and keeps the path of
// object keys it is inside, recording each member's value offset.
class PositionedBuilder {
 public:
  PositionedBuilder(std::string_view text, const std::filesystem::path& file, PositionedJson& out,
                    const char* const& read_to)
      : text_(text), file_(file), out_(out), read_to_(read_to) {}

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(Json::number_integer_t v) { return value(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return value(v); }
  bool number_float(Json::number_float_t v, const std::string&) { return value(v); }
  bool string(std::string& v) { return value(std::move(v)); }
  bool binary(Json::binary_t& v) { return value(Json::binary(std::move(v))); }

  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    Frame& f = frames_.back();
    f.key = k;
    // Just past the key's closing quote: skip to the ':' and past it.
    std::size_t at = position();
    while (at < text_.size() && (is_space(text_[at]) || text_[at] == ':')) ++at;
    out_.offsets[path()] = at;
    return true;
  }

  bool parse_error(std::size_t position, const std::string& token, const Json::exception& error) {
    const std::uint64_t at = position == 0 ? 0 : position - 1;
    const std::string p = frames_.empty() ? std::string{} : path();
    if (error.id == 406 && !p.empty()) {  // out_of_range: a number past what a double holds
      io::format_error(file_, out_.offset_of(p),
                       fmt::format("{} is {}, a number out of range (past what a double holds)", p, token));
    }
    std::string_view what = error.what();
    if (const auto colon = what.find(": "); colon != std::string_view::npos) what.remove_prefix(colon + 2);
    io::format_error(file_, std::min<std::uint64_t>(at, text_.size()), fmt::format("not valid JSON: {}", what));
  }

 private:
  struct Frame {
    Json* container;
    std::string key;  // the member being read, for objects
  };

  std::size_t position() const { return static_cast<std::size_t>(read_to_ - text_.data()); }

  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (!f.container->is_object()) break;  // members inside arrays are not named
      if (!p.empty()) p += '.';
      p += f.key;
    }
    return p;
  }

  Json* place(Json v) {
    if (frames_.empty()) {
      out_.root = std::move(v);
      return &out_.root;
    }
    Frame& f = frames_.back();
    if (f.container->is_object()) return &((*f.container)[f.key] = std::move(v));
    f.container->push_back(std::move(v));
    return &f.container->back();
  }

  bool value(Json v) {
    place(std::move(v));
    return true;
  }

  bool open(Json empty) {
    if (frames_.empty()) {
      std::size_t at = 0;
      while (at < text_.size() && is_space(text_[at])) ++at;
      out_.offsets[""] = at;
    }
    frames_.push_back({place(std::move(empty)), {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  std::string_view text_;
  const std::filesystem::path& file_;
  PositionedJson& out_;
  const char* const& read_to_;
  std::vector<Frame> frames_;
};

}  // namespace

std::uint64_t PositionedJson::offset_of(std::string_view path) const {
  std::string p(path);
  while (true) {
    if (const auto it = offsets.find(p); it != offsets.end()) return it->second;
    if (p.empty()) return 0;
    const auto dot = p.rfind('.');
    p = dot == std::string::npos ? std::string{} : p.substr(0, dot);
  }
}

PositionedJson parse_positioned_json(std::string_view text, const std::filesystem::path& file) {
  PositionedJson out;
  const char* read_to = text.data();
  PositionedBuilder builder(text, file, out, read_to);
  const CountingIterator first(text.data(), &read_to);
  const CountingIterator last(text.data() + text.size(), &read_to);
  Json::sax_parse(first, last, &builder);
  return out;
}

}  // namespace nuvec::lm::detail
