// Logits written as they are made, to an .npy file of float32 [rows, vocab]
// (NumPy's format 1.0), for comparing nuvec with other implementations.
#pragma once

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <span>

namespace nuvec::tool {

class LogitsFile {
 public:
  // Writes the header for `rows` rows of `vocab`; IoError if it cannot.
  LogitsFile(const std::filesystem::path& path, std::size_t rows, std::size_t vocab);
  ~LogitsFile();
  LogitsFile(const LogitsFile&) = delete;
  LogitsFile& operator=(const LogitsFile&) = delete;

  // Appends one row; InvalidArgument past `rows` or for a row of another length.
  void append(std::span<const float> row);
  // Checks that every row was written and closes; IoError on a write error.
  void close();

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::size_t rows_, vocab_, written_ = 0;
};

}  // namespace nuvec::tool
