// Uses an installed nuvec: maps a file (argv[1], default this program),
// sets a memory limit just above what is held and shows the allocation past it
// refused with OutOfMemory, statistics unchanged. Exits 1 if any step
// behaves otherwise.
#include <cstdio>
#include <iostream>

#include <nuvec/device.h>
#include <nuvec/error.h>
#include <nuvec/version.h>

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "/proc/self/exe";
  std::cout << "nuvec " << nuvec::version() << ", CUDA devices: " << nuvec::cuda_device_count() << "\n";

  const std::unique_ptr<nuvec::Device> cpu = nuvec::Device::create_cpu();
  const nuvec::MappedFile file = cpu->map_file(path);
  std::cout << "mapped " << file.path().string() << " (" << file.file_size() << " bytes): " << cpu->memory() << "\n";
  if (cpu->memory().mapped != file.mapped_bytes() || file.mapped_bytes() < file.file_size()) return 1;

  const nuvec::MemoryStats before = cpu->memory();
  cpu->set_memory_limit(before.active_with_mapped + (std::size_t{1} << 20));
  try {
    nuvec::Buffer too_big = cpu->new_buffer(std::size_t{2} << 20);
    std::cerr << "pkg_config_consumer: a 2 MiB buffer passed a limit 1 MiB above what is held\n";
    return 1;
  } catch (const nuvec::OutOfMemory& e) {
    std::cout << "refused: " << e.what() << "\n";
  }
  nuvec::MemoryStats after = cpu->memory();
  std::cout << "after the refusal: " << after << "\n";
  after.memory_limit = before.memory_limit;  // the one figure this program changed
  return after == before ? 0 : 1;
}
