// npy_dump: what nuvec reads from an .npy file, as JSON, for
// tools/interop/npy_interop.py to compare with numpy.
//
//   npy_dump PATH [--transposed]   load PATH (--transposed: a Fortran-order
//                                  array as its C-order transpose)
//
// Printed: {name, dtype, shape, nbytes, sha256, load_path, mapped_bytes,
// active_bytes, header: {version, big_endian, fortran_order, data_offset}}.
// load_path is "mapped" if loading raised `mapped` on a fresh CPU device,
// else "read"; mapped_bytes and active_bytes are the changes in `mapped` and
// `active` while the view is alive. A refusal prints {error, offset,
// message} and exits 1.
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/io/npy.h"
#include "sha256.h"

namespace {

using nlohmann::ordered_json;

std::vector<std::byte> read_prefix(const std::filesystem::path& path, std::uint64_t size) {
  std::vector<std::byte> out(static_cast<std::size_t>(size));
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

// The header as nuvec parses it (after load_npy accepted the file).
ordered_json header_json(const std::filesystem::path& path) {
  const std::uint64_t file_size = std::filesystem::file_size(path);
  const std::uint64_t header_size = nuvec::io::npy_header_size(read_prefix(path, 12), file_size, path);
  const nuvec::io::NpyHeader h = nuvec::io::parse_npy_header(read_prefix(path, header_size), file_size, path);
  return ordered_json{{"version", std::to_string(h.major_version) + "." + std::to_string(h.minor_version)},
                      {"big_endian", h.big_endian},
                      {"fortran_order", h.fortran_order},
                      {"data_offset", h.data_offset}};
}

int dump(const std::filesystem::path& path, nuvec::io::FortranOrder fortran_order) {
  const auto device = nuvec::Device::create_cpu();
  const nuvec::MemoryStats before = device->memory();
  ordered_json out;
  {
    const nuvec::io::TensorView t = nuvec::io::load_npy(*device, path, fortran_order);
    const nuvec::MemoryStats after = device->memory();
    const std::size_t mapped = after.mapped - before.mapped;
    const std::size_t active = after.active - before.active;
    out["name"] = t.name;
    out["dtype"] = std::string(nuvec::io::dtype_name(t.dtype));
    out["shape"] = t.shape;
    out["nbytes"] = t.bytes.size();
    out["sha256"] = nuvec_test::sha256_hex(t.bytes);
    out["load_path"] = mapped > 0 ? "mapped" : "read";
    out["mapped_bytes"] = mapped;
    out["active_bytes"] = active;
  }
  out["header"] = header_json(path);
  std::cout << out.dump(2) << "\n";
  return 0;
}

int usage() {
  std::fprintf(stderr, "usage: npy_dump PATH [--transposed]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args.size() > 2 || args[0].starts_with("--")) return usage();
  if (args.size() == 2 && args[1] != "--transposed") return usage();
  const auto order = args.size() == 2 ? nuvec::io::FortranOrder::load_transposed : nuvec::io::FortranOrder::refuse;
  try {
    return dump(args[0], order);
  } catch (const nuvec::FormatError& e) {
    std::cout << ordered_json{{"error", "FormatError"}, {"offset", e.offset()}, {"message", e.what()}}.dump() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cout << ordered_json{{"error", "other"}, {"message", e.what()}}.dump() << "\n";
    return 1;
  }
}
