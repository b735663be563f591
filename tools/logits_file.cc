#include "logits_file.h"

#include <cerrno>
#include <string>

#include <fmt/format.h>

#include "nuvec/error.h"

namespace nuvec::tool {

LogitsFile::LogitsFile(const std::filesystem::path& path, std::size_t rows, std::size_t vocab)
    : path_(path), rows_(rows), vocab_(vocab) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) throw IoError(fmt::format("cannot create {}", path.string()), path, errno);
  // Magic, version 1.0, header length, then the dict padded with spaces so
  // that the data starts at a multiple of 64 bytes, ending in a newline.
  std::string dict = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, vocab);
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string header = "\x93NUMPY";
  header += '\x01';
  header += '\x00';
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>(dict.size() >> 8);
  header += dict;
  if (std::fwrite(header.data(), 1, header.size(), file_) != header.size()) {
    throw IoError(fmt::format("cannot write {}", path.string()), path, errno);
  }
}

LogitsFile::~LogitsFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void LogitsFile::append(std::span<const float> row) {
  if (written_ == rows_ || row.size() != vocab_) {
    throw InvalidArgument(fmt::format("logits row {} of {} values for a file of {} rows of {}", written_, row.size(),
                                      rows_, vocab_));
  }
  if (std::fwrite(row.data(), sizeof(float), row.size(), file_) != row.size()) {
    throw IoError(fmt::format("cannot write {}", path_.string()), path_, errno);
  }
  ++written_;
}

void LogitsFile::close() {
  if (written_ != rows_) {
    throw InvalidArgument(fmt::format("{}: {} rows of logits written, {} declared", path_.string(), written_, rows_));
  }
  const int status = std::fclose(file_);
  file_ = nullptr;
  if (status != 0) throw IoError(fmt::format("cannot write {}", path_.string()), path_, errno);
}

}  // namespace nuvec::tool
