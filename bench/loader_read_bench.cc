// The read path of the GGUF and npy loaders: files whose tensors cannot be
// used in place from a mapping (misaligned for their element, or npy data in
// the other byte order), so a load reads them into one buffer. Each load is
// on a fresh CPU device, the page cache warm; the median of the repetitions.
// Uses only the public loaders, so the same source builds against an older
// tree for a before/after comparison (bench/before_after.py).
//
// Usage: nuvec_loader_read_bench [--dir DIR] [--mib N] [--repetitions R]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "nuvec/device.h"
#include "nuvec/io/gguf.h"
#include "nuvec/io/npy.h"
#include "nuvec/memory.h"

namespace {

void put(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }
template <class T>
void put(std::string& out, T v) {
  put(out, &v, sizeof v);
}
void put_string(std::string& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  out += s;
}

// A GGUF v3 file with general.alignment 1: a small I8 tensor, then `count`
// F32 tensors of `elements` each, packed. `misalign` shifts the F32 tensors
// off a multiple of 4 (or, when false, onto one: the mapped path).
void write_gguf(const std::filesystem::path& path, std::size_t count, std::uint64_t elements, bool misalign) {
  std::string head;
  put(head, "GGUF", 4);
  put<std::uint32_t>(head, 3);
  put<std::uint64_t>(head, count + 1);
  put<std::uint64_t>(head, 1);
  put_string(head, "general.alignment");
  put<std::uint32_t>(head, 4);  // UINT32
  put<std::uint32_t>(head, 1);
  // Tensor infos have fixed sizes here, so the data offset is known before
  // the pad tensor's length is chosen.
  std::vector<std::string> names = {"pad"};
  for (std::size_t i = 0; i < count; ++i) names.push_back(fmt::format("blk.{}.weight", i));
  std::uint64_t info_bytes = 0;
  for (const std::string& n : names) info_bytes += 8 + n.size() + 4 + 8 + 4 + 8;
  const std::uint64_t data_offset = head.size() + info_bytes;
  std::uint64_t pad = 1;
  while (((data_offset + pad) % 4 == 0) == misalign) ++pad;
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    put_string(head, names[i]);
    put<std::uint32_t>(head, 1);
    put<std::uint64_t>(head, i == 0 ? pad : elements);
    put<std::uint32_t>(head, i == 0 ? 24 : 0);  // I8, F32
    put<std::uint64_t>(head, offset);
    offset += i == 0 ? pad : elements * 4;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  std::vector<char> data(static_cast<std::size_t>(offset), 1);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// An npy file of `elements` of `descr`, its header padded so that the data
// starts at `offset_mod_8` modulo 8 (0: numpy's own layout).
void write_npy(const std::filesystem::path& path, const std::string& descr, std::uint64_t elements,
               std::size_t item, unsigned offset_mod_8) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}", descr, elements);
  while ((10 + dict.size() + 1) % 8 != offset_mod_8 || (10 + dict.size() + 1) < 64) dict += ' ';
  dict += '\n';
  std::string head = "\x93NUMPY";
  head += '\x01';
  head += '\x00';
  put<std::uint16_t>(head, static_cast<std::uint16_t>(dict.size()));
  head += dict;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  std::vector<char> data(static_cast<std::size_t>(elements * item), 0);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void warm(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chunk(1 << 20);
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
  }
}

template <class Load>
double median_ms(int repetitions, Load load) {
  std::vector<double> ms;
  for (int r = 0; r < repetitions; ++r) {
    auto device = nuvec::Device::create_cpu();
    const auto t0 = std::chrono::steady_clock::now();
    const auto loaded = load(*device);
    const auto t1 = std::chrono::steady_clock::now();
    const nuvec::MemoryStats s = device->memory();
    if ((s.active == 0) == (s.mapped == 0)) std::abort();  // one path or the other, never both
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir = "build/bench-data";
  std::uint64_t mib = 128;
  int repetitions = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir") dir = argv[i + 1];
    else if (flag == "--mib") mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--repetitions") repetitions = std::atoi(argv[i + 1]);
  }
  std::filesystem::create_directories(dir);
  const std::uint64_t elements = mib << 20 >> 2;  // F32
  const std::size_t tensors = 32;
  const auto gguf_read = dir / fmt::format("loader-{}m-misaligned.gguf", mib);
  const auto gguf_mapped = dir / fmt::format("loader-{}m-aligned.gguf", mib);
  const auto npy_swapped = dir / fmt::format("loader-{}m-big-endian.npy", mib);
  const auto npy_read = dir / fmt::format("loader-{}m-misaligned.npy", mib);
  write_gguf(gguf_read, tensors, elements / tensors, true);
  write_gguf(gguf_mapped, tensors, elements / tensors, false);
  write_npy(npy_swapped, ">f4", elements, 4, 0);
  write_npy(npy_read, "<f8", elements / 2, 8, 4);
  for (const auto& p : {gguf_read, gguf_mapped, npy_swapped, npy_read}) warm(p);

  fmt::print("| what | median ms |\n|---|---:|\n");
  const auto row = [&](const std::string& what, double ms) { fmt::print("| {} | {:.2f} |\n", what, ms); };
  row(fmt::format("load_gguf, {} MiB misaligned (read into one buffer)", mib),
      median_ms(repetitions, [&](nuvec::Device& d) { return nuvec::io::load_gguf(d, gguf_read); }));
  row(fmt::format("load_gguf, {} MiB aligned (mapped)", mib),
      median_ms(repetitions, [&](nuvec::Device& d) { return nuvec::io::load_gguf(d, gguf_mapped); }));
  row(fmt::format("load_npy, {} MiB big-endian (read and swapped)", mib),
      median_ms(repetitions, [&](nuvec::Device& d) { return nuvec::io::load_npy(d, npy_swapped); }));
  row(fmt::format("load_npy, {} MiB misaligned (read into one buffer)", mib),
      median_ms(repetitions, [&](nuvec::Device& d) { return nuvec::io::load_npy(d, npy_read); }));
  fmt::print("repetitions: {}\n", repetitions);
  return 0;
}
