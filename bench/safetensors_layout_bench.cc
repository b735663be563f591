// Does the layout nuvec writes change how fast a checkpoint loads? The same
// Llama-shaped bf16 tensors in three layouts, side by side in one run:
//   reference  what save_safetensors writes (and Python's save_file): the
//              header padded to 8 bytes, tensors back to back, each at a
//              multiple of its element size (here 8 mod 64 in the file);
//   pad-256    what nuvec wrote before: data start and every tensor at a
//              256-byte boundary, gaps declared as __nuvec_padding_ tensors;
//   pad-4096   the same at page boundaries (what direct I/O would want).
// For each: load_safetensors (map + parse); load and read every tensor's
// bytes once (a 64-bit sum: what the first use of the weights does); load
// and copy every tensor, 4 MiB at a time, into one page-aligned staging slot
// (what an upload's staging copy does). Page cache warm, each file brought into it the same
// way; a fresh device each time, so every run faults the mapping in anew. Repetitions rotate which layout goes
// first; medians, and ratios to the reference layout.
//
// Usage: nuvec_safetensors_layout_bench [--dir DIR] [--layers N] [--repetitions R]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "llama_checkpoint.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/nuvec.h"
#include "support/median.h"

namespace {

using nuvec_bench::median;

using Clock = std::chrono::steady_clock;

// nuvec's old layout, padded to `alignment`: tensors in the given order,
// each gap declared as a U8 tensor of zeros (the reference reader refuses
// undeclared gaps), the header padded with spaces.
void write_padded(const std::filesystem::path& path, const nuvec::io::SafetensorsFile& source, std::uint64_t alignment) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::uint64_t at = 0;
  const auto& tensors = source.tensors();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    header[t.name] = {{"dtype", "BF16"}, {"shape", t.shape}, {"data_offsets", {at, at + t.bytes.size()}}};
    at += t.bytes.size();
    const std::uint64_t next = (at + alignment - 1) / alignment * alignment;
    if (i + 1 < tensors.size() && next != at) {
      header[fmt::format("__nuvec_padding_{}__", at)] = {{"dtype", "U8"}, {"shape", {next - at}}, {"data_offsets", {at, next}}};
      at = next;
    }
  }
  std::string text = header.dump();
  text.append((8 + text.size() + alignment - 1) / alignment * alignment - 8 - text.size(), ' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::uint64_t n = text.size();
  out.write(reinterpret_cast<const char*>(&n), 8);  // little-endian on x86-64
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::uint64_t written = 0;
  static const std::vector<char> zeros(1 << 16);
  for (const auto& t : tensors) {
    const std::uint64_t begin = header[t.name]["data_offsets"][0];
    out.write(zeros.data(), static_cast<std::streamsize>(begin - written));
    out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    written = begin + t.bytes.size();
  }
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
}

std::uint64_t sum_words(std::span<const std::byte> bytes) {
  std::uint64_t s = 0;
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    s += w;
  }
  for (; i < bytes.size(); ++i) s += std::to_integer<std::uint64_t>(bytes[i]);
  return s;
}

template <class T>
struct PageAligned {
  using value_type = T;
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{4096})); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t{4096}); }
  friend bool operator==(PageAligned, PageAligned) { return true; }
};

