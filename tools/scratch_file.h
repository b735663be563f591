// Where the demo writes its file: a fresh directory under the system's temp
// directory (removed, with its contents, when done), or a directory the user
// named (only the files written through Scratch are removed).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace nuvec::tool {

class Scratch {
 public:
  // Raises IoError if the directory cannot be created or is not one.
  explicit Scratch(const std::optional<std::filesystem::path>& dir);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  // Writes `bytes` bytes of a repeating pattern to dir()/name (not sparse, so
  // that the mapping is backed by real pages); raises IoError.
  std::filesystem::path write_file(std::string_view name, std::size_t bytes);

 private:
  std::filesystem::path dir_;
  bool owns_dir_ = false;
  std::vector<std::filesystem::path> files_;
};

}  // namespace nuvec::tool
