// Uses an installed nuvec: allocates a buffer, saves a one-tensor safetensors
// checkpoint and loads it back as a zero-copy view of a mapping, printing the
// CPU device's statistics after each step. Exits 1 if the view does not hold
// what was saved or the checkpoint was not mapped.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <span>
#include <vector>

#include <nuvec/device.h>
#include <nuvec/error.h>
#include <nuvec/io/safetensors.h>
#include <nuvec/version.h>

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const fs::path path = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "nuvec-cmake-consumer.safetensors";
  std::cout << "nuvec " << nuvec::version() << " (headers " << NUVEC_VERSION_STRING << ")\n";

  nuvec::Device& cpu = nuvec::Device::cpu();
  {
    nuvec::Buffer buffer = cpu.new_buffer(std::size_t{1} << 20);
    std::cout << "with a 1 MiB buffer:    " << cpu.memory() << "\n";
  }
  std::cout << "buffer freed (cached):  " << cpu.memory() << "\n";

  std::vector<float> values(32 * 32);
  std::iota(values.begin(), values.end(), 0.0f);
  nuvec::io::TensorView weights{"weights", nuvec::io::DType::F32, {32, 32}, std::as_bytes(std::span(values)), nullptr};
  nuvec::io::save_safetensors(path, std::span(&weights, 1));

  try {
    const nuvec::io::SafetensorsFile file = nuvec::io::load_safetensors(cpu, path);
    const nuvec::io::TensorView& loaded = file.at("weights");
    std::cout << "checkpoint loaded:      " << cpu.memory() << "\n";
    std::cout << path.string() << ": " << nuvec::io::load_path_name(file.sources().front().load_path) << ", tensor "
              << loaded.name << " " << nuvec::io::dtype_name(loaded.dtype) << "[" << loaded.shape[0] << ", "
              << loaded.shape[1] << "]\n";
    const auto saved = std::as_bytes(std::span(values));
    const bool same = loaded.bytes.size() == saved.size() &&
                      std::equal(loaded.bytes.begin(), loaded.bytes.end(), saved.begin());
    const bool mapped = file.sources().front().load_path == nuvec::io::LoadPath::mapped && cpu.memory().mapped > 0;
    if (!same || !mapped) {
      std::cerr << "cmake_consumer: the loaded tensor " << (same ? "was not mapped" : "differs from the saved one") << "\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "cmake_consumer: " << e.what() << "\n";
    return 1;
  }
  fs::remove(path);
  std::cout << "checkpoint dropped:     " << cpu.memory() << "\n";
  return 0;
}
