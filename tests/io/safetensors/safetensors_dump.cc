// safetensors_dump: what nuvec reads from a safetensors checkpoint, as JSON,
// for tools/interop/safetensors_interop.py to compare with Python's
// safetensors. Also writes files for Python to read.
//
//   safetensors_dump PATH [--only NAME]...   load PATH, print what was loaded
//   safetensors_dump --write-sample OUT      save a file of every dtype but C64
//   safetensors_dump --write-c64 OUT         save a file of one C64 tensor
//   safetensors_dump --align IN OUT          align IN into OUT, print OUT
//   safetensors_dump --resave IN OUT         load IN, save its tensors (given in
//                                            reverse order) and metadata as OUT
//
// Printed: {"sources": [{path, load_path, mapped_bytes, buffer_bytes}],
// "metadata": {...}, "tensors": [{name, dtype, shape, nbytes, sha256}],
// "footprint": {...}, "measured": {...}}; the write modes print the tensors
// they meant to write in the same form (sha256 of the bytes given to save).
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/io/footprint.h"
#include "nuvec/io/safetensors.h"
#include "sha256.h"

namespace {

using nuvec::io::DType;
using nlohmann::ordered_json;

ordered_json describe(const nuvec::io::TensorView& t) {
  ordered_json j;
  j["name"] = t.name;
  j["dtype"] = std::string(nuvec::io::dtype_name(t.dtype));
  j["shape"] = t.shape;
  j["nbytes"] = t.bytes.size();
  j["sha256"] = nuvec_test::sha256_hex(t.bytes);
  return j;
}

ordered_json footprint_json(const nuvec::io::Footprint& f) {
  return ordered_json{{"mapped", f.mapped}, {"active", f.active}, {"peak_with_mapped", f.peak_with_mapped()}};
}

int dump(const std::filesystem::path& path, const std::set<std::string>& only) {
  const nuvec::io::TensorFilter filter = only.empty() ? nuvec::io::TensorFilter() : nuvec::io::TensorFilter(only);
  const nuvec::io::Footprint predicted = nuvec::io::footprint(path, filter);
  const auto device = nuvec::Device::create_cpu();
  device->reset_peak();
  const nuvec::MemoryStats before = device->memory();
  ordered_json out;
  {
    const auto loaded = nuvec::io::load_safetensors(*device, path, {filter});
    const nuvec::MemoryStats after = device->memory();
    out["sources"] = ordered_json::array();
    for (const auto& s : loaded.sources()) {
      out["sources"].push_back({{"path", s.path.string()},
                                {"load_path", std::string(nuvec::io::load_path_name(s.load_path))},
                                {"mapped_bytes", s.mapped_bytes},
                                {"buffer_bytes", s.buffer_bytes}});
    }
    out["metadata"] = loaded.metadata();
    out["tensors"] = ordered_json::array();
    for (const auto& t : loaded.tensors()) out["tensors"].push_back(describe(t));
    out["footprint"] = footprint_json(predicted);
    out["measured"] = ordered_json{{"mapped", after.mapped - before.mapped},
                                   {"active", after.active - before.active},
                                   {"peak_with_mapped", after.peak_with_mapped - before.peak_with_mapped}};
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}

// Deterministic bytes; BOOL gets 0 and 1 only (other values are not bools).
std::vector<std::byte> sample_bytes(DType dtype, std::uint64_t elements, std::uint64_t seed) {
  std::vector<std::byte> bytes(elements * nuvec::io::dtype_size(dtype));
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 12345;
  for (std::byte& b : bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = std::byte(dtype == DType::BOOL ? (x & 1) : (x & 0xff));
  }
  return bytes;
}

struct Owned {
  std::string name;
  DType dtype;
  std::vector<std::uint64_t> shape;
  std::vector<std::byte> bytes;
};

int write_sample(const std::filesystem::path& out, const std::vector<DType>& dtypes) {
  std::vector<Owned> owned;
  std::uint64_t seed = 1;
  for (DType d : dtypes) {
    const std::string name(nuvec::io::dtype_name(d));
    owned.push_back({"sample." + name, d, {3, 5}, sample_bytes(d, 15, seed++)});
    owned.push_back({"odd." + name, d, {7}, sample_bytes(d, 7, seed++)});  // sizes not a multiple of 256
  }
  if (dtypes.size() > 1) {
    owned.push_back({"scalar", DType::F32, {}, sample_bytes(DType::F32, 1, seed++)});
    owned.push_back({"empty", DType::F16, {0, 3}, {}});
  }
  std::vector<nuvec::io::TensorView> views;
  for (const Owned& o : owned) views.push_back({o.name, o.dtype, o.shape, o.bytes, nullptr});
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"writer", "nuvec"}};
  nuvec::io::save_safetensors(out, views, metadata);
  ordered_json j;
  j["metadata"] = metadata;
  j["tensors"] = ordered_json::array();
  for (const auto& v : views) j["tensors"].push_back(describe(v));
  std::cout << j.dump(2) << "\n";
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: safetensors_dump PATH [--only NAME]... | --write-sample OUT | --write-c64 OUT | "
               "--align IN OUT | --resave IN OUT\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "--write-sample") {
      return write_sample(args[1], {DType::BOOL, DType::U8, DType::I8, DType::U16, DType::I16, DType::U32,
                                    DType::I32, DType::U64, DType::I64, DType::F16, DType::BF16, DType::F32,
                                    DType::F64, DType::F8_E4M3, DType::F8_E5M2});
    }
    if (args.size() == 2 && args[0] == "--write-c64") return write_sample(args[1], {DType::C64});
    if (args.size() == 3 && args[0] == "--align") {
      nuvec::io::align_safetensors(args[1], args[2]);
      return dump(args[2], {});
    }
    if (args.size() == 3 && args[0] == "--resave") {
      const auto device = nuvec::Device::create_cpu();
      const auto loaded = nuvec::io::load_safetensors(*device, args[1]);
      const std::vector<nuvec::io::TensorView> reversed(loaded.tensors().rbegin(), loaded.tensors().rend());
      nuvec::io::save_safetensors(args[2], reversed, loaded.metadata());
      return dump(args[2], {});
    }
    if (args.empty() || args[0].starts_with("--")) return usage();
    std::set<std::string> only;
    for (std::size_t i = 1; i < args.size(); i += 2) {
      if (args[i] != "--only" || i + 1 >= args.size()) return usage();
      only.insert(args[i + 1]);
    }
    return dump(args[0], only);
  } catch (const nuvec::FormatError& e) {
    std::cout << ordered_json{{"error", "FormatError"}, {"offset", e.offset()}, {"message", e.what()}}.dump() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cout << ordered_json{{"error", "other"}, {"message", e.what()}}.dump() << "\n";
    return 1;
  }
}
