// Resolving a checkpoint path, and reading a shard index as hostile input:
// its shard paths must not lead out of its directory (a downloaded index
// must not make us open ~/.ssh/...). Symbolic links inside the directory are
// followed: the Hugging Face cache is made of them.
#include "io/safetensors/checkpoint_files.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "nuvec/input_file.h"
#include "io/safetensors/json_events.h"
#include "nuvec/error.h"

namespace nuvec::io::safetensors_detail {
namespace {

// Why a weight_map shard path is refused, or empty if it is fine.
std::string shard_path_problem(const std::string& shard) {
  if (shard.empty()) return "is empty";
  if (std::any_of(shard.begin(), shard.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
    return "holds a control character";
  }
  const std::filesystem::path p(shard);
  if (p.is_absolute() || p.has_root_path()) return "is absolute: shards must be inside the index's directory";
  for (const std::filesystem::path& part : p) {
    if (part == "..") return "climbs out with '..': shards must be inside the index's directory";
  }
  if (p.lexically_normal().filename().empty()) return "names a directory, not a file";
  return {};
}

// {"weight_map": {tensor: shard, ...}, anything else is skipped}.
class IndexHandler {
 public:
  IndexHandler(JsonText& text, std::map<std::string, std::map<std::string, IndexEntry>>& shards)
      : text_(text), shards_(shards) {}

  bool start_object(std::size_t) {
    if (where_ == Where::root) {
      where_ = Where::top;
    } else if (where_ == Where::top && key_ == "weight_map") {
      where_ = Where::weight_map;
    } else if (where_ == Where::top || where_ == Where::skipping) {
      begin_skip();
    } else {
      wrong("an object");
    }
    return true;
  }
  bool end_object() {
    if (where_ == Where::top) where_ = Where::done;
    else if (where_ == Where::weight_map) where_ = Where::top;
    else if (where_ == Where::skipping) end_skip();
    return true;
  }
  bool start_array(std::size_t) {
    if (where_ == Where::skipping || (where_ == Where::top && key_ != "weight_map")) begin_skip();
    else wrong("an array");
    return true;
  }
  bool end_array() {
    if (where_ == Where::skipping) end_skip();
    return true;
  }
  bool key(std::string& name) {
    if (where_ == Where::top) {
      key_offset_ = text_.string_start();
      if (name == "weight_map") {
        if (seen_weight_map_) format_error(text_.file(), key_offset_, "duplicate \"weight_map\"");
        seen_weight_map_ = true;
      }
      key_ = std::move(name);
    } else if (where_ == Where::weight_map) {
      key_offset_ = text_.string_start();
      if (!names_.insert(name).second) {
        format_error(text_.file(), key_offset_,
                     fmt::format("tensor {} is listed twice in the weight_map", in_quotes(name)));
      }
      key_ = std::move(name);
    }
    return true;
  }
  bool string(std::string& value) {
    if (where_ == Where::weight_map) {
      if (const std::string problem = shard_path_problem(value); !problem.empty()) {
        format_error(text_.file(), text_.string_start(),
                     fmt::format("tensor {}: shard path {} {}", in_quotes(key_), in_quotes(value), problem));
      }
      const std::string shard = std::filesystem::path(value).lexically_normal().string();
      shards_[shard].emplace(std::move(key_), IndexEntry{key_offset_});
      return true;
    }
    return scalar("a string");
  }
  bool null() { return scalar("null"); }
  bool boolean(bool) { return scalar("a boolean"); }
  bool number_integer(std::int64_t) { return scalar("a number"); }
  bool number_unsigned(std::uint64_t) { return scalar("a number"); }
  bool number_float(double, const std::string&) { return scalar("a number"); }
  bool binary(nlohmann::json::binary_t&) { return scalar("binary data"); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::json::exception& error) {
    text_.syntax_error(position, error);
  }

  bool saw_weight_map() const { return seen_weight_map_; }

 private:
  enum class Where { root, top, weight_map, skipping, done };

  bool scalar(std::string_view kind) {
    if (where_ == Where::root || where_ == Where::weight_map || (where_ == Where::top && key_ == "weight_map")) {
      wrong(kind);
    }
    return true;  // other keys' values are not ours to judge
  }
  [[noreturn]] void wrong(std::string_view kind) {
    if (where_ == Where::root) {
      format_error(text_.file(), text_.value_start(), fmt::format("the index is {}, not a JSON object", kind));
    }
    if (where_ == Where::weight_map) {
      format_error(text_.file(), key_offset_,
                   fmt::format("tensor {}: its shard is {}, not a file name", in_quotes(key_), kind));
    }
    format_error(text_.file(), key_offset_, fmt::format("\"weight_map\" is {}, not an object", kind));
  }
  void begin_skip() {
    if (where_ != Where::skipping) {
      where_ = Where::skipping;
      skip_depth_ = 0;
    }
    ++skip_depth_;
  }
  void end_skip() {
    if (--skip_depth_ == 0) where_ = Where::top;
  }

  JsonText& text_;
  std::map<std::string, std::map<std::string, IndexEntry>>& shards_;
  Where where_ = Where::root;
  std::string key_;
  std::uint64_t key_offset_ = 0;
  bool seen_weight_map_ = false;
  std::unordered_set<std::string> names_;
  std::size_t skip_depth_ = 0;
};

CheckpointFiles read_index(const std::filesystem::path& index) {
  const InputFile file(index);
  if (file.size() > kMaxIndexBytes) {
    format_error(index, 0, fmt::format("the index has {} bytes, over the {}-byte limit", file.size(), kMaxIndexBytes));
  }
  std::string text(static_cast<std::size_t>(file.size()), '\0');
  file.read_exact(0, std::as_writable_bytes(std::span(text)), "the index");

  std::map<std::string, std::map<std::string, IndexEntry>> by_shard;
  JsonText json(text, 0, index);
  IndexHandler handler(json, by_shard);
  json.parse(handler);
  if (!handler.saw_weight_map()) format_error(index, json.value_start(), "the index has no \"weight_map\"");

  CheckpointFiles files;
  files.index = index;
  const std::filesystem::path directory = index.parent_path();
  for (auto& [shard, names] : by_shard) {  // std::map: by file name
    files.shards.push_back({directory / shard, std::move(names)});
  }
  return files;
}

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

CheckpointFiles resolve_checkpoint(const std::filesystem::path& path) {
  if (std::filesystem::is_directory(path)) {
    if (const auto single = path / "model.safetensors"; std::filesystem::exists(single)) {
      return {{}, {{single, std::nullopt}}};
    }
    if (const auto index = path / "model.safetensors.index.json"; std::filesystem::exists(index)) {
      return read_index(index);
    }
    throw InvalidArgument(fmt::format(
        "{} holds neither model.safetensors nor model.safetensors.index.json: pass the checkpoint file itself",
        path.string()));
  }
  if (ends_with(path.filename().string(), ".json")) return read_index(path);
  return {{}, {{path, std::nullopt}}};
}

}  // namespace nuvec::io::safetensors_detail