struct Layout {
  std::string name;
  std::filesystem::path path;
  std::vector<double> load_ms, read_ms, copy_ms;
};

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir = "build/bench-data";
  int layers = 2;
  int repetitions = 9;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir") dir = argv[i + 1];
    else if (flag == "--layers") layers = std::atoi(argv[i + 1]);
    else if (flag == "--repetitions") repetitions = std::atoi(argv[i + 1]);
  }
  std::filesystem::create_directories(dir);
  const auto reference = dir / fmt::format("llama-{}l-reference.safetensors", layers);
  const auto unaligned = dir / fmt::format("llama-{}l-unaligned.safetensors", layers);
  std::filesystem::remove(reference);  // written by this build's save_safetensors, not an older one
  nuvec::bench::write_llama_checkpoints(reference, unaligned, layers);
  std::vector<Layout> layouts = {{"reference (save_safetensors)", reference, {}, {}, {}},
                                 {"pad-256 (nuvec's old layout)", dir / fmt::format("llama-{}l-pad256.safetensors", layers), {}, {}, {}},
                                 {"pad-4096", dir / fmt::format("llama-{}l-pad4096.safetensors", layers), {}, {}, {}}};
  {
    auto device = nuvec::Device::create_cpu();
    const auto source = nuvec::io::load_safetensors(*device, reference);
    write_padded(layouts[1].path, source, 256);
    write_padded(layouts[2].path, source, 4096);
  }
  // The same page-cache state for every file: written (one by one writer,
  // two by another, which leaves their pages cached in different folio
  // sizes: `cat` of a just-written file ran 2.5 times slower than of
  // another), then flushed, dropped from the cache and read back once, so
  // that each is cached as readahead brings it in.
  for (const Layout& l : layouts) {
    const int fd = ::open(l.path.c_str(), O_RDONLY);
    if (fd < 0 || ::fsync(fd) != 0 || ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) std::abort();
    static std::vector<char> buffer(1 << 20);
    while (::read(fd, buffer.data(), buffer.size()) > 0) {
    }
    ::close(fd);
  }
  std::uint64_t expected = 0;
  for (const Layout& l : layouts) {
    auto device = nuvec::Device::create_cpu();
    const auto f = nuvec::io::load_safetensors(*device, l.path);
    if (f.sources().front().load_path != nuvec::io::LoadPath::mapped) std::abort();
    std::uint64_t s = 0;
    for (const auto& t : f.tensors()) s += sum_words(t.bytes);
    if (expected != 0 && s != expected) std::abort();  // same tensors, same bytes
    expected = s;
    const auto header = nuvec::io::read_safetensors_header(l.path);
    fmt::print("{}: {} tensors, {}, data start {}, first tensor at file offset {} ({} mod 64)\n", l.name, f.size(),
               nuvec::format_bytes(std::filesystem::file_size(l.path)), header.data_start,
               header.data_start + header.tensors.front().begin, (header.data_start + header.tensors.front().begin) % 64);
  }
  // One staging slot, page-aligned, as an upload's: each tensor goes through it in pieces.
  constexpr std::size_t kSlot = std::size_t{4} << 20;
  std::vector<std::byte, PageAligned<std::byte>> staging(kSlot);
  volatile std::uint64_t sink = 0;

  for (int r = 0; r < repetitions; ++r) {
    for (std::size_t k = 0; k < layouts.size(); ++k) {
      Layout& l = layouts[(k + r) % layouts.size()];
      {
        auto device = nuvec::Device::create_cpu();
        const auto t0 = Clock::now();
        const auto f = nuvec::io::load_safetensors(*device, l.path);
        l.load_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
      {
        auto device = nuvec::Device::create_cpu();
        const auto t0 = Clock::now();
        const auto f = nuvec::io::load_safetensors(*device, l.path);
        std::uint64_t s = 0;
        for (const auto& t : f.tensors()) s += sum_words(t.bytes);
        l.read_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        sink = sink + s;
      }
      {
        auto device = nuvec::Device::create_cpu();
        const auto t0 = Clock::now();
        const auto f = nuvec::io::load_safetensors(*device, l.path);
        for (const auto& t : f.tensors()) {
          for (std::size_t at = 0; at < t.bytes.size(); at += kSlot) {
            std::memcpy(staging.data(), t.bytes.data() + at, std::min(kSlot, t.bytes.size() - at));
          }
        }
        sink = sink + std::to_integer<std::uint64_t>(staging[0]);
        l.copy_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
    }
  }

  const Layout& base = layouts[0];
  fmt::print("\n| layout | load (map + parse) ms | load + read every byte ms | load + copy through a 4 MiB slot ms | read / reference | copy / reference |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|\n");
  for (const Layout& l : layouts) {
    fmt::print("| {} | {:.2f} | {:.1f} | {:.1f} | {:.3f} | {:.3f} |\n", l.name, median(l.load_ms), median(l.read_ms),
               median(l.copy_ms), median(l.read_ms) / median(base.read_ms), median(l.copy_ms) / median(base.copy_ms));
  }
  fmt::print("\nrepetitions: {}\n", repetitions);
  for (const Layout& l : layouts) {
    fmt::print("samples, ms, {}: read {:.1f}; copy {:.1f}\n", l.name, fmt::join(l.read_ms, " "), fmt::join(l.copy_ms, " "));
  }
  return static_cast<int>(sink & 0);
}
