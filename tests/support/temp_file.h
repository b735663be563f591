// Temporary files and directories for the tests, removed when the test is
// done: the one place tests make them (tests/support).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace nuvec_test {

// `n` pseudo-random bytes, the same for the same seed.
inline std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> bytes(n);
  std::mt19937_64 rng(seed);
  std::size_t i = 0;
  while (i < n) {
    std::uint64_t word = rng();
    for (int k = 0; k < 8 && i < n; ++k, word >>= 8) bytes[i++] = std::byte(word & 0xff);
  }
  return bytes;
}

// A file under temp_directory_path() with a name no other test (or process)
// uses, holding `contents`; deleted by the destructor.
class TempFile {
 public:
  explicit TempFile(std::vector<std::byte> contents) : contents_(std::move(contents)) {
    static std::atomic<unsigned> counter{0};
    std::random_device entropy;
    path_ = std::filesystem::temp_directory_path() /
            ("nuvec-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
             std::to_string(entropy()) + ".bin");
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(contents_.data()),
              static_cast<std::streamsize>(contents_.size()));
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path_.string());
  }
  TempFile(std::size_t size, std::uint64_t seed) : TempFile(random_bytes(size, seed)) {}
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::vector<std::byte>& contents() const { return contents_; }
  std::size_t size() const { return contents_.size(); }

 private:
  std::vector<std::byte> contents_;
  std::filesystem::path path_;
};

// A fresh directory under temp_directory_path() (mkdtemp: no other test or
// process has it), removed with everything in it by the destructor.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "nuvec-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp under " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace nuvec_test
